package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/coorflow/coorflow/eval"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/workflows"
)

// gateError is an eval or a comparison that crossed a gate: exit code 1.
type gateError struct{ gates []string }

func (e *gateError) Error() string { return "gate crossed: " + strings.Join(e.gates, "; ") }

// evalFlags are the flags of coorflow eval.
type evalFlags struct {
	*dbFlags
	load                      *loadFlags
	models, judge             multiFlag
	demo, json, showModels    bool
	shared, verbose           bool
	concurrency, repeats      int
	caseTokens, totalTokens   int
	caseUSD, totalUSD         float64
	timeout                   time.Duration
	id, resume, label, replay string
	failUnder, maxCost        float64
}

func (a *app) eval(ctx context.Context, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "compare":
			return a.evalCompare(ctx, args[1:])
		case "list":
			return a.evalList(ctx, args[1:])
		case "show":
			return a.evalShow(ctx, args[1:])
		}
	}
	fs := newFlags("eval")
	f := &evalFlags{dbFlags: a.addDBFlags(fs), load: addLoadFlags(fs)}
	fs.Var(&f.models, "model", "TIER=provider:model (repeatable)")
	fs.Var(&f.judge, "judge", "[TIER=]provider:model: the model of the judges (repeatable; default: the workflow's models)")
	fs.BoolVar(&f.demo, "demo", false, "use the file's demo model (its script, or the reactive demo)")
	fs.BoolVar(&f.showModels, "show-models", false, "print each tier's provider, model and endpoint first")
	fs.BoolVar(&f.json, "json", false, "print the result as JSON")
	fs.BoolVar(&f.verbose, "v", false, "print a line for each run of a case as it ends")
	fs.BoolVar(&f.shared, "shared-agents", false, "let the cases reuse the owner's agents and meta-prompts (default: each case starts afresh)")
	fs.IntVar(&f.concurrency, "concurrency", 4, "the most cases run at once")
	fs.IntVar(&f.repeats, "repeats", 1, "the runs of each case")
	fs.IntVar(&f.caseTokens, "budget-tokens", 0, "the most tokens one run of a case may spend (0: the workflow's settings.budget)")
	fs.Float64Var(&f.caseUSD, "budget-usd", 0, "the most US dollars one run of a case may spend (0: the workflow's settings.budget)")
	fs.IntVar(&f.totalTokens, "total-tokens", 0, "the most tokens the whole eval may spend, judges included (0: no limit)")
	fs.Float64Var(&f.totalUSD, "total-usd", 0, "the most US dollars the whole eval may spend, judges included (0: no limit)")
	fs.DurationVar(&f.timeout, "timeout", 0, "the longest one run of a case may take (0: no limit)")
	fs.StringVar(&f.id, "id", "", "the eval run's id (default: a new one); an id that exists resumes that eval run")
	fs.StringVar(&f.resume, "resume", "", "EVALRUN: resume an eval run that was interrupted: its finished cases are not run again")
	fs.StringVar(&f.label, "label", "", "a name for the version evaluated, shown by compare")
	fs.StringVar(&f.replay, "replay", "", "EVALRUN: answer the model calls from that eval run's recordings; a case that diverges runs on the models")
	fs.Float64Var(&f.failUnder, "fail-under", 0, "exit 1 when the pass rate is under this (0 to 1)")
	fs.Float64Var(&f.maxCost, "max-cost", 0, "exit 1 when the eval cost more US dollars than this")
	pos, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("eval: want a workflow and a dataset: coorflow eval WORKFLOW DATASET (or eval compare A B, eval list, eval show ID)")
	}
	switch {
	case f.concurrency < 1 || f.repeats < 1:
		return usagef("eval: --concurrency and --repeats must be 1 or more")
	case f.caseTokens < 0 || f.caseUSD < 0 || f.totalTokens < 0 || f.totalUSD < 0 || f.timeout < 0:
		return usagef("eval: budgets and --timeout cannot be negative")
	case f.id != "" && f.resume != "":
		return usagef("eval: give --id (a new or existing eval run) or --resume (an existing one), not both")
	case f.failUnder < 0 || f.failUnder > 1:
		return usagef("eval: --fail-under is a pass rate from 0 to 1")
	}
	overrides, err := parseModels(f.models)
	if err != nil {
		return err
	}
	wf, err := runnable(pos[0], f.load.options()...)
	if err != nil {
		return err
	}
	ds, err := eval.Load(pos[1], wf.file)
	if err != nil {
		return err
	}
	return a.runEval(ctx, f, fs.Visit, wf, ds, overrides)
}

func (a *app) runEval(ctx context.Context, f *evalFlags, visit func(func(*flag.Flag)), wf *workflowRef, ds *eval.Dataset, overrides map[llm.Tier]string) error {
	models, err := wf.file.Resolve(ctx, workflows.ModelOptions{Getenv: a.getenv, Overrides: overrides, Demo: f.demo})
	if err != nil {
		return err
	}
	a.showModels("", models, f.showModels)
	d, err := a.openDB(ctx, f.db, false)
	if err != nil {
		return err
	}
	defer d.Close()
	rec := a.newRecorder(ctx, d)
	defer a.closeRecorder(ctx, rec)
	env := runEnvironment()
	wenv := env.apply(workflows.Env{Store: d.store, Owner: f.owner, Getenv: a.getenv, Graph: []graph.Option{graph.WithSaver(d.saver)}, MCP: a.mcpHub()}, wf)
	if models.Models != nil {
		wenv.Models = models.Models
	}
	r, err := wf.file.Compile(ctx, wenv)
	if err != nil {
		return err
	}
	judge := models.Models
	if len(f.judge) > 0 {
		if judge, err = a.judgeModels(ctx, f.judge); err != nil {
			return err
		}
		defer judge.Close()
	}
	store := eval.NewDocStore(d.store, f.owner)
	id := f.id
	if id == "" && f.resume == "" {
		id = eval.NewID()
	}
	if f.resume != "" {
		id = f.resume
		if _, err := store.LoadRun(ctx, id); err != nil {
			if errors.Is(err, eval.ErrNotFound) {
				return usagef("eval: --resume %s: no eval run %s in %s (coorflow eval list shows them)", id, id, d.where)
			}
			return err
		}
	}
	caseBudget := wf.file.Budget()
	caseBudget.Ask = false
	setFlags := map[string]bool{}
	visit(func(fl *flag.Flag) { setFlags[fl.Name] = true })
	if setFlags["budget-tokens"] {
		caseBudget.Tokens = f.caseTokens
	}
	if setFlags["budget-usd"] {
		caseBudget.USD = f.caseUSD
	}
	cfg := eval.Config{ID: id, Label: f.label, File: wf.file, Runnable: r, Workflow: wf.ref, Owner: f.owner, Dataset: ds,
		Concurrency: f.concurrency, Repeats: f.repeats, CaseBudget: caseBudget, TotalBudget: llm.Budget{Tokens: f.totalTokens, USD: f.totalUSD},
		Timeout: f.timeout, Judge: judge, Isolate: !f.shared, Recorder: rec, Store: store,
		Runtime: map[string]string{runs.RuntimeEnv: env.of(wf).Encode()}}
	if f.replay != "" {
		src, err := a.newEvalReplay(ctx, d, store, f.replay, wf, overrides, f.demo)
		if err != nil {
			return err
		}
		cfg.Replay = src
	}
	if models.Demo && !f.demo {
		a.notice("no model provider is configured (%s): running offline on %s", models.Reason, demoName(models))
	}
	bar := a.progressBar(f.json)
	cfg.Progress = func(p eval.Progress) {
		if f.verbose {
			t := p.Trial
			bar.line(a, fmt.Sprintf("eval %s: %s #%d %s in %s (%d/%d)", cfg.ID, t.Case, t.Repeat+1, t.Status, time.Duration(t.LatencyMS)*time.Millisecond, p.Done, p.Total))
		}
		bar.update(p)
	}
	res, err := eval.Run(ctx, cfg)
	bar.end()
	if err != nil {
		if ctx.Err() != nil && cfg.ID != "" {
			a.notice("interrupted: the finished cases are kept; resume with: coorflow eval %s %s --resume %s", shellQuote(wf.arg), shellQuote(ds.Path), cfg.ID)
		}
		return err
	}
	if f.json {
		if err := writeJSON(a, res); err != nil {
			return err
		}
	} else {
		fmt.Fprint(a.stdout, res.Table())
		fmt.Fprintf(a.stdout, "eval run %s kept in %s: coorflow eval show %s; compare: coorflow eval compare OTHER %s\n", res.ID, d.where, res.ID, res.ID)
	}
	var gates []string
	if f.failUnder > 0 && res.Total.PassRate < f.failUnder {
		gates = append(gates, fmt.Sprintf("the pass rate %.1f%% is under %.1f%% (--fail-under)", 100*res.Total.PassRate, 100*f.failUnder))
	}
	if f.maxCost > 0 && res.Total.CostUSD() > f.maxCost {
		gates = append(gates, fmt.Sprintf("the cost %s is over %s (--max-cost)", llm.USD(res.Total.CostUSD()), llm.USD(f.maxCost)))
	}
	if len(gates) > 0 {
		return &gateError{gates: gates}
	}
	return nil
}

// judgeModels are the models --judge names: [TIER=]provider:model, a
// spec without a tier serving every tier.
func (a *app) judgeModels(ctx context.Context, specs []string) (*llm.Models, error) {
	var overrides []llm.Override
	for _, s := range specs {
		tier, model, ok := strings.Cut(s, "=")
		if !ok {
			tier, model = string(llm.TierBasic), s
		}
		t, err := llm.ParseTier(tier)
		if err != nil {
			return nil, usagef("--judge %s: %v", s, err)
		}
		overrides = append(overrides, llm.Override{Tier: t, Model: model})
	}
	cfg := llm.Config{Models: map[llm.Tier]llm.ModelConfig{}}
	if err := cfg.ApplyEnv(a.getenv, overrides...); err != nil {
		return nil, err
	}
	return llm.New(ctx, cfg)
}

// evalProgress draws a progress bar on a terminal's stderr.
type evalProgress struct {
	w     io.Writer
	mu    sync.Mutex
	drawn bool
}

// progressBar returns the eval's progress bar: drawn only when stderr is
// a terminal and the output is not JSON.
func (a *app) progressBar(asJSON bool) *evalProgress {
	f, ok := a.stderr.(*os.File)
	if asJSON || !ok || !isTerminal(f) {
		return &evalProgress{}
	}
	return &evalProgress{w: a.stderr}
}

func (p *evalProgress) update(pr eval.Progress) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	const width = 30
	n := width * pr.Done / max(pr.Total, 1)
	fmt.Fprintf(p.w, "\r[%s%s] %d/%d, %d passed, %d running, %d tokens ", strings.Repeat("#", n), strings.Repeat(".", width-n),
		pr.Done, pr.Total, pr.Passed, pr.Running, pr.Spend.Tokens())
	p.drawn = true
}

// line prints a notice above the bar.
func (p *evalProgress) line(a *app, text string) {
	if p.w != nil {
		fmt.Fprint(p.w, "\r\033[K")
	}
	a.notice("%s", text)
}

func (p *evalProgress) end() {
	if p.w != nil && p.drawn {
		fmt.Fprintln(p.w)
	}
}

// evalCompare compares two eval runs.
func (a *app) evalCompare(ctx context.Context, args []string) error {
	fs := newFlags("eval compare")
	d := a.addDBFlags(fs)
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	failUnder := fs.Float64("fail-under", 0, "exit 1 when B's pass rate is under this (0 to 1)")
	maxCost := fs.Float64("max-cost", 0, "exit 1 when B cost more US dollars than this")
	maxRegressions := fs.Int("max-regressions", -1, "exit 1 when more cases than this got worse (-1: no gate)")
	var judge multiFlag
	fs.Var(&judge, "judge", "[TIER=]provider:model: ask this model which answer of each case is better, in both orders")
	pos, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("eval compare: want two eval runs: coorflow eval compare A B (coorflow eval list shows them)")
	}
	if *failUnder < 0 || *failUnder > 1 {
		return usagef("eval compare: --fail-under is a pass rate from 0 to 1")
	}
	base, err := a.openDB(ctx, d.db, true)
	if err != nil {
		return err
	}
	defer base.Close()
	st := eval.NewDocStore(base.store, d.owner)
	var res [2]*eval.Result
	for i, id := range pos {
		if res[i], err = eval.LoadResult(ctx, st, id); err != nil {
			if errors.Is(err, eval.ErrNotFound) {
				return usagef("eval compare: no eval run %s in %s (coorflow eval list shows them)", id, base.where)
			}
			return err
		}
	}
	cmp := eval.Compare(res[0], res[1])
	if len(judge) > 0 {
		models, err := a.judgeModels(ctx, judge)
		if err != nil {
			return err
		}
		defer models.Close()
		if err := judgePairs(ctx, models, cmp); err != nil {
			return err
		}
	}
	if *asJSON {
		if err := writeJSON(a, cmp); err != nil {
			return err
		}
	} else {
		fmt.Fprint(a.stdout, cmp.Table())
	}
	if gates := cmp.Check(eval.Gates{FailUnder: *failUnder, MaxCost: *maxCost, MaxRegressions: *maxRegressions}); len(gates) > 0 {
		return &gateError{gates: gates}
	}
	return nil
}

// judgePairs asks the judge about the first answers of each case both
// runs finished.
func judgePairs(ctx context.Context, models *llm.Models, cmp *eval.Comparison) error {
	first := func(r *eval.Result, id string) *eval.Trial {
		for _, t := range r.Trials {
			if t.Case == id && t.Answer != "" {
				return t
			}
		}
		return nil
	}
	for i := range cmp.Cases {
		ch := &cmp.Cases[i]
		ta, tb := first(cmp.A, ch.Case), first(cmp.B, ch.Case)
		if ta == nil || tb == nil {
			continue
		}
		input, err := caseInput(cmp.A, ch.Case)
		if err != nil {
			return err
		}
		v, err := eval.Pairwise(ctx, models, llm.TierBasic, &eval.Case{ID: ch.Case, Input: input}, "", ta.Answer, tb.Answer)
		if err != nil {
			return err
		}
		ch.Judge = &v
	}
	return nil
}

// caseInput reads a case's input from the dataset an eval run used.
func caseInput(r *eval.Result, id string) (string, error) {
	ds, err := eval.Load(r.Dataset, nil)
	if err != nil {
		return "", fmt.Errorf("the dataset of eval run %s: %w", r.ID, err)
	}
	for _, c := range ds.Cases {
		if c.ID == id {
			return c.Input, nil
		}
	}
	return "", fmt.Errorf("case %s is not in %s any more", id, r.Dataset)
}

// evalList lists the eval runs.
func (a *app) evalList(ctx context.Context, args []string) error {
	fs := newFlags("eval list")
	d := a.addDBFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	if _, err := a.parse(fs, args); err != nil {
		return err
	}
	base, err := a.openDB(ctx, d.db, true)
	if err != nil {
		return err
	}
	defer base.Close()
	runs, err := eval.NewDocStore(base.store, d.owner).ListRuns(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(a, runs)
	}
	for _, r := range runs {
		fmt.Fprintf(a.stdout, "%s  %s  %-8s  %s on %s  %s\n", r.ID, r.Started.Local().Format("2006-01-02 15:04"), r.Status, r.Workflow, r.Dataset, r.Label)
	}
	return nil
}

// evalShow prints an eval run's table (or JSON).
func (a *app) evalShow(ctx context.Context, args []string) error {
	fs := newFlags("eval show")
	d := a.addDBFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("eval show: give one eval run id (coorflow eval list shows them)")
	}
	base, err := a.openDB(ctx, d.db, true)
	if err != nil {
		return err
	}
	defer base.Close()
	res, err := eval.LoadResult(ctx, eval.NewDocStore(base.store, d.owner), pos[0])
	if errors.Is(err, eval.ErrNotFound) {
		return usagef("eval show: no eval run %s in %s", pos[0], base.where)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(a, res)
	}
	_, err = fmt.Fprint(a.stdout, res.Table())
	return err
}
