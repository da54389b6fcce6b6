package runs

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/trace"
)

// Run is one run of a workflow on a thread as every entry point executes
// it — the CLI's run, the server's runs on any transport and replica —
// described the same way: who runs it, on which thread, how it starts,
// with which config and environment. From it come the graph options that
// carry these to its nodes (Options), its entry in the index of recorded
// runs (Recording), and its meters (Meter), so that a run recorded by any
// entry point replays alike.
type Run struct {
	// ID is the run's id; Thread the thread as its caller knows it, and
	// Key the thread's key in the Saver ("": Thread).
	ID, Thread, Key string
	// Owner is who started it; Workflow the name it was started by, and
	// Graph the compiled graph's name (the root of its event paths).
	Owner, Workflow, Graph string
	// Input is a new turn's input (nil: it answers or continues); Answers
	// are the answers of a run that resumes, as its recording keeps them
	// ({"resume": …} or {"resume_each": {…}}); Resuming says it answers.
	Input    []graph.Write
	Answers  json.RawMessage
	Resuming bool
	// StartCheckpoint is the thread's checkpoint an input starts a new
	// turn from ("" for a new thread, RuntimeStart).
	StartCheckpoint string
	// Config is the caller's config; Env the environment the workflow was
	// compiled with (nil: not described).
	Config Config
	Env    *Env
}

// key is the thread's key in the Saver.
func (r *Run) key() string {
	if r.Key != "" {
		return r.Key
	}
	return r.Thread
}

// Start says how the run starts, as its recording says it:
// trace.StartInput, StartResume or StartContinue.
func (r *Run) Start() string {
	switch {
	case r.Input != nil:
		return trace.StartInput
	case r.Resuming:
		return trace.StartResume
	}
	return trace.StartContinue
}

// runtime is the run's string runtime values: its owner, thread, id,
// config, environment, and the checkpoint an input starts from.
func (r *Run) runtime() map[string]string {
	rt := map[string]string{store.RuntimeOwner: r.Owner, graph.RuntimeThread: r.Thread, graph.RuntimeRun: r.ID}
	if c := r.Config.Encode(); c != "" {
		rt[RuntimeConfig] = c
	}
	if r.Env != nil {
		rt[RuntimeEnv] = r.Env.Encode()
	}
	return rt
}

// Options are the graph options that carry the run to its nodes: its
// thread and its runtime values (owner, thread, run, config, environment).
func (r *Run) Options() []graph.Option {
	rt := r.runtime()
	values := make(map[string]any, len(rt))
	for k, v := range rt {
		values[k] = v
	}
	return []graph.Option{graph.Thread(r.key()), graph.WithRuntime(values)}
}

// Recording is the run's entry in the index of recorded runs
// (trace.Recorder.Begin); an input that cannot be encoded is left out,
// with the error.
func (r *Run) Recording() (trace.RunInfo, error) {
	info := trace.RunInfo{
		ID: r.ID, Thread: r.Thread, GraphThread: r.key(), Workflow: r.Workflow, Graph: r.Graph, Owner: r.Owner,
		Start: r.Start(), Runtime: r.runtime(),
	}
	var err error
	switch info.Start {
	case trace.StartInput:
		if info.Input, err = trace.EncodeInput(r.Input); err != nil {
			err = fmt.Errorf("runs: the input of run %q cannot be recorded: %w", r.ID, err)
		}
		if r.StartCheckpoint != "" {
			info.Runtime[RuntimeStart] = r.StartCheckpoint
		}
	case trace.StartResume:
		info.Input = r.Answers
	}
	return info, err
}

// Meter returns ctx with the run's meter, and the two meters of a run:
// turn holds the run budget of the thread's turn, of which spent is gone
// already (a run that continues or resumes a turn), under parent (the
// owner's meter, or nil); own counts what this run spends, under turn.
func Meter(ctx context.Context, budget llm.Budget, spent llm.Spend, parent *llm.Meter) (_ context.Context, turn, own *llm.Meter) {
	turn = llm.NewMeter(llm.ScopeRun, budget, spent, parent)
	own = llm.NewMeter("", llm.Budget{}, llm.Spend{}, turn)
	return llm.WithMeter(ctx, own), turn, own
}
