package temporalrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/runs/accounts"
)

// Graphs are the compiled graphs a worker runs, by name (Runnable.Name),
// with the saver their threads live in. The worker's activities read and
// write threads there; the runner reads results from it by reference.
type Graphs struct {
	saver   graph.Saver
	events  *EventLog
	states  *graph.StateCache // the checkpoints steps stored here (CacheStates)
	budgets budgets           // of the runs (budget.go)
	// check refuses the steps of a run whose runtime values this worker
	// cannot honour (CheckRuntime); nil checks nothing.
	check func(graph string, runtime map[string]string) error
	mu    sync.RWMutex
	m     map[string]*graph.Runnable
}

// NewGraphs returns the registry of rs, whose threads live in saver. The
// budgets of runs (Budget) are kept in the accounts of the saver's
// database (runs/accounts), shared by every worker on it; a saver in
// memory keeps them in this process.
func NewGraphs(saver graph.Saver, rs ...*graph.Runnable) *Graphs {
	g := &Graphs{saver: saver, m: make(map[string]*graph.Runnable), budgets: budgets{accounts: accounts.Of(saver)},
		states: graph.NewStateCache(graph.StateCacheConfig{})}
	for _, r := range rs {
		g.Add(r)
	}
	return g
}

// Add registers r under its name, replacing a graph of the same name (a
// new version of it: runs in flight continue on it from their checkpoint).
func (g *Graphs) Add(r *graph.Runnable) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.m[r.Name()] = r
}

// StreamTo makes the steps of runs that stream (Runner.Stream) store their
// events in log, for their callers to read; without it they store none.
// It returns g.
func (g *Graphs) StreamTo(log *EventLog) *Graphs {
	g.events = log
	return g
}

// CacheStates sets where the workers keep the state of the checkpoints
// their steps store, for the run's next step when it comes to this
// process: it then starts from that state instead of reading the thread
// back from the saver (graph.WithStateCache). NewGraphs keeps them in a
// graph.StateCache of the default bounds; nil keeps none. It returns g.
func (g *Graphs) CacheStates(c *graph.StateCache) *Graphs {
	g.states = c
	return g
}

// CheckRuntime makes the workers check the runtime values of each run
// (Config.RuntimeKeys) before they run a step of it: an error fails the
// run at once, with its message, instead of running nodes that this
// worker would run otherwise than their caller expects (a worker that
// compiled its workflows differently). It returns g.
func (g *Graphs) CheckRuntime(check func(graph string, runtime map[string]string) error) *Graphs {
	g.check = check
	return g
}

// checkRun is the CheckRuntime check of a step's run, as a failure that
// no retry mends.
func (g *Graphs) checkRun(name string, runtime map[string]string) error {
	if g.check == nil {
		return nil
	}
	if err := g.check(name, runtime); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), errType, nil, *describe(err))
	}
	return nil
}

// Saver returns the saver the graphs' threads live in.
func (g *Graphs) Saver() graph.Saver { return g.saver }

func (g *Graphs) lookup(name string) (*graph.Runnable, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	r, ok := g.m[name]
	if !ok {
		names := make([]string, 0, len(g.m))
		for n := range g.m {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("temporalrun: this worker has no graph %q (it has %q)", name, names), "coorflow.unknown_graph", nil)
	}
	return r, nil
}

// head reports the thread's newest checkpoint and the nodes of its next
// step ("" and none for a thread that does not exist yet).
func (g *Graphs) head(ctx context.Context, name, thread string) (HeadOutput, error) {
	r, err := g.lookup(name)
	if err != nil {
		return HeadOutput{}, err
	}
	snap, err := r.State(ctx, thread, graph.WithSaver(g.saver))
	switch {
	case errors.Is(err, graph.ErrNotFound):
		return HeadOutput{}, nil
	case err != nil:
		return HeadOutput{}, encodeError(err)
	}
	out := HeadOutput{Checkpoint: snap.Checkpoint, Next: nodesOf(snap.Next)}
	for _, task := range snap.Tasks {
		out.NextTasks = append(out.NextTasks, strings.TrimPrefix(task.Path, r.Name()+"/"))
	}
	return out, nil
}

// task runs tasks of a step (usually one), storing how each ended; the
// step activity completes the step.
func (g *Graphs) task(ctx context.Context, in TaskInput) ([]graph.TaskOutcome, error) {
	r, err := g.lookup(in.Graph)
	if err != nil {
		return nil, err
	}
	if err := g.checkRun(in.Graph, in.Runtime); err != nil {
		return nil, err
	}
	stop := heartbeat(ctx)
	defer stop()
	if ctx, err = g.withMeter(ctx, in.Budget); err != nil {
		return nil, err
	}
	sw := g.stream(ctx, r, in.Thread, in.Events)
	defer sw.close()
	opts := append([]graph.Option{graph.WithSaver(g.saver), graph.Thread(in.Thread), runtime(in.Runtime)}, sw.options(in.Events)...)
	opts = append(opts, taskExecutor(ctx, in.TaskActivities)...)
	out, err := r.RunTasks(ctx, in.After, in.Labels, opts...)
	if err != nil {
		return nil, encodeError(err)
	}
	for _, o := range out {
		if err := checkPayload(in.Thread, o.Interrupts); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// step runs one superstep of a thread with the engine, against the saver:
// the node bodies run here, their journaled calls are recorded in the
// saver, and a retry after a crash reuses what the failed attempt stored.
func (g *Graphs) step(ctx context.Context, in StepInput) (StepOutput, error) {
	r, err := g.lookup(in.Graph)
	if err != nil {
		return StepOutput{}, err
	}
	if err := g.checkRun(in.Graph, in.Runtime); err != nil {
		return StepOutput{}, err
	}
	stop := heartbeat(ctx)
	defer stop()
	if ctx, err = g.withMeter(ctx, in.Budget); err != nil {
		return StepOutput{}, err
	}
	var input []graph.Write
	if in.Input != nil {
		if input, err = r.DecodeWrites(in.Input); err != nil {
			return StepOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), errType, nil, *describe(err))
		}
	}
	answers := in.Answers
	if activity.GetInfo(ctx).Attempt > 1 {
		out, done, err := g.recoverStep(ctx, r, in, &input, &answers)
		if err != nil || done {
			return out, err
		}
	}
	opts := []graph.Option{graph.WithSaver(g.saver), graph.Thread(in.Thread), runtime(in.Runtime)}
	if g.states != nil {
		// A first attempt continues the checkpoint the workflow knows; a
		// retry reads the thread, which the failed attempt may have
		// advanced.
		after := in.After
		if activity.GetInfo(ctx).Attempt > 1 {
			after = ""
		}
		opts = append(opts, graph.WithStateCache(g.states, after))
	}
	if len(in.InterruptBefore) > 0 {
		opts = append(opts, graph.InterruptBefore(in.InterruptBefore...))
	}
	if len(in.InterruptAfter) > 0 {
		opts = append(opts, graph.InterruptAfter(in.InterruptAfter...))
	}
	if len(answers) > 0 {
		opts = append(opts, graph.ResumeWith(graph.Answers{Each: answers}))
	}
	opts = append(opts, taskExecutor(ctx, in.TaskActivities)...)
	sw := g.stream(ctx, r, in.Thread, in.Events)
	res, err := r.Step(ctx, input, append(opts, sw.options(in.Events)...)...)
	sw.close() // the events are stored before the step reports its end
	if err != nil {
		return StepOutput{}, encodeError(err)
	}
	out := StepOutput{Status: res.Status, More: res.More, Checkpoint: res.Checkpoint, Step: res.Step,
		Ran: res.Ran, Next: res.Next, NextTasks: res.NextTasks, Interrupts: res.Interrupts}
	if len(res.Interrupts) == 1 {
		_, out.Breakpoint = res.Interrupts[0].Payload.(graph.Breakpoint)
	}
	return out, checkPayload(in.Thread, out.Interrupts)
}

// runtime is the option that gives a step's nodes the run's runtime
// values.
func runtime(values map[string]string) graph.Option {
	m := make(map[string]any, len(values))
	for k, v := range values {
		m[k] = v
	}
	return graph.WithRuntime(m)
}

// maxPayload bounds what a run puts in Temporal's history in one payload:
// the server refuses payloads over 2 MB (and warns from 256 KB); channel
// values never go there, only inputs and interrupt payloads.
const maxPayload = 2<<20 - 64<<10

// checkPayload refuses interrupts whose payloads would not fit in the
// history, saying so, instead of failing the step over and over.
func checkPayload(thread string, ins []graph.InterruptInfo) error {
	if len(ins) == 0 {
		return nil
	}
	data, err := json.Marshal(ins)
	if err == nil && len(data) <= maxPayload {
		return nil
	}
	msg := fmt.Sprintf("temporalrun: thread %q: the interrupts of %s carry %d bytes as JSON; Temporal refuses payloads over 2 MB: ask with a reference to the store, not the value", thread, ins[0].Path, len(data))
	if err != nil {
		msg = fmt.Sprintf("temporalrun: thread %q: the interrupts of %s do not encode as JSON: %v", thread, ins[0].Path, err)
	}
	return temporal.NewNonRetryableApplicationError(msg, errType, nil, errorInfo{Message: msg})
}

// recoverStep makes a retried step idempotent: when an earlier attempt
// already stored the step's checkpoint, it reports that checkpoint instead
// of running the next step; when it stored only the input, the step runs
// without it; answers it already recorded are not given again.
func (g *Graphs) recoverStep(ctx context.Context, r *graph.Runnable, in StepInput, input *[]graph.Write, answers *map[string]json.RawMessage) (StepOutput, bool, error) {
	snap, err := r.State(ctx, in.Thread, graph.WithSaver(g.saver))
	switch {
	case errors.Is(err, graph.ErrNotFound):
		return StepOutput{}, false, nil
	case err != nil:
		return StepOutput{}, false, encodeError(err)
	}
	if snap.Checkpoint == in.After {
		open := make(map[string]json.RawMessage)
		for _, pending := range snap.Interrupts {
			if v, ok := (*answers)[pending.ID]; ok {
				open[pending.ID] = v
			}
		}
		*answers = open
		return StepOutput{}, false, nil
	}
	if snap.Source == graph.SourceInput && *input != nil {
		*input = nil // applied by the earlier attempt; its step did not run
		return StepOutput{}, false, nil
	}
	// The earlier attempt completed the step.
	out := StepOutput{Status: graph.StatusDone, More: len(snap.Next) > 0, Checkpoint: snap.Checkpoint,
		Step: snap.Step, Ran: snap.Writers, Next: nodesOf(snap.Next)}
	for _, task := range snap.Tasks {
		out.NextTasks = append(out.NextTasks, strings.TrimPrefix(task.Path, r.Name()+"/"))
	}
	return out, true, nil
}

// nodesOf turns task labels ("node", "node[2]") into sorted node names.
func nodesOf(labels []string) []string {
	var out []string
	for _, l := range labels {
		if i := strings.IndexByte(l, '['); i >= 0 {
			l = l[:i]
		}
		out = append(out, l)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// heartbeat beats for the activity until stop is called, so the server
// notices a dead worker within the heartbeat timeout and delivers a
// cancellation to the step.
func heartbeat(ctx context.Context) (stop func()) {
	every := activity.GetInfo(ctx).HeartbeatTimeout / 3
	if every <= 0 {
		return func() {}
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}
