package main

import (
	"context"
	"errors"
	"fmt"

	cmemory "github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/eval"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/trace"
)

// evalReplay answers the model calls of an eval's trials from the
// recordings of an earlier eval run, with coorflow replay's machinery: a
// trial whose replay does not diverge is graded on the replay's final
// state, at no model cost; one that diverges (a prompt changed, say) is
// run on the models.
type evalReplay struct {
	a         *app
	base      *db
	traces    trace.Store
	wf        *workflowRef
	overrides map[llm.Tier]string
	demo      bool
	id        string
	prev      map[string]*eval.Trial
}

func (a *app) newEvalReplay(ctx context.Context, d *db, st eval.Store, id string, wf *workflowRef, overrides map[llm.Tier]string, demo bool) (*evalReplay, error) {
	trials, err := st.Trials(ctx, id)
	if err == nil {
		_, err = st.LoadRun(ctx, id)
	}
	if errors.Is(err, eval.ErrNotFound) {
		return nil, usagef("eval: --replay %s: no eval run %s in %s (coorflow eval list shows them)", id, id, d.where)
	}
	if err != nil {
		return nil, err
	}
	traces, err := d.traceStore(ctx)
	if err != nil {
		return nil, err
	}
	prev := map[string]*eval.Trial{}
	for _, t := range trials {
		prev[fmt.Sprintf("%s#%d", t.Case, t.Repeat)] = t
	}
	return &evalReplay{a: a, base: d, traces: traces, wf: wf, overrides: overrides, demo: demo, id: id, prev: prev}, nil
}

func (r *evalReplay) EvalRun() string { return r.id }

func (r *evalReplay) Replay(ctx context.Context, c *eval.Case, t *eval.Trial) (graph.State, bool, error) {
	old := r.prev[fmt.Sprintf("%s#%d", c.ID, t.Repeat)]
	switch {
	case old == nil || len(old.Runs) == 0:
		t.Diverged = fmt.Sprintf("eval run %s has no recorded run of this case", r.id)
		return graph.State{}, false, nil
	case len(old.Runs) > 1:
		t.Diverged = fmt.Sprintf("its recording in %s answered questions: only runs of one stream are replayed", r.id)
		return graph.State{}, false, nil
	}
	cas, err := trace.OpenCassette(ctx, r.traces, old.Runs[0])
	if err != nil {
		t.Diverged = fmt.Sprintf("run %s cannot be read: %v", old.Runs[0], err)
		return graph.State{}, false, nil
	}
	g, err := r.a.replayGraph(ctx, r.base, r.wf, cas, r.overrides, r.demo)
	if err != nil {
		return graph.State{}, false, err
	}
	input, err := r.wf.file.Input(g, r.wf.file.InputChannel(), c.Input)
	if err != nil {
		return graph.State{}, false, err
	}
	saver := cmemory.New()
	// The recording answers the calls: they spend nothing of a budget.
	rctx := llm.WithMeter(ctx, nil)
	rep, err := trace.Replay(rctx, g, cas, trace.WithInput(input...), trace.WithRunOptions(graph.WithSaver(saver)))
	if ue := (*trace.UnreadableError)(nil); errors.As(err, &ue) {
		// A recorded call that cannot be read is a recording that cannot
		// be read: the trial runs on the models.
		t.Diverged = ue.Error()
		return graph.State{}, false, nil
	}
	if err != nil {
		return graph.State{}, false, err
	}
	if !rep.OK() {
		t.Diverged = rep.Divergences[0].String()
		return graph.State{}, false, nil
	}
	snap, err := g.State(ctx, cas.Run().GraphThread, graph.WithSaver(saver))
	if err != nil {
		return graph.State{}, false, err
	}
	t.Runs, t.Agents, t.Steps, t.RecordedSpend = []string{old.Runs[0]}, old.Agents, old.Steps, old.Spend
	return snap.State, true, nil
}
