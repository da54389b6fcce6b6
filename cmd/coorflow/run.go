package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/trace"
	"github.com/coorflow/coorflow/workflows"
)

// runFlags are the flags of coorflow run.
type runFlags struct {
	*dbFlags
	load                  *loadFlags
	input, thread, resume string
	answers, models       multiFlag
	// config are the --config flags: the run's config.
	config             multiFlag
	demo, stream, json bool
	showModels         bool
	verbose            bool
	// temporal and queue submit the run to Temporal's workers, with
	// timeouts; allowCodeExec says they run code (worker --allow-code-exec).
	temporal, queue string
	timeouts        *temporalTimeouts
	allowCodeExec   bool
	// resuming: --resume or --answer was given.
	resuming bool
	// budgetTokens and budgetUSD replace the file's run budget when
	// given (0 lifts that limit).
	budgetTokens int
	budgetUSD    float64
}

func (a *app) run(ctx context.Context, args []string) error {
	fs := newFlags("run")
	f := &runFlags{dbFlags: a.addDBFlags(fs), load: addLoadFlags(fs)}
	fs.StringVar(&f.input, "input", "", "the input text, or @FILE")
	fs.StringVar(&f.thread, "thread", "", "the thread to start or continue")
	fs.StringVar(&f.resume, "resume", "", "the answer to the question the thread waits on, or @FILE")
	fs.Var(&f.answers, "answer", "ID=VALUE: the answer to one of several questions (repeatable)")
	fs.Var(&f.models, "model", "TIER=provider:model (repeatable)")
	fs.Var(&f.config, "config", "KEY=VALUE (VALUE is JSON or text) or @FILE (a JSON object): the run's config, which its nodes and expressions read (repeatable)")
	fs.BoolVar(&f.demo, "demo", false, "use the file's demo model (its script, or the reactive demo)")
	fs.BoolVar(&f.showModels, "show-models", false, "print each tier's provider, model and endpoint before the run")
	fs.BoolVar(&f.stream, "stream", false, "print the models' tokens as they come")
	fs.BoolVar(&f.json, "json", false, "print events and the result as JSON lines")
	fs.BoolVar(&f.verbose, "v", false, "print notices")
	fs.IntVar(&f.budgetTokens, "budget-tokens", 0, "the most tokens the run may spend on model calls, in place of the file's settings.budget.tokens (0: no limit)")
	fs.Float64Var(&f.budgetUSD, "budget-usd", 0, "the most US dollars the run may spend on model calls, in place of the file's settings.budget.usd (0: no limit)")
	fs.StringVar(&f.temporal, "temporal", "", "HOST:PORT: run on Temporal's workers (coorflow worker) instead of in this process")
	fs.StringVar(&f.queue, "queue", "coorflow", "with --temporal, the workers' task queue")
	f.timeouts = addTemporalTimeouts(fs)
	fs.BoolVar(&f.allowCodeExec, "allow-code-exec", false, "with --temporal, the workers run code in their sandbox (they were started with worker --allow-code-exec)")
	pos, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("run: want one workflow (a file, a directory or a built-in name), got %d arguments", len(pos))
	}
	if err := f.timeouts.check("run"); err != nil {
		return err
	}
	setInput := flagSet(fs, "input")
	resuming := flagSet(fs, "resume") || len(f.answers) > 0
	f.resuming = resuming
	switch {
	case resuming && f.thread == "":
		return usagef("run: --resume and --answer continue a thread: give it with --thread")
	case resuming && setInput:
		return usagef("run: --input starts a new turn and --resume answers a question: give one of them")
	case flagSet(fs, "resume") && len(f.answers) > 0:
		return usagef("run: give --resume (one question) or --answer (several), not both")
	case f.thread != "" && !threadID.MatchString(f.thread):
		return usagef("run: thread id %q: use letters, digits, '.', '_', ':' and '-'", f.thread)
	case f.allowCodeExec && f.temporal == "":
		return usagef("run: --allow-code-exec says what the workers of --temporal do; without --temporal, run runs your file's code on this machine")
	case f.budgetTokens < 0 || f.budgetUSD < 0:
		return usagef("run: a budget cannot be negative (--budget-tokens %d, --budget-usd %g)", f.budgetTokens, f.budgetUSD)
	}
	overrides, err := parseModels(f.models)
	if err != nil {
		return err
	}
	config, err := parseConfigFlags(f.config)
	if err != nil {
		return err
	}
	wf, err := runnable(pos[0], f.load.options()...)
	if err != nil {
		return err
	}
	r := &runner{app: a, flags: f, wf: wf, budget: wf.file.Budget(), used: llm.NewMeter("invocation", llm.Budget{}, llm.Spend{}, nil), config: config}
	if flagSet(fs, "budget-tokens") {
		r.budget.Tokens = f.budgetTokens
	}
	if flagSet(fs, "budget-usd") {
		r.budget.USD = f.budgetUSD
	}
	return r.start(ctx, overrides, setInput)
}

// flagSet reports whether the flag called name was given.
func flagSet(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			found = true
		}
	})
	return found
}

func parseModels(specs []string) (map[llm.Tier]string, error) {
	out := map[llm.Tier]string{}
	for _, s := range specs {
		tier, model, ok := strings.Cut(s, "=")
		if !ok || model == "" {
			return nil, usagef("--model %s: want TIER=provider:model, e.g. basic=openai:gpt-4o", s)
		}
		t, err := llm.ParseTier(tier)
		if err != nil {
			return nil, usagef("--model %s: %v", s, err)
		}
		out[t] = model
	}
	return out, nil
}

// runner is one invocation of coorflow run.
type runner struct {
	app    *app
	flags  *runFlags
	wf     *workflowRef
	db     *db
	r      *graph.Runnable
	thread string
	demo   bool
	// plan is the thread's plan when the run starts, if any.
	plan *plan.Plan
	// in reads the answers typed on a terminal.
	in *bufio.Reader
	// rec records each stream of the run as a run of its own; runID is
	// the last one recorded ("" when none was).
	rec   *trace.Recorder
	runID string
	// startKind says how the first stream starts: trace.StartInput,
	// StartResume or StartContinue.
	startKind string
	// budget is what a run may spend (the file's, changed by the
	// flags); spent what the thread's turn spent before the next stream;
	// used counts what this invocation spent.
	budget llm.Budget
	spent  llm.Spend
	used   *llm.Meter
	// remote runs the graph on Temporal (--temporal); nil runs it here.
	// With remoteStreams, its events reach this process (the event log
	// on PostgreSQL) and are shown and recorded as a local run's are.
	remote        remoteRunner
	remoteStreams bool
	// config is the run's config (--config), given to every stream.
	config runs.Config
	// env is the environment the workflow is compiled with.
	env environment
	// startCheckpoint is the thread's checkpoint an input starts a new
	// turn from ("" for a new thread).
	startCheckpoint string
	// runs executes each stream of the run (execute).
	runs *runs.Manager
}

// remoteRunner runs the graph elsewhere (temporalrun.Runner).
type remoteRunner interface {
	graph.Invoker
	Stream(ctx context.Context, input []graph.Write, opts ...graph.Option) iter.Seq2[graph.Event, error]
}

func (r *runner) start(ctx context.Context, overrides map[llm.Tier]string, setInput bool) error {
	a, f, file := r.app, r.flags, r.wf.file
	models, err := file.Resolve(ctx, workflows.ModelOptions{Getenv: a.getenv, Overrides: overrides, Demo: f.demo})
	if err != nil {
		return err
	}
	r.demo = models.Demo
	a.showModels("", models, f.showModels)
	if r.db, err = a.openDB(ctx, f.db, false); err != nil {
		return err
	}
	defer r.db.Close()
	r.rec = a.newRecorder(ctx, r.db)
	defer a.closeRecorder(ctx, r.rec)
	r.env = runEnvironment()
	if f.temporal != "" {
		// The nodes run on the workers, which compile the file as
		// servedEnvironment says (code execution off unless they were
		// started with --allow-code-exec, which --allow-code-exec says;
		// each worker checks, environment.checkRun).
		r.env = servedEnvironment(ctx, f.allowCodeExec)
	}
	env := r.env.apply(workflows.Env{Store: r.db.store, Owner: f.owner, Getenv: a.getenv, Graph: []graph.Option{graph.WithSaver(r.db.saver)},
		MCP: a.mcpHub()}, r.wf)
	if models.Models != nil {
		env.Models = models.Models
	}
	if f.verbose {
		env.Warn = func(msg string) { a.notice("%s", msg) }
	}
	if r.r, err = file.Compile(ctx, env); err != nil {
		return err
	}
	input, opts, err := r.prepare(ctx, setInput)
	if err != nil {
		return err
	}
	if f.temporal != "" {
		closeTemporal, err := r.submitTo(ctx, f.temporal, f.queue, f.timeouts)
		if err != nil {
			return err
		}
		defer closeTemporal()
	}
	if models.Demo && !f.demo {
		a.notice("no model provider is configured (%s): running offline on %s", models.Reason, demoName(models))
	}
	return r.loop(ctx, input, opts)
}

// prepare finds or creates the thread and returns the run's input and
// options.
func (r *runner) prepare(ctx context.Context, setInput bool) ([]graph.Write, []graph.Option, error) {
	f := r.flags
	r.thread = f.thread
	if r.thread == "" {
		r.thread = newThreadID()
	}
	info, known, err := r.db.threadInfo(ctx, f.owner, r.thread)
	if err != nil {
		return nil, nil, err
	}
	if known && info.Workflow != r.wf.ref {
		return nil, nil, usagef("thread %s belongs to workflow %s, not %s", r.thread, info.Workflow, r.wf.ref)
	}
	snap, err := r.r.State(ctx, r.thread)
	exists := err == nil
	if err != nil && !errors.Is(err, graph.ErrNotFound) {
		return nil, nil, err
	}
	r.plan = nodes.PlanKey.Get(snap.State)
	opts := []graph.Option{graph.Thread(r.thread)}
	var input []graph.Write
	r.startKind = trace.StartContinue
	switch {
	case f.resuming:
		r.startKind = trace.StartResume
		if !exists {
			return nil, nil, usagef("thread %s does not exist in %s: nothing to resume", r.thread, r.db.where)
		}
		if len(snap.Interrupts) == 0 {
			return nil, nil, usagef("thread %s waits for no answer (%s): nothing to resume", r.thread, status(snap))
		}
		opt, err := r.answers(snap.Interrupts)
		if err != nil {
			return nil, nil, err
		}
		opts = append(opts, opt)
	case setInput && exists && len(snap.Interrupts) > 0:
		// A new input begins a turn only once the last one has finished.
		return nil, nil, usagef("thread %s is %s, so --input cannot start a new turn yet: answer with %s (or start another thread)",
			r.thread, status(snap), r.resumeCommand(snap.Interrupts))
	case setInput && exists && len(snap.Next) > 0:
		return nil, nil, usagef("thread %s is %s, so --input cannot start a new turn yet: finish it with coorflow run %s --thread %s (or start another thread)",
			r.thread, status(snap), shellQuote(r.wf.arg), r.thread)
	case setInput:
		text, err := readArg(f.input)
		if err != nil {
			return nil, nil, err
		}
		if input, err = r.inputWrites(text); err != nil {
			return nil, nil, err
		}
		r.startKind = trace.StartInput
		if exists {
			r.startCheckpoint = snap.Checkpoint
		}
	case !exists:
		return nil, nil, usagef("run: give the input with --input (a new thread starts with one)")
	}
	if r.startKind != trace.StartInput && !r.budget.IsZero() {
		// A run that continues the turn spends what is left of its budget.
		traces, err := r.db.traceStore(ctx)
		if err != nil {
			return nil, nil, err
		}
		if r.spent, err = trace.TurnSpend(ctx, traces, f.owner, r.thread); err != nil {
			return nil, nil, err
		}
	}
	if !known {
		if err := r.db.recordThread(ctx, f.owner, r.thread, threadInfo{Workflow: r.wf.ref, Name: r.wf.file.Name(), Created: time.Now().UTC()}); err != nil {
			return nil, nil, err
		}
	}
	return input, opts, nil
}

func newThreadID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "t-" + hex.EncodeToString(b)
}

// inputWrites turns the input text into the run's input.
func (r *runner) inputWrites(text string) ([]graph.Write, error) {
	ws, err := r.wf.file.Input(r.r, r.wf.file.InputChannel(), text)
	if err != nil {
		return nil, usagef("--input: %v", err)
	}
	return ws, nil
}

// answers returns the resume option the flags give for the pending
// interrupts: --resume answers the only question, or every agent's copy
// of one budget question.
func (r *runner) answers(pending []graph.InterruptInfo) (graph.Option, error) {
	f := r.flags
	if len(f.answers) == 0 {
		text, err := readArg(f.resume)
		if err != nil {
			return nil, err
		}
		if llm.OneBudgetQuestion(pending) {
			return llm.AnswerAll(pending, answerValue(text)), nil
		}
		return graph.Resume(answerValue(text)), nil
	}
	each := map[string]any{}
	for _, a := range f.answers {
		id, v, ok := strings.Cut(a, "=")
		if !ok || id == "" {
			return nil, usagef("--answer %s: want ID=VALUE (the ids are printed with the questions)", a)
		}
		text, err := readArg(v)
		if err != nil {
			return nil, err
		}
		each[id] = answerValue(text)
	}
	return graph.ResumeEach(each), nil
}

// answerValue reads an answer: JSON when it is JSON ({"accept": true}),
// the text itself otherwise.
func answerValue(text string) any {
	var v any
	if t := strings.TrimSpace(text); (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Unmarshal([]byte(t), &v) == nil {
		return v
	}
	return text
}

// outcome is how one stream of a run ended.
type outcome struct {
	status     graph.Status
	state      graph.State
	interrupts []graph.InterruptInfo
}

// loop runs the graph, asking the questions it pauses on when a person
// can answer them.
func (r *runner) loop(ctx context.Context, input []graph.Write, opts []graph.Option) error {
	var p printer = newTextPrinter(r)
	if r.flags.json {
		p = newJSONPrinter(r)
	}
	p.begin()
	start := r.startKind
	for {
		out, err := r.stream(ctx, p, input, opts, start)
		if err != nil {
			p.failed(err, ctx.Err() != nil)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("run failed: %w%s", err, r.budgetHint(err))
		}
		if out.status != graph.StatusInterrupted {
			p.done(out.state)
			return nil
		}
		if !r.app.interactive || r.flags.json {
			p.waiting(out.interrupts, false)
			return interruptedError{}
		}
		opt, ok := r.ask(ctx, p, out.interrupts)
		if ctx.Err() != nil {
			p.failed(ctx.Err(), true)
			return ctx.Err()
		}
		if !ok {
			p.waiting(out.interrupts, true)
			return interruptedError{}
		}
		input, opts, start = nil, []graph.Option{graph.Thread(r.thread), opt}, trace.StartResume
	}
}

// streamed are the options that make a run yield the events that p shows
// or that are recorded: those are all but the state after every step and
// the tokens, unless p shows them, so that the models are asked to stream
// only when somebody reads.
func streamed(p printer) []graph.Option {
	var kinds []graph.EventKind
	for k := graph.EventRunStart; k.String() != "unknown"; k++ {
		if k != graph.EventValues || p.shows(k.String()) {
			kinds = append(kinds, k)
		}
	}
	opts := []graph.Option{graph.Events(kinds...)}
	if !p.shows(llm.EventToken) {
		opts = append(opts, graph.SkipCustomEvents(llm.EventToken))
	}
	return opts
}

// stream runs the graph once, to its end or to an interrupt, and records
// it as a run (start says how it starts).
func (r *runner) stream(ctx context.Context, p printer, input []graph.Write, opts []graph.Option, start string) (outcome, error) {
	var executor runs.Executor = r.r
	if r.remote != nil && !r.remoteStreams {
		return r.invokeRemote(ctx, input, opts)
	}
	env := r.env.of(r.wf)
	spec := &runs.Run{ID: newRunID(), Thread: r.thread, Owner: r.flags.owner, Workflow: r.wf.ref, Graph: r.r.Name(),
		Input: input, Resuming: start == trace.StartResume, Config: r.config, Env: &env}
	if start == trace.StartInput {
		spec.StartCheckpoint = r.startCheckpoint
		r.spent = llm.Spend{}
	}
	ctx, turn, meter := runs.Meter(ctx, r.budget, r.spent, r.used)
	defer func() { r.spent = turn.Spent() }()
	if r.remote != nil {
		executor = runs.Remote(r.remote) // the workers make its model calls: count them here, as a local run does
	}
	res, err := r.execute(ctx, spec, runs.Execution{
		Executor: executor, Options: append(opts, streamed(p)...), Meter: meter,
		Recorder: r.rec, RecordingError: func(err error) { r.app.notice("%v", err) },
		Observe: func(ev graph.Event, err error) {
			if err == nil && p.shows(ev.Name()) {
				p.event(ev)
			}
		},
	})
	if err != nil {
		return outcome{}, err
	}
	r.runID = res.Recording
	if res.Err != nil {
		return outcome{}, res.Err
	}
	return outcome{status: res.Status, state: res.End.State, interrupts: res.Interrupts}, nil
}

// execute executes the run spec as x says, through the runs.Manager of
// this process, as the server executes its runs: admitted on its thread
// (one run at a time), executed by runs.Execute, cancelled with ctx.
func (r *runner) execute(ctx context.Context, spec *runs.Run, x runs.Execution) (runs.Outcome, error) {
	if r.runs == nil {
		r.runs = runs.NewManager(runs.ManagerConfig{EventBuffer: 1, EventBufferBytes: 1}) // nobody streams its events
	}
	h, err := r.runs.Submit(runs.Task{Run: spec, Busy: runs.Refuse, Limits: runs.NoLimits, Context: ctx,
		Prepare: func(context.Context, *runs.Handle) (runs.Execution, error) { return x, nil }})
	if err != nil {
		return runs.Outcome{}, err
	}
	stop := context.AfterFunc(ctx, func() { h.Cancel(context.Cause(ctx)) })
	defer stop()
	<-h.Done()
	r.runs.Forget(spec.ID)
	return h.Outcome(), nil
}

// ask shows the questions and reads the answers from stdin; false when
// stdin ended or ctx was cancelled (Ctrl-C).
func (r *runner) ask(ctx context.Context, p printer, ins []graph.InterruptInfo) (graph.Option, bool) {
	if r.in == nil {
		r.in = bufio.NewReader(r.app.stdin)
	}
	each := map[string]any{}
	for _, q := range questions(ins) {
		p.question(q)
		var line string
		for line == "" { // an empty line asks again
			fmt.Fprint(r.app.stdout, "> ")
			var ok bool
			if line, ok = r.readLine(ctx); !ok {
				fmt.Fprintln(r.app.stdout)
				return nil, false
			}
		}
		each[q.ID] = answerValue(line)
	}
	if llm.OneBudgetQuestion(ins) {
		return llm.AnswerAll(ins, each[ins[0].ID]), true
	}
	if len(ins) == 1 {
		return graph.Resume(each[ins[0].ID]), true
	}
	return graph.ResumeEach(each), true
}

// readLine reads an answer. A terminal read cannot be interrupted: on
// Ctrl-C the reading goroutine is left blocked, and ends with the process.
func (r *runner) readLine(ctx context.Context) (string, bool) {
	type line struct {
		text string
		err  error
	}
	got := make(chan line, 1)
	go func() {
		text, err := r.in.ReadString('\n')
		got <- line{strings.TrimSpace(text), err}
	}()
	select {
	case l := <-got:
		return l.text, l.err == nil || l.text != ""
	case <-ctx.Done():
		return "", false
	}
}

// resumeCommand is the command that answers a question of the thread.
func (r *runner) resumeCommand(ins []graph.InterruptInfo) string {
	parts := r.threadCommand()
	if len(questions(ins)) == 1 {
		return strings.Join(append(parts, "--resume", "'<answer>'"), " ")
	}
	for _, in := range ins {
		parts = append(parts, "--answer", in.ID+"='<answer>'")
	}
	return strings.Join(parts, " ")
}

// threadCommand is the start of a command that runs the thread again:
// its workflow, thread, database, owner, demo flag and config.
func (r *runner) threadCommand() []string {
	parts := []string{"coorflow", "run", shellQuote(r.wf.arg), "--thread", r.thread}
	if r.flags.db != defaultDB && r.flags.db != r.app.getenv("COORFLOW_DB") {
		parts = append(parts, "--db", shellQuote(r.flags.db))
	}
	if r.flags.owner != "default" {
		parts = append(parts, "--owner", shellQuote(r.flags.owner))
	}
	if r.demo && r.flags.demo {
		parts = append(parts, "--demo")
	}
	for _, c := range r.flags.config { // a resumed run has the config it is given
		parts = append(parts, "--config", shellQuote(c))
	}
	return parts
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./:@=,", c))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// localPython is the python tool of a workflow run from the command line:
// the user's own file, its code run directly, with a scrubbed environment.
func localPython() *tools.PythonConfig {
	return &tools.PythonConfig{Sandbox: tools.SandboxConfig{Mode: tools.SandboxOff}}
}

// budgetHint tells how to go on after a budget stopped the run: the
// thread keeps its checkpoint, and a run with a raised budget continues
// it.
func (r *runner) budgetHint(err error) string {
	var be *llm.BudgetError
	switch {
	case errors.As(err, &be) && be.Scope == llm.ScopeRun:
		flag := fmt.Sprintf("--budget-tokens %d", max(2*be.Limit.Tokens, be.Spent.Tokens()+be.Next))
		if be.Limit.USD > 0 && (be.Limit.Tokens == 0 || be.Spent.CostUSD+be.NextUSD > be.Limit.USD) {
			flag = fmt.Sprintf("--budget-usd %.4f", max(2*be.Limit.USD, be.Spent.CostUSD+be.NextUSD))
		}
		return fmt.Sprintf("; the thread keeps every finished step: continue it with a raised budget: %s %s", r.continueCommand(), flag)
	case errors.Is(err, llm.ErrUnpriced):
		return "; the thread keeps every finished step: once the model has a price, continue it with: " + r.continueCommand()
	}
	return ""
}

// continueCommand is the command that continues the thread.
func (r *runner) continueCommand() string {
	return strings.Join(r.threadCommand(), " ")
}

// invokeRemote runs the graph on Temporal to its end or an interrupt,
// when its events cannot reach this process (threads on SQLite: the event
// log is PostgreSQL's): the run is not recorded here, and only its
// outcome is shown.
func (r *runner) invokeRemote(ctx context.Context, input []graph.Write, opts []graph.Option) (outcome, error) {
	res, err := r.remote.Invoke(ctx, input, opts...)
	if err != nil {
		return outcome{}, err
	}
	return outcome{status: res.Status, state: res.State, interrupts: res.Interrupts}, nil
}
