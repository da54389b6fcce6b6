package longrun_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/openaitest"
	"github.com/coorflow/coorflow/nodes/react"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/board"
	"github.com/coorflow/coorflow/store/memory"
	"github.com/coorflow/coorflow/window"
)

// mechanisms selects the window's policies for a run.
type mechanisms struct {
	offload, steps, clear, summarize bool
}

func (m mechanisms) String() string {
	var on []string
	for _, x := range []struct {
		on   bool
		name string
	}{{m.offload, "offload"}, {m.steps, "steps"}, {m.clear, "clear"}, {m.summarize, "summarize"}} {
		if x.on {
			on = append(on, x.name)
		}
	}
	if len(on) == 0 {
		return "keep everything"
	}
	return strings.Join(on, " + ")
}

// clearing is the benchmark's setting of the new policy: with no known
// window, clear at 60,000 tokens, keeping the last 3 turns' results.
var clearing = window.ClearPolicy{FallbackTokens: 60_000, KeepTurns: 3}

// config returns the window configuration of m; every other setting is
// the default. The model's window is unknown (Budget{}), so nothing is
// cut to fit and each policy starts at its fallback threshold.
func (m mechanisms) config(bs *window.BoardStore) window.Config {
	cfg := window.Config{Offloader: bs,
		Offload: window.OffloadPolicy{Disabled: !m.offload},
		Steps:   window.StepsPolicy{Disabled: !m.steps},
		History: window.HistoryPolicy{Disabled: !m.summarize},
	}
	if m.clear {
		cfg.Clear = clearing
	} else {
		cfg.Clear.Disabled = true
	}
	return cfg
}

// outcome is what one run measured.
type outcome struct {
	mech        mechanisms
	calls       int
	prompt      int // prompt tokens reported over the wire, all calls
	cached      int // of which the server reported cached
	maxPrompt   int
	reuse       float64 // prefix reuse, token-weighted
	kept        float64 // share of each previous prompt repeated
	toolChanges int     // requests whose tool list changed
	reads       int     // read_context calls
	found       int
	viaReadCtx  int
	answers     map[int]string
	output      string
}

// meter observes what the agent sends and what the provider reports.
type meter struct {
	llms.Model
	mu     sync.Mutex
	prefix window.PrefixMeter
	cached int
	max    int
}

func (m *meter) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	resp, err := m.Model.GenerateContent(ctx, msgs, opts...)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.prefix.Observe("researcher", msgs)
	if err == nil {
		m.cached += llm.CachedInputTokens(resp)
		p, _ := llm.Usage(resp, msgs)
		m.max = max(m.max, p)
	}
	return resp, err
}

const systemPrompt = `You are a research agent. Work through the research plan with the search and fetch tools, one call per turn. ` +
	`Results you no longer need may be moved out of your context; the text in their place gives a reference you can read back with read_context. ` +
	`When the reviewer's questions arrive, answer each one from your research, reading back what you need.`

const taskText = `Compare storage engines under sustained load for the platform team: search broadly, fetch the site reports and archives, ` +
	`then fetch the reviewer's questions at ` + questionsURL + ` and answer them.`

// earlierSteps are the completed steps of the plan the agent works in.
func earlierSteps() []window.Step {
	var steps []window.Step
	for i := 1; i <= 8; i++ {
		id := fmt.Sprintf("s%d", i)
		steps = append(steps, window.Step{ID: id, Title: "Survey area " + id, Agent: "researcher", Confidence: 0.8,
			Result: document("step:"+id, 0)[:4_800], Summary: "Area " + id + " surveyed: three engines shortlisted.",
			Ref: "mission/run-1/outputs/steps/" + id})
	}
	return steps
}

// run runs the long task with m and returns what it measured.
func run(ctx context.Context, t testing.TB, m mechanisms) outcome {
	t.Helper()
	b, err := board.New(memory.New(store.Config{}), "alice", "run-1")
	require.NoError(t, err)
	bs := window.NewBoardStore(b, store.Viewer{Task: "t1", Agent: "researcher"})
	reg, err := toolbox(bs)
	require.NoError(t, err)

	model := &researcher{}
	srv := openaitest.NewFunc(model.respond)
	defer srv.Close()
	client, err := openai.New(openai.WithBaseURL(srv.BaseURL()), openai.WithToken("test"), openai.WithModel("gpt-4o"))
	require.NoError(t, err)
	mt := &meter{Model: client}

	w := window.New(m.config(bs))
	agent, err := react.New(react.Config{Name: "researcher", Model: mt, Info: llm.ModelInfo{Tier: "basic", Model: "gpt-4o"},
		SystemPrompt: systemPrompt, Tools: reg, MaxTurns: researchTurns + len(facts)*maxReads, Window: w})
	require.NoError(t, err)

	res, err := agent.Run(ctx, react.Task{Input: taskText,
		Parts: []window.Part{{Name: "plan", Kind: window.KindSteps, Steps: earlierSteps()}}})
	require.NoError(t, err)

	o := outcome{mech: m, calls: res.Usage.Calls, prompt: res.Usage.PromptTokens, cached: mt.cached, maxPrompt: mt.max,
		reuse: mt.prefix.Share(), kept: mt.prefix.Kept(), toolChanges: model.toolChanges, reads: model.reads, answers: map[int]string{}, output: res.Output}
	for _, q := range model.questions {
		o.answers[q.site] = q.answer
		for _, f := range facts {
			if f.site == q.site && q.answer == f.code {
				o.found++
				if q.how == "read_context" {
					o.viaReadCtx++
				}
			}
		}
	}
	return o
}
