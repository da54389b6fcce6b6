package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/factory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/chatuitest"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/server"
	coorflowfiles "github.com/coorflow/coorflow/workflows"
)

// tokenGate holds one agent's streamed reply after its first chunks
// until released, so a test sees the reply part-way, deterministically.
type tokenGate struct {
	agent   string
	after   int           // chunks let through before holding
	held    chan struct{} // closed when the reply is held
	release chan struct{} // closed to let it go on
	mu      sync.Mutex
	sent    strings.Builder // the chunks let through before holding
	once    sync.Once       // closes release
	// holdOnce closes held: a second reply of the agent (a retry) is
	// held too, and says nothing.
	holdOnce sync.Once
}

func newTokenGate(t *testing.T, agent string, after int) *tokenGate {
	g := &tokenGate{agent: agent, after: after, held: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

func (g *tokenGate) open() { g.once.Do(func() { close(g.release) }) }

// partial is the text let through before the hold.
func (g *tokenGate) partial() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sent.String()
}

// gatedModels serves the tiers of models, each model's replies to the
// gate's agent held by the gate.
type gatedModels struct {
	factory.Models
	gate *tokenGate
}

func (m gatedModels) Model(t llm.Tier) (llms.Model, error) {
	inner, err := m.Models.Model(t)
	if err != nil {
		return nil, err
	}
	return gatedModel{inner: inner, gate: m.gate}, nil
}

type gatedModel struct {
	inner llms.Model
	gate  *tokenGate
}

func (m gatedModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

// GenerateContent streams the gate's agent's chunks through the gate:
// the first ones, then a wait for the release.
func (m gatedModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	if llm.AgentFrom(ctx) != m.gate.agent {
		return m.inner.GenerateContent(ctx, msgs, opts...)
	}
	var co llms.CallOptions
	for _, o := range opts {
		o(&co)
	}
	next := co.StreamingFunc
	if next == nil {
		return m.inner.GenerateContent(ctx, msgs, opts...)
	}
	n := 0
	gated := func(ctx context.Context, chunk []byte) error {
		if n == m.gate.after {
			m.gate.holdOnce.Do(func() { close(m.gate.held) })
			select {
			case <-m.gate.release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		n++
		if n <= m.gate.after {
			m.gate.mu.Lock()
			m.gate.sent.Write(chunk)
			m.gate.mu.Unlock()
		}
		return next(ctx, chunk)
	}
	return m.inner.GenerateContent(ctx, msgs, append(opts, llms.WithStreamingFunc(gated))...)
}

// coorForChat is examples/coor asking for a review of its plan, on its
// demo script, the reporter's reply held by gate.
func coorForChat(t *testing.T, gate *tokenGate) *graph.Runnable {
	t.Helper()
	src, err := os.ReadFile("../examples/coor/workflow.yaml")
	require.NoError(t, err)
	demo, err := os.ReadFile("../examples/coor/demo.yaml")
	require.NoError(t, err)
	review := strings.Replace(string(src), "auto_accept: true ", "auto_accept: false", 1)
	require.NotEqual(t, string(src), review, "examples/coor/workflow.yaml sets auto_accept")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "workflow.yaml"), []byte(review), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "demo.yaml"), demo, 0o644))
	f, err := coorflowfiles.Load(filepath.Join(dir, "workflow.yaml"))
	require.NoError(t, err)
	noEnv := func(string) string { return "" }
	ms, err := f.Resolve(t.Context(), coorflowfiles.ModelOptions{Getenv: noEnv})
	require.NoError(t, err)
	require.True(t, ms.Demo, "no provider: the demo script")
	r, err := f.Compile(t.Context(), coorflowfiles.Env{Models: gatedModels{Models: ms.Models, gate: gate}, Getenv: noEnv})
	require.NoError(t, err)
	return r
}

// waitText polls the page until the text of the element sel (trimmed)
// is want, or contains it when whole is false, and returns that text. It
// polls every 50ms, not on mutations: chromedp's mutation polling does
// not observe a text node's data, which React changes in place.
func waitText(t *testing.T, ctx context.Context, sel, want string, whole bool) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.PollFunction[string](`(sel, want, whole) => {
		const el = document.querySelector(sel);
		const text = el ? el.textContent.trim() : "";
		return (whole ? text === want : text.includes(want)) ? text : false;
	}`, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(0), chromedp.WithPollingArgs(sel, want, whole)))
	require.NoError(t, err, "waiting for the text of %s to be (or hold) %q", sel, want)
	return v
}

// TestTheChatUIStreamsAnswersThePlanReviewAndShowsTheReportInChromium
// drives assistant-ui's LangGraph chat (its production build, see
// internal/chatuitest), served from another origin than the API (which
// lets it in: Config.CORSOrigins), in headless Chromium: a question, the planner's plan streamed, the plan review answered in
// the page, the reporter's answer seen part-way (held after its first
// words) and then whole.
func TestTheChatUIStreamsAnswersThePlanReviewAndShowsTheReportInChromium(t *testing.T) {
	dist := chatuitest.Dist(t)
	gate := newTokenGate(t, "reporter", 6)
	// The page comes from an origin of its own, as a chat UI deployed
	// apart from the server: the server lets that origin in (CORS).
	ui := httptest.NewServer(http.FileServer(http.Dir(dist)))
	t.Cleanup(ui.Close)
	e := newEnv(t, server.Config{Workflows: workflows(coorForChat(t, gate)), CORSOrigins: []string{ui.URL}})

	tab := browser(t)
	ctx := withTimeout(t, tab)
	t.Cleanup(func() {
		if t.Failed() {
			ctx, cancel := context.WithTimeout(tab, 10*time.Second)
			defer cancel()
			msgs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('.message')].map((m) => m.dataset.role + " " + m.dataset.status + ": " + [...m.querySelectorAll(".part")].map((p) => p.dataset.agent + "=" + p.textContent.slice(0, 40)).join(" | "))`))
			t.Logf("the page's messages (%v):\n%s", err, strings.Join(msgs, "\n"))
			screenshot(t, ctx, "chatui-failed.png")
		}
	})
	question := "Compare SQLite and PostgreSQL for an embedded agent engine"
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(ui.URL+"/?api="+url.QueryEscape(e.hs.URL)+"&assistant=coor#key="+alice),
		chromedp.WaitVisible(`[data-testid="composer-input"]`),
		chromedp.SendKeys(`[data-testid="composer-input"]`, question),
		chromedp.Click(`[data-testid="send"]`),
		chromedp.WaitVisible(`[data-testid="review"]`),
	))
	plan := waitText(t, ctx, `.message[data-role="assistant"] .part[data-agent="planner"] .text`, `"steps"`, false)
	title := text(t, ctx, `[data-testid="plan-title"]`)
	steps, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="review"] li')].map((li) => li.dataset.step)`))
	require.NoError(t, err)
	you := text(t, ctx, `.message[data-role="user"] .text`)
	screenshot(t, ctx, "chatui-plan-review.png")
	assert.Contains(t, plan, `"title": "SQLite or PostgreSQL for an embedded agent engine"`, "the planner's reply, streamed")
	assert.Equal(t, "SQLite or PostgreSQL for an embedded agent engine", title)
	assert.Equal(t, []string{"s1", "s2", "s3"}, steps)
	assert.Equal(t, question, you)

	require.NoError(t, chromedp.Do(ctx, chromedp.Click(`[data-testid="accept"]`)))
	select {
	case <-gate.held:
	case <-ctx.Done():
		t.Fatal("the reporter never streamed its reply")
	}
	partial := gate.partial()
	require.NotEmpty(t, strings.TrimSpace(partial))
	reporter := `.message[data-role="assistant"] .part[data-agent="reporter"]`
	seen := waitText(t, ctx, reporter+` .text`, strings.TrimSpace(partial), true)
	status, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('.message[data-role="assistant"]').dataset.status`))
	require.NoError(t, err)
	screenshot(t, ctx, "chatui-streaming.png")
	assert.Equal(t, strings.TrimSpace(partial), seen, "the reporter's first words, before the rest")
	assert.NotContains(t, seen, "## References")
	assert.Equal(t, "running", status)
	gate.open()

	final := waitText(t, ctx, reporter+` .text`, "## References", false)
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(`.message[data-role="assistant"][data-running="false"]`)))
	agents, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('.message[data-role="assistant"] .part')].map((p) => p.dataset.agent)`))
	require.NoError(t, err)
	screenshot(t, ctx, "chatui-answer.png")
	assert.Equal(t, "planner", agents[0], "the first run's reply keeps its agent")
	assert.Equal(t, "reporter", agents[len(agents)-1])
	assert.Subset(t, agents, []string{"team/step:s1/agent:sqlite_analyst", "team/step:s2/agent:postgres_analyst", "team/step:s3/agent:researcher"},
		"each agent's reply on its own")
	assert.True(t, strings.HasPrefix(strings.TrimSpace(final), "# SQLite or PostgreSQL for an embedded agent engine"), final)
	assert.Contains(t, final, "**Recommendation:** use SQLite by default")
	assert.Contains(t, final, "[4] https://www.postgresql.org/docs/current/runtime-config-connection.html")
	review, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('[data-testid="review"]') !== null`))
	require.NoError(t, err)
	assert.False(t, review, "the review is answered")

	// What the page shows is the thread's answer.
	var threads []struct {
		ThreadID string `json:"thread_id"`
		Status   string `json:"status"`
	}
	e.call("POST", "/threads/search", alice, map[string]any{}, http.StatusOK, &threads)
	require.Len(t, threads, 1, "the chat made one thread")
	assert.Equal(t, "idle", threads[0].Status)
	var st struct {
		Values struct {
			Answer string `json:"answer"`
		} `json:"values"`
	}
	e.call("GET", "/threads/"+threads[0].ThreadID+"/state", alice, nil, http.StatusOK, &st)
	assert.Equal(t, strings.TrimSpace(st.Values.Answer), final)
}
