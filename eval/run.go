package eval

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/trace"
	"github.com/coorflow/coorflow/workflows"
)

// Status is how one run of a case (a trial) ended.
type Status string

// The statuses of a trial.
const (
	// StatusPassed: the run finished and every grader passed.
	StatusPassed Status = "passed"
	// StatusFailed: the run finished and a grader failed.
	StatusFailed Status = "failed"
	// StatusError: the run failed, or a grader could not grade.
	StatusError Status = "error"
	// StatusTimeout: the run took longer than Config.Timeout.
	StatusTimeout Status = "timeout"
	// StatusOverBudget: a model call would have exceeded the case's
	// budget or the eval's total budget; it was not made.
	StatusOverBudget Status = "over_budget"
	// StatusWaiting: the run asks a question the case does not answer.
	StatusWaiting Status = "waiting"
)

// ScopeEval is the scope of the total budget of an eval
// (llm.BudgetError.Scope); a case's own budget is llm.ScopeRun.
const ScopeEval = "eval"

// maxAnswers is the most times a case's answers resume one run.
const maxAnswers = 16

// maxAnswerText is the most of a run's answer a trial keeps.
const maxAnswerText = 16 << 10

// Config says what to evaluate, and how.
type Config struct {
	// ID names the eval run: one that Store holds is resumed (its
	// finished trials are not run again); "" starts a new one.
	ID string
	// Label names the version of the workflow evaluated (a prompt, a
	// branch), shown by Compare.
	Label string
	// File and Runnable are the workflow and its compiled graph, with a
	// saver (graph.WithSaver) when cases answer questions. Workflow is
	// how to name it in records (its path, builtin:coor).
	File     *workflows.File
	Runnable *graph.Runnable
	Workflow string
	// Owner is whose runs they are (store.RuntimeOwner).
	Owner string
	// Isolate runs each trial as an owner of its own (Owner:eval:THREAD,
	// store.RuntimeOwner), so that no trial reuses the agents, meta-prompts
	// and boards another built: each trial costs what the workflow costs
	// on a fresh start, and two versions compare fairly.
	Isolate bool
	Dataset *Dataset
	// Graders grade every case after the dataset's.
	Graders []Grader
	// Concurrency is the most cases run at once (default 4); Repeats the
	// runs of each case (default 1).
	Concurrency int
	Repeats     int
	// CaseBudget limits each run of a case, TotalBudget all of them and
	// the judges together. Zero fields set no limit; neither asks.
	CaseBudget, TotalBudget llm.Budget
	// Timeout limits each run of a case (0: none).
	Timeout time.Duration
	// Judge are the models judges call.
	Judge *llm.Models
	// Recorder records each run (nil: not recorded); Runtime are string
	// values recorded with every run (trace.RunInfo.Runtime) and given
	// to it (graph.WithRuntime).
	Recorder *trace.Recorder
	Runtime  map[string]string
	// Store keeps the eval run and each trial as it finishes (nil: not
	// kept).
	Store Store
	// RunOptions are given to every run.
	RunOptions []graph.Option
	// Progress is called after each trial (from several goroutines, one
	// at a time).
	Progress func(Progress)
	// Replay answers the model calls of each trial from an earlier eval
	// run's recordings (see ReplaySource).
	Replay ReplaySource
}

// Progress is how far an eval has come.
type Progress struct {
	Done, Total int
	// Running is the trials under way.
	Running int
	Passed  int
	// Trial is the one that just ended.
	Trial *Trial
	Spend llm.Spend
}

// Trial is one run of one case.
type Trial struct {
	Case   string `json:"case"`
	Repeat int    `json:"repeat"`
	Status Status `json:"status"`
	// Pass and Score sum up the grades: every grader passed; their mean
	// score.
	Pass   bool    `json:"pass"`
	Score  float64 `json:"score"`
	Grades []Grade `json:"grades,omitempty"`
	// Error says why the run did not finish, or which grader failed to
	// grade.
	Error string `json:"error,omitempty"`
	// Thread is the thread it ran on; Runs its recorded runs, the one
	// that started from the input first, then one per answered question.
	Thread string   `json:"thread"`
	Runs   []string `json:"runs,omitempty"`
	// Spend is what the workflow's model calls spent; JudgeSpend what
	// its judges' did.
	Spend      llm.Spend `json:"spend"`
	JudgeSpend llm.Spend `json:"judge_spend,omitzero"`
	// LatencyMS is the wall time of the run, in milliseconds.
	LatencyMS int64 `json:"latency_ms"`
	// Agents is the agents the run built; Steps the steps it ran.
	Agents int `json:"agents"`
	Steps  int `json:"steps"`
	// Answer is the output (its first 16 KiB).
	Answer string `json:"answer,omitempty"`
	// Replayed says the run was answered from a recording, and Diverged
	// where it left it (then it ran on the models).
	Replayed bool   `json:"replayed,omitempty"`
	Diverged string `json:"diverged,omitempty"`
	// RecordedSpend is what the recording a replayed trial was answered
	// from spent: what its budget graders see.
	RecordedSpend llm.Spend `json:"recorded_spend,omitzero"`
	Started       time.Time `json:"started"`
}

func (t *Trial) key() string { return trialKey(t.Case, t.Repeat) }

func trialKey(c string, rep int) string { return fmt.Sprintf("%s#%d", c, rep) }

// Run runs every case of the dataset Repeats times, each run on a thread
// of its own, at most Concurrency at once, grades them and returns the
// result. A case that fails, times out, exceeds its budget or waits for
// an answer is reported as such and the others go on. Run returns an
// error only when it cannot go on (ctx ended, the Store failed); the
// trials finished by then are in the Store, and a Run with the same ID
// runs only the others.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	res, done, err := cfg.begin(ctx)
	if err != nil {
		return nil, err
	}
	var spent llm.Spend
	for _, t := range done {
		spent.Merge(t.Spend)
		spent.Merge(t.JudgeSpend)
	}
	total := llm.NewMeter(ScopeEval, cfg.TotalBudget, spent, nil)
	e := &evaluation{cfg: cfg, res: res, total: total, trials: done}
	if err := e.run(ctx); err != nil {
		return nil, err
	}
	res.Trials = e.trials
	res.Finished = time.Now().UTC()
	res.Status = RunDone
	res.summarize(cfg.Dataset)
	if cfg.Store != nil {
		if err := cfg.Store.SaveRun(context.WithoutCancel(ctx), res.header()); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func (cfg *Config) check() error {
	switch {
	case cfg.File == nil || cfg.Runnable == nil:
		return errors.New("eval: config: the workflow (File and Runnable) is missing")
	case cfg.Dataset == nil || len(cfg.Dataset.Cases) == 0:
		return errors.New("eval: config: no dataset, or it has no cases")
	case cfg.Concurrency < 0 || cfg.Repeats < 0 || cfg.Timeout < 0:
		return errors.New("eval: config: concurrency, repeats and timeout cannot be negative")
	case cfg.ID != "" && !runID.MatchString(cfg.ID):
		return fmt.Errorf("eval: eval run id %q: use letters, digits, '.', '_' and '-'", cfg.ID)
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 4
	}
	if cfg.Repeats == 0 {
		cfg.Repeats = 1
	}
	if cfg.Owner == "" {
		cfg.Owner = "default"
	}
	// Nobody answers a budget's question in an eval: a run over budget
	// stops, and is reported so.
	cfg.CaseBudget.Ask, cfg.TotalBudget.Ask = false, false
	return nil
}

// begin starts the eval run, or resumes the one Store holds with its ID:
// it returns the result to fill and the trials already done.
func (cfg *Config) begin(ctx context.Context) (*Result, []*Trial, error) {
	if cfg.ID == "" {
		cfg.ID = NewID()
	}
	res := &Result{ID: cfg.ID, Label: cfg.Label, Workflow: cfg.Workflow, Dataset: cfg.Dataset.Path, Status: RunRunning,
		Started: time.Now().UTC(), Repeats: cfg.Repeats, Concurrency: cfg.Concurrency, CaseBudget: cfg.CaseBudget, TotalBudget: cfg.TotalBudget}
	if cfg.Replay != nil {
		res.ReplayOf = cfg.Replay.EvalRun()
	}
	if cfg.Store == nil {
		return res, nil, nil
	}
	old, err := cfg.Store.LoadRun(ctx, cfg.ID)
	switch {
	case errors.Is(err, ErrNotFound):
		return res, nil, cfg.Store.SaveRun(ctx, res.header())
	case err != nil:
		return nil, nil, err
	}
	if old.Workflow != cfg.Workflow || old.Dataset != cfg.Dataset.Path {
		return nil, nil, fmt.Errorf("%w: eval run %s evaluated %s on %s, not %s on %s", ErrMismatch, cfg.ID, old.Workflow, old.Dataset, cfg.Workflow, cfg.Dataset.Path)
	}
	trials, err := cfg.Store.Trials(ctx, cfg.ID)
	if err != nil {
		return nil, nil, err
	}
	res.Started, res.Resumed = old.Started, old.Resumed+1
	if res.Label == "" {
		res.Label = old.Label
	}
	var done []*Trial
	for _, t := range trials {
		if t.Repeat < cfg.Repeats && cfg.Dataset.has(t.Case) {
			done = append(done, t)
		}
	}
	return res, done, cfg.Store.SaveRun(ctx, res.header())
}

func (d *Dataset) has(id string) bool {
	for _, c := range d.Cases {
		if c.ID == id {
			return true
		}
	}
	return false
}

// NewID returns a new eval run id.
func NewID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "e-" + hex.EncodeToString(b)
}

// evaluation is one Run under way.
type evaluation struct {
	cfg   Config
	res   *Result
	total *llm.Meter

	mu      sync.Mutex
	trials  []*Trial
	running int
	passed  int
	spend   llm.Spend
}

type job struct {
	c   *Case
	rep int
}

func (e *evaluation) run(ctx context.Context) error {
	done := map[string]bool{}
	for _, t := range e.trials {
		done[t.key()] = true
		e.spend.Merge(t.Spend)
		if t.Pass {
			e.passed++
		}
	}
	var jobs []job
	for _, c := range e.cfg.Dataset.Cases {
		for rep := range e.cfg.Repeats {
			if !done[trialKey(c.ID, rep)] {
				jobs = append(jobs, job{c, rep})
			}
		}
	}
	total := len(jobs) + len(e.trials)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		sem   = make(chan struct{}, e.cfg.Concurrency)
		errMu sync.Mutex
		first error
	)
	for _, j := range jobs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			e.started()
			t, err := e.trial(ctx, j.c, j.rep)
			if err == nil && e.cfg.Store != nil {
				err = e.cfg.Store.SaveTrial(context.WithoutCancel(ctx), e.cfg.ID, t)
			}
			if err != nil {
				errMu.Lock()
				if first == nil {
					first = err
				}
				errMu.Unlock()
				e.ended(nil, total)
				cancel()
				return
			}
			e.ended(t, total)
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

func (e *evaluation) started() {
	e.mu.Lock()
	e.running++
	e.mu.Unlock()
}

func (e *evaluation) ended(t *Trial, total int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.running--
	if t == nil {
		return
	}
	e.trials = append(e.trials, t)
	e.spend.Merge(t.Spend)
	e.spend.Merge(t.JudgeSpend)
	if t.Pass {
		e.passed++
	}
	if e.cfg.Progress != nil {
		e.cfg.Progress(Progress{Done: len(e.trials), Total: total, Running: e.running, Passed: e.passed, Trial: t, Spend: e.spend})
	}
}

// trial runs case c once and grades it. Its error is one that stops the
// eval (ctx ended): the trial is then not kept, and a resumed eval runs
// it again.
func (e *evaluation) trial(ctx context.Context, c *Case, rep int) (*Trial, error) {
	cfg := e.cfg
	t := &Trial{Case: c.ID, Repeat: rep, Started: time.Now().UTC(), Thread: fmt.Sprintf("%s.%s.%d-%s", cfg.ID, c.ID, rep, randHex(2))}
	meter := llm.NewMeter(llm.ScopeRun, cfg.CaseBudget, llm.Spend{}, e.total)
	rctx := ctx
	if cfg.Timeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
	}
	rctx = llm.WithMeter(rctx, meter)
	final, err := e.execute(rctx, c, t)
	t.LatencyMS = time.Since(t.Started).Milliseconds()
	t.Spend = meter.Spent()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var be *llm.BudgetError
	switch {
	case err == nil:
	case errors.As(err, &be):
		t.Status, t.Error = StatusOverBudget, be.Error()
		return t, nil
	case errors.Is(err, context.DeadlineExceeded) && rctx.Err() != nil:
		t.Status, t.Error = StatusTimeout, fmt.Sprintf("the run took longer than %s", cfg.Timeout)
		return t, nil
	case errors.Is(err, errWaiting):
		t.Status, t.Error = StatusWaiting, err.Error()
		return t, nil
	default:
		t.Status, t.Error = StatusError, err.Error()
		return t, nil
	}
	e.grade(ctx, c, t, final)
	return t, nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// grade runs the graders on the final state.
func (e *evaluation) grade(ctx context.Context, c *Case, t *Trial, final graph.State) {
	spend := t.Spend
	if t.Replayed {
		spend = t.RecordedSpend
	}
	out := &Output{Case: c, State: final, Spend: spend, Models: e.cfg.Judge,
		judgeMeter: llm.NewMeter("judges", llm.Budget{}, llm.Spend{}, e.total)}
	if v, ok := final.Value(e.cfg.File.OutputChannel()); ok {
		out.Answer = asText(v)
	}
	t.Answer = clipText(out.Answer, maxAnswerText)
	graders := append(append(append([]Grader{}, e.cfg.Dataset.Graders...), c.Graders...), e.cfg.Graders...)
	t.Status, t.Pass = StatusPassed, true
	var sum float64
	for _, g := range graders {
		gr, err := g.Grade(ctx, out)
		gr.Grader = g.Name()
		t.JudgeSpend.Merge(gr.Spend)
		if err != nil {
			var be *llm.BudgetError
			if errors.As(err, &be) {
				t.Status = StatusOverBudget
			} else if t.Status != StatusOverBudget {
				t.Status = StatusError
			}
			t.Error = err.Error()
			gr.Pass, gr.Score, gr.Reason = false, 0, err.Error()
		}
		t.Grades = append(t.Grades, gr)
		sum += gr.Score
		if !gr.Pass {
			t.Pass = false
			if t.Status == StatusPassed {
				t.Status = StatusFailed
			}
		}
	}
	if len(graders) > 0 {
		t.Score = sum / float64(len(graders))
	} else {
		t.Score = 1
	}
}

// errWaiting: the run asks a question the case does not answer.
var errWaiting = errors.New("eval: waiting")

type waitingError struct{ nodes []string }

func (e *waitingError) Error() string {
	return fmt.Sprintf("the run waits for an answer at %v: give it in the case's answers", e.nodes)
}

func (e *waitingError) Is(target error) bool { return target == errWaiting }

// execute runs the case to its end, answering its questions from the
// case, and returns the final state.
func (e *evaluation) execute(ctx context.Context, c *Case, t *Trial) (graph.State, error) {
	cfg := e.cfg
	if cfg.Replay != nil {
		if st, ok, err := e.replay(ctx, c, t); ok || err != nil {
			return st, err
		}
	}
	input, err := cfg.File.Input(cfg.Runnable, cfg.File.InputChannel(), c.Input)
	if err != nil {
		return graph.State{}, fmt.Errorf("the case's input: %w", err)
	}
	opts := []graph.Option{graph.Thread(t.Thread)}
	start := trace.StartInput
	for range maxAnswers + 1 {
		s, err := e.stream(ctx, t, input, opts, start)
		if err != nil {
			return graph.State{}, err
		}
		if len(s.interrupts) == 0 {
			return s.state, nil
		}
		each := map[string]any{}
		var missing []string
		for _, in := range s.interrupts {
			a, ok := c.Answers[in.ID]
			if !ok {
				a, ok = c.Answers[in.Node]
			}
			if !ok {
				missing = append(missing, in.Node)
				continue
			}
			each[in.ID] = a
		}
		if len(missing) > 0 {
			return graph.State{}, &waitingError{nodes: missing}
		}
		input, opts, start = nil, []graph.Option{graph.Thread(t.Thread), graph.ResumeEach(each)}, trace.StartResume
	}
	return graph.State{}, fmt.Errorf("%w: the case's answers were asked for more than %d times", errWaiting, maxAnswers)
}

// streamed is how one stream of a run ended.
type streamed struct {
	state      graph.State
	interrupts []graph.InterruptInfo
}

// recordedKinds are the events a run yields: every kind but the state
// after each step, which nobody here reads.
func recordedKinds() []graph.EventKind {
	var kinds []graph.EventKind
	for k := graph.EventRunStart; k.String() != "unknown"; k++ {
		if k != graph.EventValues {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

// stream runs the graph once, to its end or to an interrupt, recording it.
func (e *evaluation) stream(ctx context.Context, t *Trial, input []graph.Write, opts []graph.Option, start string) (streamed, error) {
	cfg := e.cfg
	id := "r-" + randHex(4)
	owner := cfg.Owner
	if cfg.Isolate {
		owner = cfg.Owner + ":eval:" + t.Thread
	}
	runtime := map[string]any{store.RuntimeOwner: owner, graph.RuntimeThread: t.Thread, graph.RuntimeRun: id}
	info := trace.RunInfo{ID: id, Thread: t.Thread, GraphThread: t.Thread, Workflow: cfg.Workflow, Graph: cfg.Runnable.Name(), Owner: cfg.Owner,
		Start: start, Runtime: map[string]string{store.RuntimeOwner: owner, graph.RuntimeThread: t.Thread, graph.RuntimeRun: id}}
	for k, v := range cfg.Runtime {
		info.Runtime[k] = v
		runtime[k] = v
	}
	if input != nil {
		info.Input, _ = trace.EncodeInput(input)
	}
	opts = append(append(append([]graph.Option{}, cfg.RunOptions...), opts...), graph.Events(recordedKinds()...),
		graph.SkipCustomEvents(llm.EventToken), graph.WithRuntime(runtime))
	var rr *trace.RunRecorder
	if cfg.Recorder != nil {
		var err error
		if rr, err = cfg.Recorder.Begin(ctx, info); err != nil {
			return streamed{}, fmt.Errorf("eval: record the run: %w", err)
		}
		t.Runs = append(t.Runs, id)
	}
	var out streamed
	var runErr error
	defer func() {
		if rr != nil {
			_ = rr.Finish(context.WithoutCancel(ctx), runErr)
		}
	}()
	root := cfg.Runnable.Name()
	for ev, err := range cfg.Runnable.Stream(ctx, input, opts...) {
		if rr != nil {
			rr.Observe(ev)
		}
		if err != nil {
			runErr = err
			return streamed{}, err
		}
		e.observe(t, root, ev, &out)
	}
	return out, nil
}

// observe counts the agents and steps of a run, and keeps how it ended.
func (e *evaluation) observe(t *Trial, root string, ev graph.Event, out *streamed) {
	if _, ok := ev.Data.(agentevent.Created); ok {
		t.Agents++
	}
	if ev.Path != root {
		return
	}
	switch ev.Kind {
	case graph.EventStepEnd:
		t.Steps++
	case graph.EventInterrupt:
		out.interrupts, _ = ev.Data.([]graph.InterruptInfo)
	case graph.EventRunEnd:
		out.state = ev.State
	}
}
