package trace_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/trace"
)

// recorded records the calc workflow on "What is 2 + 3?" and loads the
// recording into a cassette.
func recorded(t *testing.T) (*trace.Recording, *trace.Cassette) {
	t.Helper()
	store, err := record(t, calc{}.build(t, script()), "run-1", "What is 2 + 3?", trace.RecorderConfig{})
	require.NoError(t, err)
	rec, err := trace.Load(t.Context(), store, "run-1")
	require.NoError(t, err)
	cas, err := trace.NewCassette(rec)
	require.NoError(t, err)
	return rec, cas
}

func TestReplayReproducesARecordedRun(t *testing.T) {
	rec, cas := recorded(t)
	// The workflow is built again with the cassette as its model: no
	// scripted model, no network.
	rep, err := trace.Replay(t.Context(), calc{}.build(t, cas), cas)
	require.NoError(t, err)
	assert.True(t, rep.OK(), "%s", rep)
	assert.Empty(t, rep.Divergences)
	assert.Equal(t, trace.StatusDone, rep.Status)
	assert.Equal(t, 2, rep.RecordedCalls)
	assert.Equal(t, 2, rep.ReplayedCalls)
	assert.JSONEq(t, string(rec.Run.FinalState), string(rep.FinalState), "the same final state")

	again, err := trace.Replay(t.Context(), calc{}.build(t, cas), cas)
	require.NoError(t, err)
	assert.True(t, again.OK(), "a cassette rewinds for another replay: %s", again)
}

func TestReplayThroughModelTiers(t *testing.T) {
	_, cas := recorded(t)
	models, err := cas.Models(nil)
	require.NoError(t, err)
	m, err := models.Model("reasoning")
	require.NoError(t, err)
	rep, err := trace.Replay(t.Context(), calc{}.build(t, m), cas)
	require.NoError(t, err)
	assert.True(t, rep.OK(), "%s", rep)
}

func TestReplayReportsWhereItDiverged(t *testing.T) {
	tests := []struct {
		name   string
		wf     calc
		opts   []trace.ReplayOption
		first  trace.Divergence // Want, Got and Detail checked apart
		detail string
		// also lists kinds expected among the later divergences.
		also []trace.DivergenceKind
	}{
		{
			name:   "another input",
			opts:   []trace.ReplayOption{trace.WithInput(questionKey.Set("What is 2 + 4?"))},
			first:  trace.Divergence{Kind: trace.DivergedRequest, Path: agentPath, Agent: "solver", Call: 1},
			detail: `message 2 (human) differs at character 23: recorded "Question: What is 2 + 3?", replay "Question: What is 2 + 4?"`,
			also:   []trace.DivergenceKind{trace.DivergedStatus},
		},
		{
			name:   "another system prompt",
			wf:     calc{system: "You solve arithmetic in your head."},
			first:  trace.Divergence{Kind: trace.DivergedRequest, Path: agentPath, Agent: "solver", Call: 1},
			detail: `message 1 (system) differs at character 22: recorded "You solve arithmetic with tools.", replay "You solve arithmetic in your head."`,
			also:   []trace.DivergenceKind{trace.DivergedStatus},
		},
		{
			name:   "a tool that answers otherwise",
			wf:     calc{offset: 1},
			first:  trace.Divergence{Kind: trace.DivergedRequest, Path: agentPath, Agent: "solver", Call: 2},
			detail: `message 4 (tool) differs`,
			also:   []trace.DivergenceKind{trace.DivergedToolResult, trace.DivergedStatus},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, cas := recorded(t)
			rep, err := trace.Replay(t.Context(), tt.wf.build(t, cas), cas, tt.opts...)
			require.NoError(t, err, "a divergence is reported, not returned")
			require.False(t, rep.OK())
			first := rep.Divergences[0]
			assert.Contains(t, first.Detail, tt.detail)
			assert.NotEqual(t, first.Want, first.Got, "the request hashes differ")
			first.Want, first.Got, first.Detail, first.Seq = "", "", "", 0
			assert.Equal(t, tt.first, first)
			var kinds []trace.DivergenceKind
			for _, d := range rep.Divergences[1:] {
				kinds = append(kinds, d.Kind)
			}
			assert.Subset(t, kinds, tt.also)
			assert.Equal(t, trace.StatusError, rep.Status, "the agent's call failed with the divergence")
			assert.Contains(t, rep.Error, "diverged")
			assert.Contains(t, rep.String(), "model call")
			_ = rec
		})
	}
}

func TestReplayToolDivergenceNamesTheCall(t *testing.T) {
	_, cas := recorded(t)
	rep, err := trace.Replay(t.Context(), calc{offset: 1}.build(t, cas), cas)
	require.NoError(t, err)
	var tool *trace.Divergence
	for i, d := range rep.Divergences {
		if d.Kind == trace.DivergedToolResult {
			tool = &rep.Divergences[i]
		}
	}
	require.NotNil(t, tool, "%s", rep)
	assert.Equal(t, agentPath, tool.Path)
	assert.Equal(t, "ok: 5", tool.Want)
	assert.Equal(t, "ok: 6", tool.Got)
	assert.Equal(t, "tool add, call call_solver_1_1", tool.Detail)
}

func TestReplayReportsCallsTheRecordingLacksOrTheReplaySkips(t *testing.T) {
	_, cas := recorded(t)
	// A workflow with the agent's node renamed asks on another path.
	g := graph.New("calc", questionKey, answerKey, reportKey)
	g.AddNode("solve", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(answerKey.Set("skipped")), nil
	})
	g.AddEdge(graph.Start, "solve")
	g.AddEdge("solve", graph.End)
	wf, err := g.Compile()
	require.NoError(t, err)
	rep, err := trace.Replay(t.Context(), wf, cas)
	require.NoError(t, err)
	var kinds []trace.DivergenceKind
	for _, d := range rep.Divergences {
		kinds = append(kinds, d.Kind)
	}
	assert.Equal(t, []trace.DivergenceKind{trace.DivergedMissingCall, trace.DivergedMissingCall, trace.DivergedState, trace.DivergedState}, kinds, "%s", rep)
	assert.Equal(t, 1, rep.Divergences[0].Call)
	assert.Equal(t, agentPath, rep.Divergences[0].Path)
	assert.Equal(t, "answer", rep.Divergences[2].Channel)
	assert.Equal(t, `"2 + 3 = 5"`, rep.Divergences[2].Want)
	assert.Equal(t, `"skipped"`, rep.Divergences[2].Got)

	rep, err = trace.Replay(t.Context(), wf, cas, trace.IgnoreChannels("answer", "report"))
	require.NoError(t, err)
	assert.Len(t, rep.Divergences, 2, "ignored channels are not compared")
}

func TestReplayRefusesRunsThatDidNotStartFromAnInput(t *testing.T) {
	rec, _ := recorded(t)
	rec.Run.Start = trace.StartResume
	cas, err := trace.NewCassette(rec)
	require.NoError(t, err)
	_, err = trace.Replay(t.Context(), calc{}.build(t, cas), cas)
	assert.ErrorIs(t, err, trace.ErrNotReplayable)

	rec.Run.Start, rec.Run.Graph = trace.StartInput, "other"
	_, err = trace.Replay(t.Context(), calc{}.build(t, cas), cas)
	assert.ErrorContains(t, err, `it ran graph "other", not "calc"`)
}

func TestCassetteNeedsBodies(t *testing.T) {
	store, err := record(t, calc{}.build(t, script()), "run-1", "What is 2 + 3?", trace.RecorderConfig{})
	require.NoError(t, err)
	run, err := store.Run(t.Context(), "run-1")
	require.NoError(t, err)
	evs, err := store.Events(t.Context(), "run-1", trace.EventQuery{})
	require.NoError(t, err)
	_, err = trace.NewCassette(&trace.Recording{Run: run, Events: evs})
	assert.ErrorContains(t, err, "no recorded request or response")
}
