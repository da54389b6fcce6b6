package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes/react"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/trace"
)

// chromiumPath finds a Chromium binary: $COORFLOW_CHROMIUM, then Debian's
// chromium and the usual names. .ci/run installs Debian's when absent.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("COORFLOW_CHROMIUM"), "/usr/bin/chromium", "chromium", "chromium-browser",
		"google-chrome-stable", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium binary found: install Debian's chromium (apt-get update && apt-get install -y chromium, " +
		"as .ci/run does) or set COORFLOW_CHROMIUM to a Chromium or Chrome binary")
	return ""
}

// browser starts a headless Chromium with a fresh profile for the test and
// returns a context of its tab. Bound each step with withTimeout: a
// timeout on this context would close the browser.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.WithoutCancel(t.Context()), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		// Cancel closes the browser and waits for it to exit.
		if err := chromedp.Cancel(ctx); err != nil {
			t.Logf("closing Chromium: %v", err)
		}
		cancelTab()
		cancelAlloc()
	})
	require.NoError(t, chromedp.Do(ctx), "start Chromium")
	return ctx
}

// withTimeout bounds the browser steps of a test.
func withTimeout(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// text returns the visible text of the first element sel matches.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Text(sel))
	require.NoError(t, err, "text of %s", sel)
	return v
}

// screenshot saves a full-page PNG in the test's output directory.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	path := filepath.Join(t.ArtifactDir(), name)
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s", path)
}

func TestViewerShowsWhatAnAgentSawInChromium(t *testing.T) {
	e, ru := recordedCalc(t)
	// What the page must show, as the API gives it.
	var tl trace.Timeline
	e.call("GET", "/v1/trace/runs/"+ru.ID+"/timeline", alice, nil, http.StatusOK, &tl)
	agent := tl.Steps[0].Nodes[0].Agents[0]
	var d trace.AgentDetail
	e.call("GET", fmt.Sprintf("/v1/trace/runs/%s/agents/%d", ru.ID, agent.ID), alice, nil, http.StatusOK, &d)
	var snap struct {
		Parts []struct {
			Name   string `json:"name"`
			Tokens int    `json:"tokens"`
		} `json:"parts"`
	}
	require.NoError(t, json.Unmarshal(d.Snapshots[0].Snapshot, &snap))
	require.Equal(t, "task", snap.Parts[1].Name)
	taskTokens := snap.Parts[1].Tokens
	require.Positive(t, taskTokens)

	ctx := withTimeout(t, browser(t))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(e.hs.URL+"/viewer/?run="+ru.ID+"#token="+alice),
		chromedp.WaitVisible(`button.agent[data-name="solver"][data-status="done"]`),
		chromedp.Click(`button.agent[data-name="solver"]`),
		chromedp.WaitVisible(`#detail table.snapshot tr[data-part="task"]`),
	))
	partName := text(t, ctx, `#detail table.snapshot tr[data-part="task"] td.part-name`)
	tokens := text(t, ctx, `#detail table.snapshot tr[data-part="task"] td.tokens`)
	toolName := text(t, ctx, `#detail tr.tool-call[data-tool="add"] td.tool-name`)
	argA := text(t, ctx, `#detail tr.tool-call[data-tool="add"] td.tool-args dd[data-field="a"]`)
	argB := text(t, ctx, `#detail tr.tool-call[data-tool="add"] td.tool-args dd[data-field="b"]`)
	counts := text(t, ctx, `button.agent[data-name="solver"] .agent-meta`)
	toolStatus := text(t, ctx, `#detail tr.tool-call[data-tool="add"] td:nth-child(3)`)
	toolOutput := text(t, ctx, `#detail tr.tool-call[data-tool="add"] td.tool-output`)
	output := text(t, ctx, `#detail .output`)
	runUsage := text(t, ctx, `#timeline .run-usage`)
	agentUsage := text(t, ctx, `#detail .agent-usage`)
	location, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	stored, err := chromedp.Run(ctx, chromedp.Evaluate[string](`sessionStorage.getItem("coorflow.token")`))
	require.NoError(t, err)
	screenshot(t, ctx, "viewer-agent.png")

	assert.Equal(t, "task", partName)
	assert.Equal(t, fmt.Sprint(taskTokens), tokens, "the part's token count, as recorded")
	assert.Equal(t, "add", toolName)
	assert.Equal(t, []string{"2", "3"}, []string{argA, argB}, "the arguments as fields, not JSON")
	assert.Contains(t, counts, "2 model calls · 1 tool call ·")
	assert.Equal(t, "ok", toolStatus)
	assert.Equal(t, "5", toolOutput)
	assert.Equal(t, "2 + 3 = 5", output)
	require.Equal(t, 2, tl.Usage.Calls)
	assert.Contains(t, runUsage, fmt.Sprintf("Usage 2 calls · %d tokens in", tl.Usage.PromptTokens))
	assert.Contains(t, runUsage, fmt.Sprintf(", %d out", tl.Usage.CompletionTokens))
	assert.True(t, strings.HasSuffix(runUsage, "· $0.0000"), "the scripted model costs nothing: %q", runUsage)
	assert.Contains(t, agentUsage, fmt.Sprintf("2 model calls · 1 tool call · %d tokens in", d.Usage.PromptTokens))
	assert.NotContains(t, location, alice, "the token leaves the address")
	assert.Contains(t, location, fmt.Sprintf("agent=%d", agent.ID), "the agent shown is in the address")
	assert.Equal(t, alice, stored, "the token is kept for the tab")
}

func TestViewerFollowsARunningRunInChromium(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	t.Cleanup(open)
	wait := func(ctx context.Context) error {
		entered <- struct{}{}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	e := newEnv(t, server.Config{Workflows: workflows(calcGraph(t, wait)), Recorder: recorder(t)})
	e.thread(alice, "calc", "t")
	var ru server.Run
	e.call("POST", "/v1/threads/t/runs", alice, map[string]any{"input": map[string]any{"question": "What is 2 + 3?"}}, http.StatusAccepted, &ru)
	select {
	case <-entered: // the agent is waiting on its tool
	case <-t.Context().Done():
		t.Fatal("the tool never ran")
	}

	ctx := withTimeout(t, browser(t))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(e.hs.URL+"/viewer/?run="+ru.ID+"#token="+alice),
		chromedp.WaitVisible(`#run-status[data-status="running"]`),
		chromedp.WaitVisible(`#live`),
		chromedp.WaitVisible(`button.agent[data-name="solver"][data-status="running"]`),
		chromedp.Click(`button.agent[data-name="solver"]`),
		chromedp.WaitVisible(`#detail tr.tool-call[data-tool="add"] [data-status="running"]`),
	))
	screenshot(t, ctx, "viewer-running.png")

	open() // the tool answers; the run ends while the page watches
	require.NoError(t, chromedp.Do(ctx,
		chromedp.WaitVisible(`#run-status[data-status="done"]`),
		chromedp.WaitVisible(`button.agent[data-name="solver"][data-status="done"]`),
		chromedp.WaitVisible(`#detail tr.tool-call[data-tool="add"] [data-status="ok"]`),
		chromedp.WaitNotVisible(`#live`),
	))
	output := text(t, ctx, `#detail .output`)
	screenshot(t, ctx, "viewer-done.png")
	assert.Equal(t, "2 + 3 = 5", output)
}

func TestViewerNeverUsesATokenInTheQueryInChromium(t *testing.T) {
	e, ru := recordedCalc(t)
	ctx := withTimeout(t, browser(t))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(e.hs.URL+"/viewer/?run="+ru.ID+"&token="+alice),
		chromedp.WaitVisible(`#login`),
		chromedp.WaitVisible(`#error`),
	))
	stored, err := chromedp.Run(ctx, chromedp.Evaluate[*string](`sessionStorage.getItem("coorflow.token")`))
	require.NoError(t, err)
	location, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	state, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.dataset.state`))
	require.NoError(t, err)
	shown := text(t, ctx, `#error`)
	screenshot(t, ctx, "viewer-query-token.png")

	assert.Nil(t, stored, "the query's token is not kept")
	assert.NotContains(t, location, alice, "the token leaves the address")
	assert.Contains(t, location, "run="+ru.ID, "the rest of the query stays")
	assert.NotEqual(t, "ready", state, "nothing was loaded with it")
	assert.Contains(t, shown, "/viewer/#token=")

	// The same token in the fragment is used.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate("about:blank"),
		chromedp.Navigate(e.hs.URL+"/viewer/?run="+ru.ID+"#token="+alice),
		chromedp.WaitVisible(`button.agent[data-name="solver"][data-status="done"]`),
	))
}

// answerGraph is the workflow "notes": its node writes answer as the
// run's answer, as a model would.
func answerGraph(t *testing.T, answer string) *graph.Runnable {
	t.Helper()
	model := scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"writer": {{Text: answer}}}})
	agent, err := react.New(react.Config{Name: "writer", Model: model, Info: llm.ModelInfo{Tier: "basic", Model: "scripted"},
		SystemPrompt: "You write notes."})
	require.NoError(t, err)
	g := graph.New("notes", questionKey, answerKey)
	g.AddNode("write", func(ctx context.Context, s graph.State) (graph.Command, error) {
		res, err := agent.Run(ctx, react.Task{Input: questionKey.Get(s)})
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(answerKey.Set(res.Output)), nil
	})
	g.AddEdge(graph.Start, "write")
	g.AddEdge("write", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	return r
}

// hostileMarkdown is a model's answer that tries to run script in the
// viewer, every way Markdown renderers have let it.
const hostileMarkdown = "# Report\n\n**Bold** and *em* and `<b>code</b>`.\n\n" +
	"<img src=x onerror=\"window.pwned='img'\">\n\n<script>window.pwned='script'</script>\n\n" +
	"[click](javascript:window.pwned='link') [upper](JaVaScRiPt:window.pwned='upper') " +
	"[data](data:text/html,<script>window.pwned='data'</script>) [safe](https://example.org/a)\n\n" +
	"![pic](javascript:window.pwned='image')\n\n" +
	"<a href=\"javascript:window.pwned='raw'\">raw link</a> <svg onload=\"window.pwned='svg'\"></svg>\n\n" +
	"| Situation | Choose |\n|---|---|\n| One process | SQLite |\n| <i onmouseover=\"window.pwned='cell'\">replicas</i> | PostgreSQL |\n\n" +
	"- one\n- two\n\n> quoted <iframe src=\"javascript:window.pwned='frame'\"></iframe>\n"

func TestViewerShowsTheAnswerAsSafeMarkdownInChromium(t *testing.T) {
	e, ru := recordedRun(t, answerGraph(t, hostileMarkdown), "n", map[string]any{"question": "Write the report."})

	ctx := withTimeout(t, browser(t))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(e.hs.URL+"/viewer/?run="+ru.ID+"#token="+alice),
		chromedp.WaitVisible(`#answer h1`),
	))
	type page struct {
		Heading, Strong, Code, Text string
		Links                       []string
		Dangerous, Cells, Items     int
		Pwned                       *string
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[page](`(() => {
		const a = document.querySelector("#answer");
		return {
			heading: a.querySelector("h1").textContent,
			strong: a.querySelector("strong").textContent,
			code: a.querySelector("code").textContent,
			text: a.textContent,
			links: [...a.querySelectorAll("a")].map((x) => x.getAttribute("href")),
			dangerous: a.querySelectorAll("img, script, iframe, svg, i, b, [onerror], [onload], [onmouseover]").length,
			cells: a.querySelectorAll("table td").length,
			items: a.querySelectorAll("ul li").length,
			pwned: window.pwned === undefined ? null : String(window.pwned),
		};
	})()`))
	require.NoError(t, err)
	// Hover everything, in case a handler made it through.
	_, err = chromedp.Run(ctx, chromedp.Evaluate[*int](`document.querySelectorAll("#answer *").forEach((n) =>
		n.dispatchEvent(new MouseEvent("mouseover", {bubbles: true}))), null`))
	require.NoError(t, err)
	pwned, err := chromedp.Run(ctx, chromedp.Evaluate[*string](`window.pwned === undefined ? null : String(window.pwned)`))
	require.NoError(t, err)
	screenshot(t, ctx, "viewer-answer.png")

	assert.Equal(t, "Report", got.Heading)
	assert.Equal(t, "Bold", got.Strong)
	assert.Equal(t, "<b>code</b>", got.Code, "code is shown as written")
	assert.Equal(t, []string{"https://example.org/a"}, got.Links, "only the http link keeps an address")
	assert.Zero(t, got.Dangerous, "no element or handler from the model's HTML")
	assert.Contains(t, got.Text, `<img src=x onerror="window.pwned='img'">`, "raw HTML is shown as text")
	assert.Contains(t, got.Text, `<script>window.pwned='script'</script>`)
	assert.Equal(t, 4, got.Cells, "the table")
	assert.Equal(t, 2, got.Items, "the list")
	assert.Nil(t, got.Pwned, "nothing ran")
	assert.Nil(t, pwned, "nothing ran on hover")
}

func TestViewerTimeBarsShowWhatRanConcurrentlyInChromium(t *testing.T) {
	e, ru := recordedRun(t, pairGraph(t), "p", map[string]any{"question": "Meet."})

	ctx := withTimeout(t, browser(t))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(e.hs.URL+"/viewer/?run="+ru.ID+"#token="+alice),
		chromedp.WaitVisible(`.gantt-row.gantt-agent[data-name="alpha"] .gantt-bar`),
		chromedp.WaitVisible(`.gantt-row.gantt-agent[data-name="beta"] .gantt-bar`),
	))
	type bar struct{ Left, Right, StartMS, EndMS float64 }
	bars, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]bar](`(() => {
		const out = {};
		for (const row of document.querySelectorAll(".gantt-row")) {
			const b = row.querySelector(".gantt-bar"), r = b.getBoundingClientRect();
			out[row.dataset.name || "step " + row.dataset.step] = {left: r.left, right: r.right,
				startMS: Number(b.dataset.startMs), endMS: Number(b.dataset.endMs)};
		}
		return out;
	})()`))
	require.NoError(t, err)
	answer := text(t, ctx, `#answer`)
	screenshot(t, ctx, "viewer-time-bars.png")

	alpha, beta, step := bars["alpha"], bars["beta"], bars["step 0"]
	assert.Len(t, bars, 3, "a bar for the step and one per agent")
	assert.True(t, alpha.StartMS < beta.EndMS && beta.StartMS < alpha.EndMS, "the agents' times overlap: %+v %+v", alpha, beta)
	assert.True(t, alpha.Left < beta.Right && beta.Left < alpha.Right, "so do their bars: %+v %+v", alpha, beta)
	assert.LessOrEqual(t, step.Left, min(alpha.Left, beta.Left)+1, "the step spans its agents")
	assert.GreaterOrEqual(t, step.Right, max(alpha.Right, beta.Right)-1)
	assert.Equal(t, "Met alpha.", answer)

	// alpha's JSON answer reads as fields.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(`.gantt-row[data-name="alpha"] button.gantt-label`),
		chromedp.WaitVisible(`#detail .output dl.fields`),
	))
	fields, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("#detail .output dl.fields > dt")].map((d) => d.textContent)`))
	require.NoError(t, err)
	sources := text(t, ctx, `#detail .output dd[data-field="sources"]`)
	output := text(t, ctx, `#detail .output`)
	snapshots, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#detail div.snapshot").length`))
	require.NoError(t, err)
	counts := text(t, ctx, `#detail .agent-head .counts`)
	screenshot(t, ctx, "viewer-fields.png")
	assert.Equal(t, []string{"summary", "confidence", "sources"}, fields)
	assert.Equal(t, "notes, call", sources)
	assert.NotContains(t, output, `{"`, "no raw JSON")
	assert.Equal(t, 2, snapshots, "an agent without a window has a snapshot per call")
	assert.Contains(t, counts, "2 model calls · 1 tool call")
}

func TestViewerListsRunsByThreadWithTheirInputInChromium(t *testing.T) {
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t), pairGraph(t)), Recorder: recorder(t)})
	e.thread(alice, "echo", "t")
	e.thread(alice, "pair", "u")
	for _, in := range []string{"hello", "and again"} {
		ru := e.wait(alice, "t", map[string]any{"input": map[string]any{"text": in}})
		require.Equal(t, "done", ru.Status, "%+v", ru.Error)
	}
	ru := e.wait(alice, "u", map[string]any{"input": map[string]any{"question": "Meet."}})
	require.Equal(t, "done", ru.Status, "%+v", ru.Error)

	ctx := withTimeout(t, browser(t))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(e.hs.URL+"/viewer/#token="+alice),
		chromedp.WaitVisible(`tbody.thread[data-thread="u"] tr.run-row`),
	))
	type row struct{ Thread, Input, Workflow, Status, Started string }
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]row](`[...document.querySelectorAll("tr.run-row")].map((r) => ({
		thread: r.closest("tbody").dataset.thread,
		input: r.querySelector("td.input a").textContent,
		workflow: r.querySelector("td.workflow").textContent,
		status: r.querySelector("td.run-status").textContent,
		started: r.querySelector("td.started").textContent,
	}))`))
	require.NoError(t, err)
	heads, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("tr.thread-head")].map((h) => h.textContent)`))
	require.NoError(t, err)
	screenshot(t, ctx, "viewer-runs.png")

	require.Len(t, rows, 3)
	assert.Equal(t, []string{"Thread u · 1 run", "Thread t · 2 runs"}, heads, "the thread of the newest run first")
	assert.Equal(t, row{Thread: "u", Input: "question: Meet.", Workflow: "pair", Status: "done", Started: rows[0].Started}, rows[0])
	assert.Equal(t, []string{"t", "text: and again", "echo", "done"}, []string{rows[1].Thread, rows[1].Input, rows[1].Workflow, rows[1].Status})
	assert.Equal(t, []string{"t", "text: hello"}, []string{rows[2].Thread, rows[2].Input})
	for _, r := range rows {
		assert.NotEmpty(t, r.Started, "the start time")
	}
}
