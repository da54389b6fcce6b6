package workflows_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/factory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/store"
	smem "github.com/coorflow/coorflow/store/memory"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/window"
	"github.com/coorflow/coorflow/workflows"
)

// textTool is a Go tool that files name: it returns f of its text.
func textTool(t *testing.T, name, description string, f func(string) string) *tools.Registry {
	t.Helper()
	schema := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)
	reg, err := tools.NewRegistry(tools.Func(name, description, schema, func(ctx context.Context, args json.RawMessage) (string, error) {
		var a struct{ Text string }
		if err := json.Unmarshal(args, &a); err != nil {
			return "", err
		}
		return f(a.Text), nil
	}))
	require.NoError(t, err)
	return reg
}

// shout upper-cases its text.
func shout(t *testing.T) *tools.Registry {
	return textTool(t, "shout", "Upper-cases a text.", strings.ToUpper)
}

// reviewFuncs are the Go nodes of testdata/run/review_loop.yaml: the
// score rises by 0.2 with each revision.
func reviewFuncs(score func(revisions float64) float64) map[string]graph.NodeFunc {
	return map[string]graph.NodeFunc{
		"grade": func(ctx context.Context, s graph.State) (graph.Command, error) {
			rev, _ := s.Value("revisions")
			n, _ := rev.(float64)
			return graph.Update(workflows.Write("score", score(n))), nil
		},
		"revise": func(ctx context.Context, s graph.State) (graph.Command, error) {
			draft, _ := s.Value("draft")
			return graph.Update(workflows.Write("revisions", 1), workflows.Write("notes", "revised"),
				workflows.Write("draft", draft.(string)+" (revised)")), nil
		},
		"give_up": func(ctx context.Context, s graph.State) (graph.Command, error) { return graph.Command{}, nil },
	}
}

func runPath(t *testing.T, r *graph.Runnable, input []graph.Write) ([]string, graph.State, error) {
	t.Helper()
	var path []string
	var final graph.State
	for ev, err := range r.Stream(t.Context(), input) {
		if err != nil {
			return path, final, err
		}
		switch ev.Kind {
		case graph.EventNodeStart:
			path = append(path, ev.Node)
		case graph.EventRunEnd:
			final = ev.State
		}
	}
	return path, final, nil
}

func TestAFileRunsItsToolRouterConditionalEdgeAndGoNodesOnTypedState(t *testing.T) {
	f, err := workflows.Load("testdata/run/review_loop.yaml", workflows.WithTools(shout(t)),
		workflows.WithFuncs(reviewFuncs(func(n float64) float64 { return 0.5 + 0.2*n })))
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), workflows.Env{})
	require.NoError(t, err)
	in, err := f.Input(r, f.InputChannel(), "graphs")
	require.NoError(t, err)

	path, final, err := runPath(t, r, in)
	require.NoError(t, err)
	assert.Equal(t, []string{"write", "grade", "triage", "revise", "grade", "triage", "revise", "grade", "triage"}, path,
		"0.5 and 0.7 are revised, 0.9 ends the run")
	draft, _ := final.Value("draft")
	assert.Equal(t, "DRAFT ABOUT GRAPHS (revised) (revised)", draft)
	notes, _ := final.Value("notes")
	assert.Equal(t, []any{"revised", "revised"}, notes, "append channel")
	revisions, _ := final.Value("revisions")
	assert.InDelta(t, 2.0, revisions, 0, "sum channel")
}

func TestARouterReadsConfigValues(t *testing.T) {
	f, err := workflows.Load("testdata/run/review_loop.yaml", workflows.WithTools(shout(t)),
		workflows.WithFuncs(reviewFuncs(func(float64) float64 { return 0.1 })))
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), workflows.Env{})
	require.NoError(t, err)
	in, err := f.Input(r, "topic", "x")
	require.NoError(t, err)
	path, _, err := runPath(t, r, in)
	require.NoError(t, err)
	assert.Equal(t, []string{"write", "grade", "triage", "revise", "grade", "triage", "revise", "grade", "triage", "give_up"}, path,
		"config.max_revisions is 2")
}

func TestANodeThatWritesAValueItsChannelRejectsFailsWithTheChannelAndTheRule(t *testing.T) {
	f, err := workflows.Load("testdata/run/review_loop.yaml", workflows.WithTools(shout(t)),
		workflows.WithFuncs(reviewFuncs(func(float64) float64 { return 1.5 })))
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), workflows.Env{})
	require.NoError(t, err)
	in, err := f.Input(r, "topic", "x")
	require.NoError(t, err)
	_, _, err = runPath(t, r, in)
	assert.EqualError(t, err, `graph: node "grade" (step 1, attempt 1): workflows: node "grade" wrote a bad value: channel "score": must be <= 1 but found 1.5`)
}

func TestInputIsDecodedForItsChannelAndChecked(t *testing.T) {
	f, err := workflows.Load("testdata/run/review_loop.yaml", workflows.WithTools(shout(t)), workflows.WithFuncs(reviewFuncs(nil)))
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), workflows.Env{})
	require.NoError(t, err)
	cases := []struct {
		channel, text, err string
	}{
		{"topic", "any text at all", ""},
		{"score", "0.5", ""},
		{"score", "2", `workflows: channel "score": must be <= 1 but found 2`},
		{"score", "high", `workflows: channel "score" holds number values: give JSON (invalid character 'h' looking for beginning of value)`},
		{"nope", "x", `workflows: testdata/run/review_loop.yaml has no channel "nope"`},
	}
	for _, c := range cases {
		t.Run(c.channel+" "+c.text, func(t *testing.T) {
			ws, err := f.Input(r, c.channel, c.text)
			if c.err != "" {
				assert.EqualError(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Len(t, ws, 1)
			assert.Equal(t, c.channel, ws[0].Channel())
		})
	}
}

func TestAGoNodeWithoutItsFunctionIsAnErrorAtLoadWhenFunctionsAreGivenAndAtCompileOtherwise(t *testing.T) {
	got := problemsOf(t, "testdata/run/review_loop.yaml", workflows.WithTools(shout(t)),
		workflows.WithFuncs(map[string]graph.NodeFunc{"grade": nil, "revise": nil}))
	assert.Equal(t, []string{`testdata/run/review_loop.yaml:40:11: nodes.give_up.func: go function "give_up" is not registered (the program registers: grade, revise)`}, got)

	f, err := workflows.Load("testdata/run/review_loop.yaml", workflows.WithTools(shout(t)))
	require.NoError(t, err)
	_, err = f.Compile(t.Context(), workflows.Env{})
	assert.EqualError(t, err, `workflows: testdata/run/review_loop.yaml: node "grade": go function "grade" is not registered: a file with go nodes runs in a Go program that registers its functions (workflows.WithFuncs)`)
}

func TestASubgraphFileRunsAsANodeAndSharesChannelsByName(t *testing.T) {
	f, err := workflows.Load("testdata/run/parent.yaml", workflows.WithTools(shout(t)))
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), workflows.Env{Graph: []graph.Option{graph.WithSaver(memory.New())}})
	require.NoError(t, err)
	in, err := f.Input(r, "topic", "trees")
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), in, graph.Thread("t"))
	require.NoError(t, err)
	draft, _ := res.State.Value("draft")
	assert.Equal(t, "CHILD WROTE ABOUT TREES!", draft)
	assert.Contains(t, r.Mermaid(), `inner[["inner"]]`, "drawn as a subgraph")
}

func TestAnLLMNodeWritesStructuredOutputThatLaterTemplatesRead(t *testing.T) {
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{
		"summarize": {{Text: "Here it is:\n```json\n{\"title\": \"Trees\", \"points\": [\"roots\", \"leaves\"]}\n```"}},
		"headline":  {{Text: "<think>short</think>Trees, in two points"}},
	}})
	ms, err := llm.NewStatic(map[llm.Tier]llm.TierModel{llm.TierBasic: {Model: model, Profile: llm.Profile{Model: "m"}}})
	require.NoError(t, err)
	f, err := workflows.Load("testdata/run/summarize.yaml")
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), workflows.Env{Models: ms})
	require.NoError(t, err)
	in, err := f.Input(r, "text", "About trees.")
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), in)
	require.NoError(t, err)

	summary, _ := res.State.Value("summary")
	assert.Equal(t, map[string]any{"title": "Trees", "points": []any{"roots", "leaves"}}, summary)
	headline, _ := res.State.Value("headline")
	assert.Equal(t, "Trees, in two points", headline)
	assert.Contains(t, model.CallsFor("summarize")[0].Prompt(), "You summarize texts.\nSummarize: About trees.")
	assert.Contains(t, model.CallsFor("headline")[0].Prompt(), "Write a headline for Trees with 2 points.")
}

func TestAFileThatNeedsGoIsCheckedAndDrawnWithoutItButNotRun(t *testing.T) {
	got := problemsOf(t, "testdata/run/review_loop.yaml")
	assert.Equal(t, []string{`testdata/run/review_loop.yaml:16:3: tools.shout: unknown tool "shout" (the tools available are: python, http_fetch, web_search, ask_human, remember, recall); tools written in Go must be registered by the program that runs the file`}, got)

	f, err := workflows.Load("testdata/run/review_loop.yaml", workflows.WithUnregistered())
	require.NoError(t, err)
	assert.Equal(t, []string{"tool shout", "function grade", "function revise", "function give_up"}, f.Unregistered())
	_, err = f.Compile(t.Context(), workflows.Env{})
	assert.EqualError(t, err, "workflows: testdata/run/review_loop.yaml: tools.shout: the tool is not registered: the program that runs the file registers it (workflows.WithTools)")
	r, err := f.Compile(t.Context(), workflows.Env{Offline: true})
	require.NoError(t, err)
	assert.Contains(t, r.Mermaid(), "triage -.-> give_up")
	in, err := f.Input(r, "topic", "x")
	require.NoError(t, err)
	_, err = r.Invoke(t.Context(), in)
	assert.ErrorContains(t, err, "workflows: compiled offline (Env.Offline): it cannot run: tool shout")
}

func TestAPlannerWithoutNewAgentsPlansWithTheFilesWorkers(t *testing.T) {
	pl := map[string]any{"title": "Numbers", "thought": "t", "locale": "en-US", "has_enough_context": false, "new_agents_needed": []any{},
		"steps": []any{map[string]any{"id": "s1", "agent_name": "analyst", "title": "Add", "description": "Add 2 and 2.", "step_type": "processing", "need_search": false, "depends_on": []string{}}}}
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{
		"planner":  {jsonReply(t, pl)},
		"analyst":  {answerReply(t, "FOUR")},
		"reporter": {{Text: "# Four"}},
	}})
	f, err := workflows.Load("testdata/run/custom_worker.yaml")
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), workflows.Env{Models: staticModels(t, model)})
	require.NoError(t, err)
	path, _, err := runPath(t, r, graph.Input(nodes.Request.Set("What is 2+2?")))
	require.NoError(t, err)
	assert.Equal(t, []string{"planner", "review", "team", "analyst", "team", "planner", "reporter"}, path)
	assert.Contains(t, model.CallsFor("planner")[0].Prompt(), "- analyst: Analyses numbers.\n")
	assert.Contains(t, model.CallsFor("analyst")[0].Prompt(), "You analyse numbers and reason before you conclude.")
	assert.Contains(t, model.CallsFor("analyst")[0].ToolNames(), window.ReadContextName, "a worker's agent has a window, and read_context")
}

func TestATeamWithAFixedPlanRunsItsAgentsOnTheRequestWithoutAPlannerOrBuilder(t *testing.T) {
	f, err := workflows.Load("testdata/run/fixed_team.yaml")
	require.NoError(t, err)
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{
		"market_analyst": {stepAnswer(t, "city bikes sell best")},
		"researcher":     {stepAnswer(t, "buy a city bike")},
		"reporter":       {{Text: "# Report\nBuy a city bike."}},
	}})
	st := smem.New(store.Config{})
	r, err := f.Compile(t.Context(), workflows.Env{Models: models(t, model), Store: st})
	require.NoError(t, err)
	in, err := f.Input(r, f.InputChannel(), "bicycles in Lyon")
	require.NoError(t, err)
	path, final, err := runPath(t, r, in)
	require.NoError(t, err)
	assert.Equal(t, []string{"team", "reporter"}, path)
	assert.True(t, strings.HasPrefix(nodes.Answer.Get(final), "# Report\nBuy a city bike.\n\n## References\n"), nodes.Answer.Get(final))
	assert.Equal(t, []string{"market_analyst", "reporter", "researcher"}, model.Agents(), "no planner, builder or meta-prompt call")

	pl := nodes.PlanKey.Get(final)
	require.NotNil(t, pl)
	assert.Equal(t, "Bikes: bicycles in Lyon", pl.Title)
	assert.Equal(t, "en-GB", pl.Locale)
	assert.Equal(t, plan.StepResearch, pl.Step("s1").StepType, "research by default")
	assert.True(t, pl.Done())

	s1 := model.CallsFor("market_analyst")[0].Prompt()
	assert.Contains(t, s1, "You study one market at a time.", "the agent written in the file")
	assert.Contains(t, s1, "Study the market of bicycles in Lyon.", "the request reaches the step")
	assert.Contains(t, model.CallsFor("researcher")[0].Prompt(), "city bikes sell best", "s2 gets s1's result")
	assert.Contains(t, model.CallsFor("reporter")[0].Prompt(), "# Request\nbicycles in Lyon")

	list, err := factory.NewRegistry(st, "default").List(t.Context())
	require.NoError(t, err)
	for _, a := range list {
		assert.True(t, a.Builtin, "nothing was written to the registry: %s", a.Name)
	}
}
