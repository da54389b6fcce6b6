package trace_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/trace"
)

func TestTimelineOfARecordedRun(t *testing.T) {
	store, err := record(t, calc{}.build(t, script()), "run-1", "What is 2 + 3?", trace.RecorderConfig{})
	require.NoError(t, err)
	tl, err := trace.LoadTimeline(t.Context(), store, "run-1")
	require.NoError(t, err)
	assert.Equal(t, "run-1", tl.Run.ID)
	assert.Equal(t, tl.Run.Events, tl.LastSeq)
	require.Len(t, tl.Steps, 2)
	assert.Equal(t, 0, tl.Steps[0].Step)
	require.Len(t, tl.Steps[0].Nodes, 1)
	solve := tl.Steps[0].Nodes[0]
	assert.Equal(t, "solve", solve.Node)
	assert.Equal(t, "calc/solve", solve.Path)
	assert.Equal(t, trace.ItemDone, solve.Status)
	require.Len(t, solve.Agents, 1)
	a := solve.Agents[0]
	assert.Equal(t, "solver", a.Name)
	assert.Equal(t, agentPath, a.Path)
	assert.Equal(t, "q1", a.Run)
	assert.Equal(t, trace.ItemDone, a.Status)
	assert.Equal(t, 2, a.ModelCalls)
	assert.Equal(t, 1, a.ToolCalls)
	assert.Equal(t, 2, a.Snapshots)
	assert.Positive(t, a.PromptTokens)
	assert.Equal(t, "2 + 3 = 5", a.Summary)
	require.NotNil(t, a.End)
	assert.Equal(t, "report", tl.Steps[1].Nodes[0].Node)
	assert.Empty(t, tl.Steps[1].Nodes[0].Agents)

	_, err = trace.LoadTimeline(t.Context(), store, "nope")
	assert.ErrorIs(t, err, trace.ErrNotFound)
}

func TestAgentDetailOfARecordedRun(t *testing.T) {
	store, err := record(t, calc{}.build(t, script()), "run-1", "What is 2 + 3?", trace.RecorderConfig{})
	require.NoError(t, err)
	tl, err := trace.LoadTimeline(t.Context(), store, "run-1")
	require.NoError(t, err)
	id := tl.Steps[0].Nodes[0].Agents[0].ID

	d, err := trace.LoadAgent(t.Context(), store, "run-1", id)
	require.NoError(t, err)
	assert.Equal(t, "solver", d.Name)
	assert.Equal(t, "Question: What is 2 + 3?", d.Task)
	assert.Equal(t, "2 + 3 = 5", d.Output)
	assert.Equal(t, "I added the numbers with the tool.", d.Reasoning)
	assert.Equal(t, []string{"add"}, d.Tools)
	assert.Equal(t, "basic", d.Tier)

	require.Len(t, d.Snapshots, 2)
	var snap struct {
		Agent string `json:"agent"`
		Parts []struct {
			Name     string `json:"name"`
			Tokens   int    `json:"tokens"`
			Included bool   `json:"included"`
		} `json:"parts"`
	}
	require.NoError(t, json.Unmarshal(d.Snapshots[1].Snapshot, &snap))
	assert.Equal(t, "solver", snap.Agent)
	var names []string
	for _, p := range snap.Parts {
		names = append(names, p.Name)
		assert.True(t, p.Included)
		assert.Positive(t, p.Tokens)
	}
	assert.Equal(t, []string{"system", "task", "history"}, names, "the second call also saw the tool's result")

	require.Len(t, d.ToolCalls, 1)
	tc := d.ToolCalls[0]
	assert.Equal(t, "call_solver_1_1", tc.ID)
	assert.Equal(t, "add", tc.Name)
	assert.JSONEq(t, `{"a":2,"b":3}`, string(tc.Args))
	assert.Equal(t, "ok", tc.Status)
	assert.Equal(t, "5", tc.Output)
	assert.Greater(t, tc.ResultSeq, tc.Seq)

	require.Len(t, d.ModelCalls, 2)
	assert.Equal(t, []trace.ToolCallRef{{ID: "call_solver_1_1", Name: "add", Arguments: `{"a":2,"b":3}`}}, d.ModelCalls[0].ToolCalls)
	assert.Equal(t, "2 + 3 = 5", d.ModelCalls[1].Content)
	assert.Equal(t, "scripted", d.ModelCalls[1].Model)
	assert.Len(t, d.ModelCalls[1].Hash, 16)

	_, err = trace.LoadAgent(t.Context(), store, "run-1", id+1000)
	assert.ErrorIs(t, err, trace.ErrAgentNotFound)
}

// synthetic builds recorded events of run "r" from (kind, path, step,
// payload) tuples, numbered from 1: a kind is a graph.EventKind or the
// recorded name of a custom event.
func synthetic(t *testing.T, specs ...any) []trace.Event {
	t.Helper()
	require.Zero(t, len(specs)%4)
	var out []trace.Event
	for i := 0; i < len(specs); i += 4 {
		kind, ok := specs[i].(string)
		if !ok {
			kind = specs[i].(graph.EventKind).String()
		}
		e := trace.Event{RunID: "r", Seq: int64(i/4 + 1), Kind: kind, Path: specs[i+1].(string),
			Step: specs[i+2].(int), Time: time.Unix(int64(i), 0).UTC()}
		if p := specs[i+3]; p != nil {
			raw, err := json.Marshal(p)
			require.NoError(t, err)
			e.Payload = raw
			var named struct {
				Agent string `json:"agent"`
			}
			_ = json.Unmarshal(raw, &named)
			e.Agent = named.Agent
		}
		out = append(out, e)
	}
	return out
}

func TestTimelineAttributesEventsToAgents(t *testing.T) {
	run := trace.RunInfo{ID: "r", Graph: "wf", Status: trace.StatusDone}
	evs := synthetic(t,
		graph.EventRunStart, "wf", 0, nil,
		graph.EventNodeStart, "wf/plan", 0, nil,
		// A model call without an agent start: an agent of its own.
		"model_call", "wf/plan", 0, llm.ModelCall{Agent: "planner", PromptTokens: 10, CompletionTokens: 5},
		graph.EventNodeEnd, "wf/plan", 0, nil,
		graph.EventNodeStart, "wf/team", 1, nil,
		"agent_created", "wf/team", 1, agentevent.Info{Agent: "researcher"},
		// A snapshot just before the agent's start belongs to it.
		"snapshot", "wf/team/step:s1/agent:researcher", 1, map[string]any{"agent": "researcher"},
		"agent_start", "wf/team/step:s1/agent:researcher", 1, agentevent.Info{Agent: "researcher", Run: "s1"},
		// A tool call below the agent's path is the agent's.
		"tool_call", "wf/team/step:s1/agent:researcher/tool:c1", 1, tools.CallEvent{ID: "c1", Name: "search"},
		"agent_start", "wf/team/step:s2/agent:coder", 1, agentevent.Info{Agent: "coder", Run: "s2"},
		"agent_end", "wf/team/step:s2/agent:coder", 1, agentevent.Info{Agent: "coder", Err: "tool broke\nstack"},
		"agent_end", "wf/team/step:s1/agent:researcher", 1, agentevent.Info{Agent: "researcher", Output: "found it"},
		// The same agent path in a later step is another run of it.
		graph.EventNodeStart, "wf/team", 2, nil,
		"agent_start", "wf/team/step:s1/agent:researcher", 2, agentevent.Info{Agent: "researcher", Run: "s1#2"},
		// Inside a subgraph, agents belong to the top-level node.
		graph.EventNodeStart, "wf/sub", 2, nil,
		"agent_start", "wf/sub/inner/agent:critic", 2, agentevent.Info{Agent: "critic"},
	)
	tl := trace.BuildTimeline(run, evs)
	type row struct {
		Step   int
		Node   string
		Status string
		Agents []string
	}
	var got []row
	for _, s := range tl.Steps {
		for _, n := range s.Nodes {
			r := row{Step: s.Step, Node: n.Node, Status: n.Status}
			for _, a := range n.Agents {
				r.Agents = append(r.Agents, a.Name+":"+a.Status)
			}
			got = append(got, r)
		}
	}
	assert.Equal(t, []row{
		{0, "plan", trace.ItemDone, []string{"planner:done"}},
		{1, "team", trace.ItemUnfinished, []string{"researcher:done", "coder:failed"}},
		{2, "team", trace.ItemUnfinished, []string{"researcher:unfinished"}},
		{2, "sub", trace.ItemUnfinished, []string{"critic:unfinished"}},
	}, got)
	team := tl.Steps[1].Nodes[0]
	assert.Equal(t, []string{"researcher"}, team.Created)
	researcher := team.Agents[0]
	assert.Equal(t, int64(7), researcher.ID, "the agent starts at its snapshot")
	assert.Equal(t, 1, researcher.Snapshots)
	assert.Equal(t, 1, researcher.ToolCalls)
	assert.Equal(t, "s1", researcher.Run)
	assert.Equal(t, "tool broke", team.Agents[1].Summary)
	assert.Equal(t, 15, tl.Steps[0].Nodes[0].Agents[0].PromptTokens+tl.Steps[0].Nodes[0].Agents[0].CompletionTokens)

	d, ok := trace.BuildAgent(run, evs, researcher.ID)
	require.True(t, ok)
	assert.Equal(t, "found it", d.Output)
	assert.Len(t, d.Snapshots, 1)
	assert.Equal(t, "search", d.ToolCalls[0].Name)

	run.Status = trace.StatusRunning
	tl = trace.BuildTimeline(run, evs)
	assert.Equal(t, trace.ItemRunning, tl.Steps[2].Nodes[0].Agents[0].Status, "while the run goes on")
}

// The answer is the answer channel of the final state; without one, the
// output of the last agent that ended with one.
func TestTimelineAnswer(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ended := func(seq int64, out string) trace.Event {
		payload, err := json.Marshal(agentevent.Ended{Agent: "writer", Output: out})
		require.NoError(t, err)
		return trace.Event{Seq: seq, Kind: agentevent.EventEnd, Path: "g/n/agent:writer", Time: at, Payload: payload}
	}
	events := []trace.Event{
		{Seq: 1, Kind: graph.EventRunStart.String(), Path: "g", Time: at},
		{Seq: 2, Kind: agentevent.EventStart, Path: "g/n/agent:writer", Time: at, Payload: json.RawMessage(`{"agent":"writer"}`)},
		ended(3, "first draft"),
		{Seq: 4, Kind: agentevent.EventStart, Path: "g/n/agent:writer", Time: at, Payload: json.RawMessage(`{"agent":"writer"}`)},
		ended(5, "# Final\n\nthe report"),
		{Seq: 6, Kind: agentevent.EventStart, Path: "g/n/agent:checker", Time: at, Payload: json.RawMessage(`{"agent":"checker"}`)},
		ended(7, ""),
	}
	tests := []struct {
		name  string
		final string
		want  string
	}{
		{"the answer channel", `{"answer":"**42**","other":"x"}`, "**42**"},
		{"an empty answer channel", `{"answer":"  "}`, "# Final\n\nthe report"},
		{"no final state", ``, "# Final\n\nthe report"},
		{"an answer that is not text", `{"answer":{"n":42}}`, "# Final\n\nthe report"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := trace.RunInfo{ID: "r", Graph: "g", Status: trace.StatusDone, FinalState: json.RawMessage(tt.final)}
			assert.Equal(t, tt.want, trace.BuildTimeline(run, events).Answer)
		})
	}
	assert.Empty(t, trace.BuildTimeline(trace.RunInfo{ID: "r", Graph: "g"}, events[:2]).Answer, "no agent ended")
}

func TestDescribeInput(t *testing.T) {
	for _, tt := range []struct{ raw, want string }{
		{`[{"channel":"question","value":"What is\n  2 + 3?"}]`, "question: What is 2 + 3?"},
		{`[{"channel":"input","value":"hi"},{"channel":"n","value":{"a":1}}]`, `input: hi; n: {"a":1}`},
		{``, ""},
		{`not json`, ""},
	} {
		assert.Equal(t, tt.want, trace.DescribeInput(json.RawMessage(tt.raw)), tt.raw)
	}
	long := `[{"channel":"q","value":"` + strings.Repeat("é", 200) + `"}]`
	assert.Equal(t, "q: "+strings.Repeat("é", 119)+"…", trace.DescribeInput(json.RawMessage(long)), "cut to 120 characters")
}
