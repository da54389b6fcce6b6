package trace_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/trace"
)

func TestTimelineShowsTheQuestionsOfAnInterruptedRun(t *testing.T) {
	run := trace.RunInfo{ID: "r", Graph: "wf", Status: trace.StatusInterrupted}
	asked := []graph.InterruptInfo{{ID: "i1", Node: "review", Path: "wf/review/agent:reviewer",
		Payload: map[string]any{"question": "Approve this plan?", "plan": "1. Compare"}}}
	evs := synthetic(t,
		graph.EventRunStart, "wf", 0, nil,
		graph.EventNodeStart, "wf/plan", 0, nil,
		graph.EventNodeEnd, "wf/plan", 0, nil,
		graph.EventNodeStart, "wf/review", 1, nil,
		"agent_start", "wf/review/agent:reviewer", 1, agentevent.Info{Agent: "reviewer"},
		graph.EventNodeEnd, "wf/review", 1, nil,
		// A subgraph's run reports its question; its parent again.
		graph.EventInterrupt, "wf/review", 1, asked,
		graph.EventInterrupt, "wf", 1, asked,
	)
	tl := trace.BuildTimeline(run, evs)
	require.Len(t, tl.Interrupts, 1, "each question once")
	in := tl.Interrupts[0]
	assert.Equal(t, "i1", in.ID)
	assert.Equal(t, "review", in.Node)
	assert.JSONEq(t, `{"question":"Approve this plan?","plan":"1. Compare"}`, string(in.Payload))
	assert.Equal(t, trace.ItemDone, tl.Steps[0].Nodes[0].Status, "a node that asked nothing is done")
	review := tl.Steps[1].Nodes[0]
	assert.Equal(t, trace.ItemWaiting, review.Status, "the node that asked waits for the answer")
	assert.Equal(t, trace.ItemWaiting, review.Agents[0].Status, "and so does its agent")

	raw, err := json.Marshal(trace.BuildTimeline(trace.RunInfo{ID: "r", Graph: "wf", Status: trace.StatusDone}, evs[:3]))
	require.NoError(t, err)
	assert.NotContains(t, string(raw), `"interrupts"`, "a run that asked nothing has no interrupts")
}
