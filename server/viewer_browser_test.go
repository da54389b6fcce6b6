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
	toolArgs := text(t, ctx, `#detail tr.tool-call[data-tool="add"] td:nth-child(2)`)
	toolStatus := text(t, ctx, `#detail tr.tool-call[data-tool="add"] td:nth-child(3)`)
	toolOutput := text(t, ctx, `#detail tr.tool-call[data-tool="add"] td.tool-output`)
	output := text(t, ctx, `#detail pre.output`)
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
	assert.JSONEq(t, `{"a":2,"b":3}`, toolArgs)
	assert.Equal(t, "ok", toolStatus)
	assert.Equal(t, "5", toolOutput)
	assert.Equal(t, "2 + 3 = 5", output)
	require.Equal(t, 2, tl.Usage.Calls)
	assert.Contains(t, runUsage, fmt.Sprintf("Usage 2 calls · %d tokens in", tl.Usage.PromptTokens))
	assert.Contains(t, runUsage, fmt.Sprintf(", %d out", tl.Usage.CompletionTokens))
	assert.True(t, strings.HasSuffix(runUsage, "· $0.0000"), "the scripted model costs nothing: %q", runUsage)
	assert.Contains(t, agentUsage, fmt.Sprintf("2 calls · %d tokens in", d.Usage.PromptTokens))
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
	output := text(t, ctx, `#detail pre.output`)
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
