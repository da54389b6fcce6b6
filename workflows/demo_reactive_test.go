package workflows_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/store"
	smem "github.com/coorflow/coorflow/store/memory"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/workflows"
)

// demoRun is what a run of a built-in on the reactive demo showed.
type demoRun struct {
	plan    *plan.Plan
	answer  string
	created []string
	calls   map[string]int // model calls per agent label
	tools   []string
}

// runBuiltinOnDemo runs a built-in workflow without a provider, so on the
// reactive demo, with each plan accepted, and the python tool run on this
// machine.
func runBuiltinOnDemo(t *testing.T, name, input string) demoRun {
	t.Helper()
	f, err := workflows.Builtin(name)
	require.NoError(t, err)
	ms, err := f.Resolve(t.Context(), workflows.ModelOptions{Getenv: env(nil)})
	require.NoError(t, err)
	require.True(t, ms.Demo, "no key: a demo")
	assert.Equal(t, "reactive demo model (built-in; answers from each request, offline)", ms.Describe())
	r, err := f.Compile(t.Context(), workflows.Env{Models: ms.Models, Getenv: env(nil), AutoAccept: true,
		Store: smem.New(store.Config{}), Owner: "demo", Python: &tools.PythonConfig{Sandbox: tools.SandboxConfig{Mode: tools.SandboxOff}},
		Graph: []graph.Option{graph.WithSaver(memory.New())}})
	require.NoError(t, err)
	run := demoRun{calls: map[string]int{}}
	var final graph.State
	for ev, err := range r.Stream(t.Context(), graph.Input(nodes.Input.Set(input)), graph.Thread("t1")) {
		require.NoError(t, err)
		switch d := ev.Data.(type) {
		case agentevent.Created:
			run.created = append(run.created, d.Agent)
		case llm.ModelCall:
			if !d.Replayed {
				run.calls[d.Agent]++
			}
		case tools.CallEvent:
			run.tools = append(run.tools, d.Name)
		}
		if ev.Kind == graph.EventRunEnd {
			final = ev.State
		}
	}
	require.NotNil(t, final, "the run ended")
	run.plan, run.answer = nodes.PlanKey.Get(final), nodes.Answer.Get(final)
	require.NotNil(t, run.plan)
	for _, s := range run.plan.Steps {
		assert.Equal(t, plan.StepDone, s.Result.Status, s.ID)
	}
	return run
}

func TestTheBuiltInCoorRunsOfflineAndEachRequestFlowsThroughTheTeam(t *testing.T) {
	rust := runBuiltinOnDemo(t, "coor", "Compare Rust and Go for command-line tools")
	bread := runBuiltinOnDemo(t, "coor", "How do I bake sourdough bread at home?")

	assert.Equal(t, "Compare Rust and Go for command-line tools", rust.plan.Title)
	assert.ElementsMatch(t, []string{"rust_go_researcher", "rust_go_analyst"}, rust.created, "the factory built agents named for the topic")
	assert.Equal(t, "How do I bake sourdough bread at home", bread.plan.Title)
	assert.ElementsMatch(t, []string{"bake_sourdough_researcher", "bake_sourdough_analyst"}, bread.created)
	for _, s := range rust.plan.Steps {
		assert.Contains(t, s.Title, "Rust and Go", s.ID)
		assert.Contains(t, s.Result.Summary, "Rust and Go", "%s: the agent answered its own step", s.ID)
	}
	assert.Contains(t, rust.answer, "**Your request:** Compare Rust and Go for command-line tools")
	assert.Contains(t, rust.answer, "Step s3: Conclusion: Compare Rust and Go for command-line tools")
	assert.NotContains(t, rust.answer, "sourdough")
	assert.Contains(t, bread.answer, "**Your request:** How do I bake sourdough bread at home")
	assert.NotContains(t, bread.answer, "Rust")

	assert.Equal(t, map[string]int{
		"coordinator": 1, "planner": 1, "reporter": 1,
		"builder:rust_go_researcher": 1, "builder:rust_go_analyst": 1,
		"metaprompt:rust_go_researcher": 1, "metaprompt:rust_go_analyst": 1,
		"rust_go_researcher": 2, // s1 and s3
		"rust_go_analyst":    2, // s2: a python call, then the answer
	}, rust.calls, "every structured answer was valid the first time: no repair calls")
	assert.Equal(t, []string{"python"}, rust.tools, "the analyst ran python; nothing reached the network")
	assert.Contains(t, rust.answer, "The python tool printed: `exit code: 0", "the reporter read s2's full output, tool result included")
}

func TestTheReactiveDemoIsDeterministic(t *testing.T) {
	a := runBuiltinOnDemo(t, "research", "Estimate the checkpoints per second of SQLite on a Raspberry Pi")
	b := runBuiltinOnDemo(t, "research", "Estimate the checkpoints per second of SQLite on a Raspberry Pi")
	assert.Equal(t, a.answer, b.answer, "the same input gives the same report, byte for byte")
	pa, _ := json.Marshal(a.plan)
	pb, _ := json.Marshal(b.plan)
	assert.Equal(t, string(pa), string(pb))
	assert.Empty(t, a.created, "research has no factory: the plan uses its researcher and coder")
	assert.Equal(t, []string{"researcher", "coder", "researcher"}, []string{a.plan.Steps[0].AgentName, a.plan.Steps[1].AgentName, a.plan.Steps[2].AgentName})
	assert.Contains(t, a.answer, "SQLite on a Raspberry Pi")
}

// demoCall calls the reactive demo of a built-in as the given agent.
func demoCall(t *testing.T, agent string, msgs []llms.MessageContent, opts ...llms.CallOption) *llms.ContentChoice {
	t.Helper()
	f, err := workflows.Builtin("coor")
	require.NoError(t, err)
	resp, err := f.ReactiveDemo().GenerateContent(llm.WithAgent(t.Context(), agent), msgs, opts...)
	require.NoError(t, err)
	return resp.Choices[0]
}

func TestTheReactiveDemoAnswersTheLatestRequestAndTheReviewFeedback(t *testing.T) {
	sys := llms.TextParts(llms.ChatMessageTypeSystem, "You plan.\n\n# Available agents\n- researcher: finds facts\n- coder: runs code\n")
	turn2 := llms.TextParts(llms.ChatMessageTypeHuman, "# Earlier turns\n## Turn 1 request\nCompare SQLite and PostgreSQL\n\n"+
		"# Request\nNow compare DuckDB too\n\nLocale: en-US\n")
	var p struct {
		Title   string `json:"title"`
		Thought string `json:"thought"`
		Steps   []struct {
			Title       string `json:"title"`
			Description string `json:"description"`
		} `json:"steps"`
	}
	require.NoError(t, json.Unmarshal([]byte(demoCall(t, "planner", []llms.MessageContent{sys, turn2}).Content), &p))
	assert.Equal(t, "Now compare DuckDB too", p.Title, "a second turn plans its own request, not the first")

	feedback := llms.TextParts(llms.ChatMessageTypeHuman, "# Request\nCompare SQLite and PostgreSQL\n\nLocale: en-US\n\n"+
		"# Your previous plan\n{\"title\":\"Compare SQLite and PostgreSQL\"}\n\n# The reviewer's feedback on it\nalso look at fsync cost on macOS\n")
	require.NoError(t, json.Unmarshal([]byte(demoCall(t, "planner", []llms.MessageContent{sys, feedback}).Content), &p))
	assert.Equal(t, "Compare SQLite and PostgreSQL (revised after review)", p.Title)
	assert.Contains(t, p.Thought, `The reviewer asked: "also look at fsync cost on macOS"`)
	assert.Equal(t, "Facts: Compare SQLite and PostgreSQL, as the review asked: also look at fsync cost on macOS", p.Steps[0].Title)

	hello := demoCall(t, "coordinator", []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Hello!")})
	assert.Empty(t, hello.ToolCalls, "a greeting is answered, not handed off")
	assert.True(t, strings.HasPrefix(hello.Content, "Hello! I am coorflow's offline demo model."))
}

func TestAFileWithItsOwnDemoScriptKeepsIt(t *testing.T) {
	f, err := workflows.Load("testdata/run/with_demo.yaml")
	require.NoError(t, err)
	ms, err := f.Resolve(t.Context(), workflows.ModelOptions{Getenv: env(nil)})
	require.NoError(t, err)
	assert.Equal(t, "scripted demo model (testdata/run/demo.yaml)", ms.Describe(), "the script wins over the reactive demo")

	coor, err := workflows.Builtin("coor")
	require.NoError(t, err)
	ms, err = coor.Resolve(t.Context(), workflows.ModelOptions{Getenv: env(map[string]string{"OPENAI_API_KEY": "sk"}), Demo: true})
	require.NoError(t, err)
	assert.True(t, ms.Demo, "--demo runs a built-in on the reactive demo even with a key")
	assert.Nil(t, ms.Resolved(), "a demo has no provider table")
}

func TestAReviewsFeedbackGetsARevisedPlanFromTheReactiveDemo(t *testing.T) {
	src, err := workflows.BuiltinSource("coor")
	require.NoError(t, err)
	src = []byte(strings.Replace(string(src), "max_iterations: 1", "max_iterations: 2", 1))
	f, err := workflows.Parse("coor.yaml", src)
	require.NoError(t, err)
	ms, err := f.Resolve(t.Context(), workflows.ModelOptions{Getenv: env(nil)})
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), workflows.Env{Models: ms.Models, Getenv: env(nil), Store: smem.New(store.Config{}), Owner: "demo",
		Graph: []graph.Option{graph.WithSaver(memory.New())}})
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), graph.Input(nodes.Input.Set("Compare SQLite and PostgreSQL")), graph.Thread("t"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	assert.Equal(t, "Compare SQLite and PostgreSQL", res.Interrupts[0].Payload.(nodes.ReviewRequest).Plan.Title)

	res, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.Resume("also look at fsync cost on macOS"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status, "the revised plan waits for review")
	revised := res.Interrupts[0].Payload.(nodes.ReviewRequest).Plan
	assert.Equal(t, "Compare SQLite and PostgreSQL (revised after review)", revised.Title)
	assert.Contains(t, revised.Thought, `The reviewer asked: "also look at fsync cost on macOS"`)
	assert.Equal(t, "Facts: Compare SQLite and PostgreSQL, as the review asked: also look at fsync cost on macOS", revised.Steps[0].Title)
}
