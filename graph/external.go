package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// This file is the seam for runners outside this package (a durable
// execution engine such as Temporal): they drive a thread one superstep at
// a time with Step, carry a run's options and answers as plain data
// (RunSpec, Answers, EncodeWrites) and check answers before they are
// recorded (ResolveAnswers). Everything else — planning, node bodies,
// reducers, routing, checkpoints — stays the engine's, so a graph behaves
// the same on every runner.

// Invoker runs a compiled graph: a *Runnable in process, or a runner
// that drives it elsewhere (temporalrun on Temporal) with the same options
// and the same semantics (graph/runnertest checks them).
type Invoker interface {
	Invoke(ctx context.Context, input []Write, opts ...Option) (Result, error)
}

var _ Invoker = (*Runnable)(nil)

// StepResult is the outcome of Step.
type StepResult struct {
	Result
	// More is true when the thread has another step to take (Status is
	// then StatusDone only in the sense that this step completed).
	More bool
	// Step is the step that produced Checkpoint (-1 for the first input).
	Step int
	// Ran labels the tasks of the step that ran, in task order (empty when
	// no step ran).
	Ran []string
	// Next names the nodes the next step runs, sorted; empty when the run
	// finished. NextTasks labels its tasks ("node", "node[2]" for a
	// packet), in task order.
	Next      []string
	NextTasks []string
}

// Step runs at most one superstep of a durable thread: it loads the
// thread (applying input or the answers of a Resume option, as Invoke
// does), runs the tasks of the next step, applies their writes and routes,
// and stores the checkpoint. A run is Step repeated while More is true,
// and then behaves as one Invoke without a step limit (the caller counts
// steps). Step needs a saver and a thread. With WithStateCache, it starts
// from the state a Step of this process stored, instead of reading the
// thread back from the saver. With StreamTo, it sends the
// events of the step (and of the input or answers it applies) there, as
// Stream yields them, the run's start and end included.
func (r *Runnable) Step(ctx context.Context, input []Write, opts ...Option) (StepResult, error) {
	cfg := r.streamConfig(opts)
	if cfg.saver == nil || cfg.thread == "" {
		return StepResult{}, errors.New("graph: Step drives a durable thread: pass graph.WithSaver and graph.Thread")
	}
	cfg.stepLimit = 1
	ru, err := r.newRun(cfg, r.name, sinkYield(cfg.sink))
	if err != nil {
		return StepResult{}, err
	}
	if cfg.stateCache != nil && cfg.durability == DurabilitySync {
		ru.stateCache, ru.sizes = cfg.stateCache, make([]int, len(r.layout.channels))
	}
	res, err := ru.execute(ctx, nil, input)
	var limit *StepLimitError
	switch {
	case errors.As(err, &limit) && limit.Limit == 1:
		// One step ran and another is scheduled: the checkpoint after the
		// step is stored; the next Step takes it from there.
		out := StepResult{More: true, Ran: limit.LastNodes, Step: ru.step - 1}
		out.State, out.Status = State{d: ru.state}, StatusDone
		out.Thread, out.Checkpoint = ru.p.thread, ru.p.cp.ID
		out.Next = taskNodes(ru.taskBuf) // the loop took them off the schedule
		out.NextTasks = taskLabels(ru.taskBuf)
		return out, nil
	case err != nil:
		return StepResult{}, err
	}
	out := StepResult{Result: res, Step: ru.p.cp.Step}
	for _, t := range ru.taskBuf {
		out.Ran = append(out.Ran, t.label)
	}
	if res.Status == StatusInterrupted {
		out.Next, out.NextTasks = taskNodes(ru.taskBuf), taskLabels(ru.taskBuf)
	}
	return out, nil
}

// sinkYield adapts a StreamTo sink to a run's yield (nil: none).
func sinkYield(sink func(Event) bool) func(Event, error) bool {
	if sink == nil {
		return nil
	}
	return func(ev Event, _ error) bool { return sink(ev) }
}

// streamConfig is the run configuration of Step and RunTasks: the events
// of a Stream when StreamTo gives them somewhere to go, none otherwise.
func (r *Runnable) streamConfig(opts []Option) config {
	cfg := r.defaults
	cfg.events = eventFilter{kinds: allEvents}
	cfg.apply(opts)
	if cfg.sink == nil {
		cfg.events = eventFilter{} // nobody reads them: producers skip their work
	}
	return cfg
}

func taskLabels(tasks []*task) []string {
	out := make([]string, len(tasks))
	for i, t := range tasks {
		out[i] = t.label
	}
	return out
}

// ErrStaleStep: RunTasks was asked for tasks of a step the thread has
// moved past.
var ErrStaleStep = errors.New("graph: stale step")

// TaskOutcome is how a task ended in RunTasks.
type TaskOutcome struct {
	// Label is the task's label ("node", or "node[2]" for a packet).
	Label string `json:"label"`
	// Done: it finished (now or before) and its result is stored.
	Done bool `json:"done,omitempty"`
	// Interrupts are the questions it waits on.
	Interrupts []InterruptInfo `json:"interrupts,omitempty"`
}

// RunTasks runs some tasks of the thread's next step, those labelled
// labels, and stores how each ended — its result, its interrupts, its
// failure — as the engine does for the tasks of a step whose siblings are
// still running. It does not complete the step: Step does, once every
// task has run, running none that finished or waits on an interrupt. So
// the tasks of one step can run in different processes. after is the
// checkpoint the step follows: when the thread has moved past it,
// RunTasks runs nothing and returns ErrStaleStep. A task that fails for
// good (after its RetryPolicy) is returned as the error (*NodeError), the
// first in task order; the outcomes of the others are returned with it.
// The tasks run on goroutines of their own, so a node that ends its
// goroutine (runtime.Goexit) fails its task. No goroutine RunTasks
// started outlives it.
func (r *Runnable) RunTasks(ctx context.Context, after string, labels []string, opts ...Option) ([]TaskOutcome, error) {
	cfg := r.streamConfig(opts)
	switch {
	case cfg.saver == nil || cfg.thread == "":
		return nil, errors.New("graph: RunTasks drives a durable thread: pass graph.WithSaver and graph.Thread")
	case cfg.resume != nil || cfg.checkpointID != "":
		return nil, errors.New("graph: RunTasks takes no answers and no checkpoint: Step applies them")
	}
	cfg.durability = DurabilitySync
	ru, err := r.newRun(cfg, r.name, sinkYield(cfg.sink))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ru.ctx, ru.cancel = ctx, cancel
	defer ru.releaseResults() // once the workers have ended
	defer ru.stopWorkers()
	if _, err := ru.begin(nil, nil); err != nil {
		return nil, err
	}
	if ru.p.cp.ID != after {
		return nil, fmt.Errorf("graph: thread %q is at checkpoint %q, past %q whose step was asked for: %w", cfg.thread, ru.p.cp.ID, after, ErrStaleStep)
	}
	var tasks []*task
	for _, t := range ru.nextTasks() {
		if slices.Contains(labels, t.label) {
			tasks = append(tasks, t)
		}
	}
	if len(tasks) != len(labels) {
		return nil, fmt.Errorf("graph: thread %q: the step after checkpoint %q has tasks %s, not all of %s",
			cfg.thread, after, quoteJoin(taskLabels(ru.taskBuf)), quoteJoin(labels))
	}
	if err := ru.prepare(tasks); err != nil {
		return nil, err
	}
	// The step's other tasks run elsewhere; and these never on this
	// goroutine, so that a node ending its goroutine (runtime.Goexit)
	// fails its task, which is reported, rather than ending the caller's.
	ru.partial = true
	results := ru.runTasks(tasks, time.Time{})
	if ru.stopped.Load() {
		return nil, errStopped
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("graph: run %q cancelled in step %d: %w", ru.path, ru.step, err)
	}
	out := make([]TaskOutcome, len(tasks))
	for i, t := range tasks {
		out[i] = TaskOutcome{Label: t.label, Done: results[i].err == nil && len(results[i].interrupts) == 0, Interrupts: results[i].interrupts}
	}
	if err := ru.failed(tasks, results); err != nil {
		return out, err
	}
	_, err = ru.interrupted(tasks, results)
	return out, err
}

// taskNodes returns the nodes of tasks, sorted, without repeats.
func taskNodes(tasks []*task) []string {
	var out []string
	for _, t := range tasks {
		out = append(out, t.name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// RunSpec is what a runner outside this package needs to know of a run's
// options (defaults from Compile, then the run's own).
type RunSpec struct {
	Thread string
	// StepLimit is the run's step limit (the default applied).
	StepLimit int
	// Checkpoint is the checkpoint FromCheckpoint names ("" for none).
	Checkpoint string
	// Resume holds the run's answers; nil when it resumes nothing.
	Resume *Answers
	// InterruptBefore and InterruptAfter are the static breakpoints, sorted.
	InterruptBefore []string
	InterruptAfter  []string
	// Events are the events a Stream with these options yields.
	Events EventSpec
	// Runtime holds the run's runtime values (WithRuntime).
	Runtime map[string]any
}

// Spec reports the options of a run of r with opts.
func (r *Runnable) Spec(opts ...Option) (RunSpec, error) {
	cfg := r.defaults
	cfg.events = eventFilter{kinds: allEvents} // as Stream
	cfg.apply(opts)
	s := RunSpec{Thread: cfg.thread, StepLimit: cfg.stepLimit, Checkpoint: cfg.checkpointID,
		InterruptBefore: slices.Sorted(maps.Keys(cfg.interruptBefore)),
		InterruptAfter:  slices.Sorted(maps.Keys(cfg.interruptAfter)),
		Events:          cfg.events.spec(), Runtime: maps.Clone(cfg.runtime)}
	if s.StepLimit <= 0 {
		s.StepLimit = defaultStepLimit
	}
	if rs := cfg.resume; rs != nil {
		if rs.err != nil {
			return s, fmt.Errorf("graph: resume value: %w", rs.err)
		}
		s.Resume = &Answers{One: rs.one, HasOne: rs.hasOne, Each: maps.Clone(rs.each), At: maps.Clone(rs.at)}
	}
	return s, nil
}

// Answers are the resume values of a run as JSON: what Resume, ResumeEach
// and ResumeAt options carry.
type Answers struct {
	// One answers the only pending interrupt (Resume) when HasOne is set.
	One    json.RawMessage `json:"one,omitempty"`
	HasOne bool            `json:"has_one,omitempty"`
	// Each answers by interrupt id, At by interrupt path.
	Each map[string]json.RawMessage `json:"each,omitempty"`
	At   map[string]json.RawMessage `json:"at,omitempty"`
}

// ResumeWith is the option that resumes with a's answers, as the Resume,
// ResumeEach and ResumeAt options a was read from would.
func ResumeWith(a Answers) Option {
	return func(c *config) {
		c.addResume(func(rs *resumeSpec) error {
			if a.HasOne {
				rs.one, rs.hasOne = a.One, true
			}
			for id, v := range a.Each {
				if rs.each == nil {
					rs.each = make(map[string]json.RawMessage, len(a.Each))
				}
				rs.each[id] = v
			}
			for p, v := range a.At {
				if rs.at == nil {
					rs.at = make(map[string]json.RawMessage, len(a.At))
				}
				rs.at[p] = v
			}
			return nil
		})
	}
}

// ResolveAnswers matches a's answers to the interrupts a thread of r is
// waiting on, by id, with the checks a resume makes (an answer that fits
// several questions, or none, is an error: ErrAmbiguousResume,
// ErrNotInterrupted). breakpoint says the thread paused at a static
// breakpoint, which any continuation passes. It reads nothing: a runner
// calls it to refuse a wrong answer before it is recorded.
func (r *Runnable) ResolveAnswers(thread string, pending []InterruptInfo, breakpoint bool, a Answers) (map[string]json.RawMessage, error) {
	ru := &run{r: r, path: r.name, p: &persister{thread: thread}}
	owner := make(map[string]string, len(pending))
	for _, in := range pending {
		owner[in.ID] = in.Path
	}
	answers := make(map[string]json.RawMessage)
	rs := &resumeSpec{one: a.One, hasOne: a.HasOne, each: a.Each, at: a.At}
	if err := ru.resumeAnswers(rs, pending, owner, answers, breakpoint); err != nil {
		return nil, err
	}
	return answers, nil
}

// EncodeWrites encodes writes (a run's input) as JSON, each value through
// its channel's type; DecodeWrites reads them back.
func (r *Runnable) EncodeWrites(ws []Write) (json.RawMessage, error) {
	recs, err := r.layout.encodeWrites(ws)
	if err != nil {
		return nil, err
	}
	if recs == nil {
		recs = []writeRecord{}
	}
	return json.Marshal(recs)
}

// DecodeWrites decodes writes EncodeWrites encoded; an unknown channel is
// an error.
func (r *Runnable) DecodeWrites(data json.RawMessage) ([]Write, error) {
	var recs []writeRecord
	if err := json.Unmarshal(data, &recs); err != nil {
		return nil, fmt.Errorf("graph: decode writes: %w", err)
	}
	ws, err := r.layout.decodeWrites(recs)
	if err != nil {
		return nil, err
	}
	if ws == nil {
		ws = []Write{}
	}
	return ws, nil
}
