package react_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes/react"
	"github.com/coorflow/coorflow/tools"
)

var addSchema = json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"additionalProperties":false}`)

type addArgs struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

// toolbox returns a registry with add, capital and boom; wait, when set,
// runs inside add and capital (to prove they run at the same time).
func toolbox(t *testing.T, calls *atomic.Int32, wait func(context.Context) error) *tools.Registry {
	t.Helper()
	add := tools.Typed("add", "Adds two numbers.", addSchema, func(ctx context.Context, a addArgs) (string, error) {
		calls.Add(1)
		if wait != nil {
			if err := wait(ctx); err != nil {
				return "", err
			}
		}
		return strings.TrimRight(strings.TrimRight(jsonNumber(a.A+a.B), "0"), "."), nil
	})
	capital := tools.Func("capital", "Returns the capital of a country.",
		json.RawMessage(`{"type":"object","properties":{"country":{"type":"string"}},"required":["country"]}`),
		func(ctx context.Context, args json.RawMessage) (string, error) {
			calls.Add(1)
			if wait != nil {
				if err := wait(ctx); err != nil {
					return "", err
				}
			}
			return "Paris", nil
		})
	boom := tools.Func("boom", "Always panics.", nil, func(ctx context.Context, args json.RawMessage) (string, error) {
		panic("the tool exploded")
	})
	reg, err := tools.NewRegistry(add, capital, boom)
	require.NoError(t, err)
	return reg
}

func jsonNumber(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}

func agent(t *testing.T, model llms.Model, reg *tools.Registry, maxTurns int) *react.Agent {
	t.Helper()
	a, err := react.New(react.Config{
		Name: "solver", Model: model, Info: llm.ModelInfo{Tier: "basic", Model: "scripted"},
		SystemPrompt: "You solve problems with tools.", Tools: reg, MaxTurns: maxTurns,
	})
	require.NoError(t, err)
	return a
}

func TestReActRunsParallelToolCallsAndAnswers(t *testing.T) {
	var calls atomic.Int32
	barrier := scripted.NewBarrier(2) // opens only when both tools are running
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"solver": {
		{ToolCalls: []scripted.ToolCall{
			{Name: "add", Arguments: `{"a": 2, "b": 3}`},
			{Name: "capital", Arguments: `{"country": "France"}`},
		}},
		{Text: "2+3 is 5 and the capital is Paris."},
	}}})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res, err := agent(t, model, toolbox(t, &calls, barrier.Wait), 0).Run(ctx, react.Task{Input: "Add 2 and 3; capital of France?"})
	require.NoError(t, err)
	assert.Equal(t, "2+3 is 5 and the capital is Paris.", res.Output)
	assert.Equal(t, 2, res.Turns)
	assert.Equal(t, 2, res.ToolCalls)
	assert.False(t, res.HitTurnLimit)
	assert.Equal(t, 2, res.Usage.Calls)
	assert.Positive(t, res.Usage.PromptTokens)

	second := model.CallsFor("solver")[1].Messages
	require.Len(t, second, 5, "system, task, assistant with tool calls, two tool results")
	assert.Equal(t, llms.ChatMessageTypeSystem, second[0].Role)
	r1 := second[3].Parts[0].(llms.ToolCallResponse)
	r2 := second[4].Parts[0].(llms.ToolCallResponse)
	assert.Equal(t, "add", r1.Name)
	assert.Equal(t, "5", r1.Content)
	assert.Equal(t, "capital", r2.Name)
	assert.Equal(t, "Paris", r2.Content)
	assert.Equal(t, []string{"add", "boom", "capital"}, model.CallsFor("solver")[0].ToolNames())
}

func TestReActAtTheTurnLimitAsksForTheBestAnswerWithoutTools(t *testing.T) {
	var calls atomic.Int32
	loop := scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "add", Arguments: `{"a":1,"b":1}`}}}
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"solver": {
		loop, loop, {Text: "Best I have: 2."},
	}}})
	res, err := agent(t, model, toolbox(t, &calls, nil), 2).Run(t.Context(), react.Task{Input: "Keep adding."})
	require.NoError(t, err, "the limit is not an error")
	assert.True(t, res.HitTurnLimit)
	assert.Equal(t, "Best I have: 2.", res.Output)
	assert.Equal(t, 3, res.Turns)
	last := model.CallsFor("solver")[2]
	assert.Empty(t, last.ToolNames(), "the last call offers no tools")
	assert.Contains(t, last.Prompt(), "You have used all 2 of your turns with tools.")
}

func TestReActRecoversFromModelMistakesAndToolFailures(t *testing.T) {
	var calls atomic.Int32
	reg := toolbox(t, &calls, nil)
	// A model that invents tools and arguments freely: each mistake reaches
	// it as a tool result it can act on.
	inventive := &inventor{replies: []llms.ContentChoice{
		{ToolCalls: []llms.ToolCall{{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "teleport", Arguments: `{"to":"Mars"}`}}}},
		{ToolCalls: []llms.ToolCall{{ID: "c2", Type: "function", FunctionCall: &llms.FunctionCall{Name: "add", Arguments: `{"a":"two","b":3}`}}}},
		{ToolCalls: []llms.ToolCall{{ID: "c3", Type: "function", FunctionCall: &llms.FunctionCall{Name: "boom", Arguments: `{}`}}}},
		{Content: "Done despite everything."},
	}}
	res, err := agent(t, inventive, reg, 0).Run(t.Context(), react.Task{Input: "Try things."})
	require.NoError(t, err)
	assert.Equal(t, "Done despite everything.", res.Output)
	texts := toolTexts(res.Messages)
	require.Len(t, texts, 3)
	assert.Contains(t, texts[0], `"teleport"`)
	assert.Contains(t, texts[0], "add, boom, capital", "the model is told which tools exist")
	assert.Contains(t, texts[1], "a: expected number")
	assert.Contains(t, texts[2], "the tool exploded")
	assert.Equal(t, int32(0), calls.Load(), "no tool ran with bad arguments")
}

func toolTexts(msgs []llms.MessageContent) []string {
	var out []string
	for _, m := range msgs {
		if m.Role == llms.ChatMessageTypeTool {
			out = append(out, m.Parts[0].(llms.ToolCallResponse).Content)
		}
	}
	return out
}

// inventor is a model that replies from a fixed list, tool calls included,
// whatever tools it was offered.
type inventor struct {
	replies []llms.ContentChoice
	n       int
}

func (m *inventor) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return "", errors.New("not used")
}

func (m *inventor) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	if m.n >= len(m.replies) {
		return nil, errors.New("inventor: out of replies")
	}
	c := m.replies[m.n]
	m.n++
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{&c}}, nil
}

func TestReActInsideANodeIsJournaledAcrossAnInterrupt(t *testing.T) {
	var toolRuns atomic.Int32
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"solver": {
		{ToolCalls: []scripted.ToolCall{{Name: "add", Arguments: `{"a":20,"b":22}`}}},
		{Text: "The answer is 42."},
	}}})
	a := agent(t, model, toolbox(t, &toolRuns, nil), 0)
	answer := graph.NewKey[string]("answer")
	question := graph.NewKey[string]("question")
	g := graph.New("agentic", question, answer)
	g.AddNode("solve", func(ctx context.Context, s graph.State) (graph.Command, error) {
		res, err := a.Run(ctx, react.Task{Input: question.Get(s)})
		if err != nil {
			return graph.Command{}, err
		}
		ok, err := graph.InterruptAs[bool](ctx, "publish "+res.Output+"?")
		if err != nil {
			return graph.Command{}, err
		}
		if !ok {
			return graph.Update(answer.Set("withheld")), nil
		}
		return graph.Update(answer.Set(res.Output)), nil
	})
	g.AddEdge(graph.Start, "solve")
	g.AddEdge("solve", graph.End)
	r, err := g.Compile(graph.WithSaver(memory.New()))
	require.NoError(t, err)

	var kinds []string
	for ev, err := range r.Stream(t.Context(), graph.Input(question.Set("20+22?")), graph.Thread("t")) {
		require.NoError(t, err)
		switch ev.Data.(type) {
		case llm.Token, llm.ModelCall, tools.CallEvent, tools.ResultEvent, agentevent.Started, agentevent.Ended:
			kinds = append(kinds, ev.Name()+" "+ev.Path)
		}
	}
	assert.Contains(t, kinds, "tool_call agentic/solve/agent:solver")
	assert.Contains(t, kinds, "tool_result agentic/solve/agent:solver")
	assert.Contains(t, kinds, "token agentic/solve/agent:solver")
	assert.Equal(t, "agent_start agentic/solve/agent:solver", kinds[0])
	assert.Equal(t, "agent_end agentic/solve/agent:solver", kinds[len(kinds)-1])

	var replayed []llm.ModelCall
	for ev, err := range r.Stream(t.Context(), nil, graph.Thread("t"), graph.Resume(true)) {
		require.NoError(t, err)
		if mc, ok := ev.Data.(llm.ModelCall); ok {
			replayed = append(replayed, mc)
		}
	}
	snap, err := r.State(t.Context(), "t")
	require.NoError(t, err)
	assert.Equal(t, "The answer is 42.", answer.Get(snap.State))
	assert.Equal(t, int32(1), toolRuns.Load(), "the tool did not run again")
	assert.Len(t, model.Calls(), 2, "the model was not called again (its script would have run out)")
	require.Len(t, replayed, 2)
	assert.True(t, replayed[0].Replayed)
	assert.Equal(t, "solver", replayed[0].Agent)
	assert.Len(t, replayed[0].Hash, 16)
	assert.Contains(t, string(replayed[0].Request), `"text":"20+22?"`)
	assert.Contains(t, string(replayed[1].Response), "The answer is 42.")
	assert.NotEqual(t, replayed[0].Hash, replayed[1].Hash)
}

func TestTextNodeAndConfigErrors(t *testing.T) {
	_, err := react.New(react.Config{Name: "x"})
	assert.EqualError(t, err, `react: no model: ReAct agent "x" needs a model`)
	assert.ErrorIs(t, err, react.ErrNoModel)

	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"solver": {{Text: "hi there"}}}})
	a := agent(t, model, nil, 0)
	in, out := graph.NewKey[string]("in"), graph.NewKey[string]("out")
	g := graph.New("text", in, out)
	g.AddNode("agent", a.TextNode(in, out))
	g.AddEdge(graph.Start, "agent")
	g.AddEdge("agent", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), graph.Input(in.Set("hello")))
	require.NoError(t, err)
	assert.Equal(t, "hi there", out.Get(res.State))
	assert.Empty(t, model.CallsFor("solver")[0].ToolNames())
}
