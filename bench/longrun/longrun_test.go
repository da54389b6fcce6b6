package longrun_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/coorflow/coorflow/factory"
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

// setup is one configuration the long run is measured with.
type setup struct {
	name string
	// mech selects policies, every other setting at its default, on a
	// window whose size is budget's; nil: the product's defaults, as
	// factory.GiveWindow gives an agent its window.
	mech   *mechanisms
	budget window.Budget
	// noWindow sends the conversation as it is.
	noWindow bool
}

// The model's real window: the agent is a gpt-4o agent.
var realWindow = window.Budget{MaxInputTokens: llm.MaxInputTokens(benchModel), ReserveForOutput: 4096}

const (
	benchModel      = "gpt-4o"
	summarizerModel = "gpt-4o-mini" // the basic tier's model, which summarizes
)

// The three baselines the mechanisms are measured against.
var (
	// unbounded keeps everything and sends it all, however large: the
	// most a model with an unlimited window would see (gpt-4o would
	// refuse most of these calls).
	unbounded = setup{name: "unbounded (keep everything)", noWindow: true}
	// truncated keeps everything that fits in the model's real window
	// and cuts the oldest history to fit: what an agent without context
	// management can send.
	truncated = setup{name: "truncated to the 128k window", mech: &mechanisms{}, budget: realWindow}
	// defaults is the product: the window a team's agent or a react node
	// gets, every policy at its default, on the model's real window, with
	// a summarizer model.
	defaults = setup{name: "product defaults"}
)

// config returns the window configuration of m; every other setting is
// the default.
func (m mechanisms) config(bs *window.BoardStore) window.Config {
	cfg := window.Config{Offloader: bs,
		Offload: window.OffloadPolicy{Disabled: !m.offload},
		Steps:   window.StepsPolicy{Disabled: !m.steps},
		History: window.HistoryPolicy{Disabled: !m.summarize},
		Clear:   window.ClearPolicy{Disabled: !m.clear},
	}
	return cfg
}

// outcome is what one run measured.
type outcome struct {
	name        string
	calls       int
	prompt      int     // prompt tokens reported over the wire, all calls
	cached      int     // of which the server reported cached
	weighted    float64 // prompt tokens weighted by price, in uncached gpt-4o input tokens: the agent's (a cached one counts CachedInput/Input) and the summarizer's
	sumPrompt   int     // the summarizer's prompt tokens
	sumOut      int     // the summarizer's completion tokens
	sumCalls    int
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

// meter observes what the agent (or the summarizer) sends and what the
// provider reports.
type meter struct {
	llms.Model
	mu     sync.Mutex
	prefix window.PrefixMeter
	calls  int
	prompt int
	out    int
	cached int
	max    int
}

func (m *meter) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	resp, err := m.Model.GenerateContent(ctx, msgs, opts...)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.prefix.Observe("researcher", msgs)
	if err == nil {
		m.calls++
		m.cached += llm.CachedInputTokens(resp)
		p, c := llm.Usage(resp, msgs)
		m.prompt += p
		m.out += c
		m.max = max(m.max, p)
	}
	return resp, err
}

// summarizer is the summarizer model's side: it answers with a short
// summary that keeps the references it is sent (offloaded results,
// archives), as a summarizer told to keep them does.
func summarizer(req openaitest.ChatRequest) openaitest.Response {
	var refs []string
	seen := map[string]bool{}
	for _, m := range req.Messages {
		for _, r := range refRE.FindAllString(m.Text(), -1) {
			if !seen[r] && len(refs) < 40 {
				seen[r] = true
				refs = append(refs, r)
			}
		}
	}
	return openaitest.Text("The agent searched and fetched pages on storage engines under load; " +
		"results are kept at: " + strings.Join(refs, ", ") + ".")
}

var refRE = regexp.MustCompile(`mission/\S+?/outputs/[^\s,;\])]+`)

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

// run runs the long task with su and returns what it measured.
func run(ctx context.Context, t testing.TB, su setup) outcome {
	t.Helper()
	b, err := board.New(memory.New(store.Config{}), "alice", "run-1")
	require.NoError(t, err)
	bs := window.NewBoardStore(b, store.Viewer{Task: "t1", Agent: "researcher"})
	reg, err := toolbox(bs)
	require.NoError(t, err)

	model := &researcher{}
	srv := openaitest.NewFunc(model.respond)
	defer srv.Close()
	client, err := openai.New(openai.WithBaseURL(srv.BaseURL()), openai.WithToken("test"), openai.WithModel(benchModel))
	require.NoError(t, err)
	mt := &meter{Model: client}
	sumSrv := openaitest.NewFunc(summarizer)
	defer sumSrv.Close()
	sumClient, err := openai.New(openai.WithBaseURL(sumSrv.BaseURL()), openai.WithToken("test"), openai.WithModel(summarizerModel))
	require.NoError(t, err)
	sm := &meter{Model: sumClient}

	cfg := react.Config{Name: "researcher", Model: mt, Info: llm.ModelInfo{Tier: "basic", Model: benchModel},
		SystemPrompt: systemPrompt, Tools: reg, MaxTurns: researchTurns + len(facts)*maxReads}
	switch {
	case su.noWindow:
	case su.mech != nil:
		wc := su.mech.config(bs)
		wc.Summarizer = sm
		cfg.Window, cfg.Budget = window.New(wc), su.budget
	default:
		require.NoError(t, factory.GiveWindow(&cfg, window.Config{}, bs, sm, llm.MaxInputTokens(benchModel)))
	}
	agent, err := react.New(cfg)
	require.NoError(t, err)

	res, err := agent.Run(ctx, react.Task{Input: taskText,
		Parts: []window.Part{{Name: "plan", Kind: window.KindSteps, Steps: earlierSteps()}}})
	require.NoError(t, err)

	price, ok := llm.LookupPrice(llm.ProviderOpenAI, benchModel)
	require.True(t, ok)
	sumPrice, ok := llm.LookupPrice(llm.ProviderOpenAI, summarizerModel)
	require.True(t, ok)
	o := outcome{name: su.name, calls: res.Usage.Calls, prompt: res.Usage.PromptTokens, cached: mt.cached, maxPrompt: mt.max,
		sumPrompt: sm.prompt, sumOut: sm.out, sumCalls: sm.calls,
		reuse: mt.prefix.Share(), kept: mt.prefix.Kept(), toolChanges: model.toolChanges, reads: model.reads, answers: map[int]string{}, output: res.Output}
	o.weighted = float64(o.prompt-o.cached) + float64(o.cached)*price.CachedInput/price.Input +
		float64(sm.prompt-sm.cached)*sumPrice.Input/price.Input + float64(sm.cached)*sumPrice.CachedInput/price.Input
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
