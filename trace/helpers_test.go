package trace_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
	"go.uber.org/goleak"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes/react"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/trace"
	"github.com/coorflow/coorflow/trace/memory"
	"github.com/coorflow/coorflow/window"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	questionKey = graph.NewKey[string]("question")
	answerKey   = graph.NewKey[string]("answer")
	reportKey   = graph.NewKey[string]("report")
)

const (
	defaultSystem = "You solve arithmetic with tools."
	agentPath     = "calc/solve/agent:solver"
)

// calc describes the test workflow: node solve runs the ReAct agent
// "solver", which may call the tool add, on the question; node report
// writes the answer up.
type calc struct {
	system string
	// offset is added to every sum add returns (0: a correct tool).
	offset float64
}

var addSchema = json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)

type addArgs struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

// build compiles the workflow with model answering the agent. Every
// model call goes through a window, whose snapshot is published.
func (c calc) build(t *testing.T, model llms.Model) *graph.Runnable {
	t.Helper()
	if c.system == "" {
		c.system = defaultSystem
	}
	add := tools.Typed("add", "Adds two numbers.", addSchema, func(ctx context.Context, a addArgs) (string, error) {
		return fmt.Sprint(a.A + a.B + c.offset), nil
	})
	reg, err := tools.NewRegistry(add)
	require.NoError(t, err)
	agent, err := react.New(react.Config{
		Name: "solver", Model: model, Window: window.New(window.Config{}), Budget: window.Budget{MaxInputTokens: 8000},
		Info: llm.ModelInfo{Tier: "basic", Model: "scripted"}, SystemPrompt: c.system, Tools: reg,
	})
	require.NoError(t, err)
	g := graph.New("calc", questionKey, answerKey, reportKey)
	g.AddNode("solve", func(ctx context.Context, s graph.State) (graph.Command, error) {
		res, err := agent.Run(ctx, react.Task{Input: "Question: " + questionKey.Get(s), Run: "q1"})
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(answerKey.Set(res.Output)), nil
	})
	g.AddNode("report", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(reportKey.Set("Answer: " + answerKey.Get(s))), nil
	})
	g.AddEdge(graph.Start, "solve")
	g.AddEdge("solve", "report")
	g.AddEdge("report", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

// script answers the solver: a call of add, then the answer.
func script() *scripted.Model {
	return scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"solver": {
		{ToolCalls: []scripted.ToolCall{{Name: "add", Arguments: `{"a":2,"b":3}`}}},
		{Text: "2 + 3 = 5", Reasoning: "I added the numbers with the tool."},
	}}})
}

// record runs wf on question and records it as run id in a new memory
// store.
func record(t *testing.T, wf *graph.Runnable, id, question string, cfg trace.RecorderConfig) (trace.Store, error) {
	t.Helper()
	store := memory.New()
	rec := trace.NewRecorder(store, cfg)
	t.Cleanup(func() { require.NoError(t, rec.Close(context.Background())) })
	input := graph.Input(questionKey.Set(question))
	in, err := trace.EncodeInput(input)
	require.NoError(t, err)
	var runErr error
	for _, err := range rec.Record(t.Context(), trace.RunInfo{ID: id, Graph: wf.Name(), Workflow: "calc", Input: in},
		wf.Stream(t.Context(), input)) {
		if err != nil {
			runErr = err
		}
	}
	return store, runErr
}

// events returns the run's events of kind.
func events(t *testing.T, s trace.Store, id, kind string, bodies bool) []trace.Event {
	t.Helper()
	evs, err := s.Events(t.Context(), id, trace.EventQuery{Kinds: []string{kind}, Bodies: bodies})
	require.NoError(t, err)
	return evs
}
