package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/lgsdktest"
)

// platformWorkflows writes the scenario's two workflows to dir from
// examples/coor: "coor", which asks for a review of its plan, and "slow",
// whose scripted model answers after an hour (its runs end when
// cancelled).
func platformWorkflows(t *testing.T, dir string) (coor, slow string) {
	t.Helper()
	src, err := os.ReadFile("../../examples/coor/workflow.yaml")
	require.NoError(t, err)
	demo, err := os.ReadFile("../../examples/coor/demo.yaml")
	require.NoError(t, err)
	review := strings.Replace(string(src), "auto_accept: true ", "auto_accept: false", 1)
	require.NotEqual(t, string(src), review, "examples/coor/workflow.yaml sets auto_accept")
	coor, slow = filepath.Join(dir, "coor"), filepath.Join(dir, "slow")
	for path, body := range map[string]string{
		filepath.Join(coor, "workflow.yaml"): review,
		filepath.Join(coor, "demo.yaml"):     string(demo),
		filepath.Join(slow, "workflow.yaml"): strings.Replace(review, "\nname: coor\n", "\nname: slow\n", 1),
		filepath.Join(slow, "demo.yaml"):     "latency: 1h\ndefault: {text: \"too late\"}\n",
	} {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	}
	return coor, slow
}

// startServe starts the coorflow binary's serve on a loopback port with
// args and returns its URL; it is stopped at the end of the test.
func startServe(t *testing.T, bin string, args ...string) string {
	t.Helper()
	home := t.TempDir()
	// Not bound to the test's context, which ends before the cleanup:
	// the cleanup stops it as Ctrl-C does.
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	// No provider key reaches it: the workflows run on their scripts.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		_ = cmd.Wait()
		t.Fatalf("serve stopped: %s", stderr.String())
	}
	addr := regexp.MustCompile(`http://[0-9.:]+`).FindString(lines.Text())
	require.NotEmpty(t, addr, lines.Text())
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for lines.Scan() {
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		<-drained
		_ = cmd.Wait()
	})
	return addr
}

// TestTheLangGraphSDKDrivesServeThroughThePlatformAPI runs scenario.mjs
// with each pinned SDK against the built binary's serve of coor, slow,
// configured and examples/langgraph-scenario (on its demo model): the
// scenario's assistants, streams, interrupts, state, history, forks,
// cancels, store, multitask and crons, then the example's graph contract
// — its model call's tokens in messages-tuple, both its custom events,
// its interrupt's JSON payload and answer, messages replaced by id, a
// delay from the run's context.
func TestTheLangGraphSDKDrivesServeThroughThePlatformAPI(t *testing.T) {
	for _, sdk := range lgsdktest.SDKs {
		lgsdktest.NodeModulesOf(t, sdk) // skip before building when an SDK is absent
	}
	bin := buildCoorflow(t)
	for _, sdk := range lgsdktest.SDKs {
		t.Run(sdk.Version, func(t *testing.T) {
			dir := t.TempDir()
			coor, slow := platformWorkflows(t, dir)
			tokens := filepath.Join(dir, "tokens")
			require.NoError(t, os.WriteFile(tokens, []byte("sdk-secret=alice\n"), 0o600))
			configured := filepath.Join(dir, "configured.yaml")
			require.NoError(t, os.WriteFile(configured, []byte(configuredFile), 0o644))
			url := startServe(t, bin, coor, slow, configured, "../../examples/langgraph-scenario", "--db", filepath.Join(dir, "coorflow.db"), "--token-file", tokens)

			rep := lgsdktest.Run(t, sdk, lgsdktest.Env{URL: url, Token: "sdk-secret", Coor: "coor", Slow: "slow", Configured: "configured", Example: "langgraph-scenario"})

			assert.Equal(t, []string{"assistants", "stream", "interrupted", "resume", "state", "rejoin", "fork", "cancel", "store", "multitask", "crons", "unserved", "config",
				"example-assistant", "example-stream", "example-interrupt", "example-final", "example-update", "example-delay"}, rep.Steps)
			assert.Equal(t, []string{"configured", "coor", "langgraph-scenario", "slow"}, rep.Assistants)
			assert.Equal(t, []string{"__start__", "coordinator", "planner", "review", "reporter", "team", "__end__"}, rep.GraphNodes)
			assert.Equal(t, 1, rep.FirstStream["metadata"])
			assert.Greater(t, rep.FirstStream["messages/partial"], 100, "the planner's tokens")
			assert.Contains(t, rep.AgentPaths, "coor/team/step:s1/agent:sqlite_analyst", "a nested agent's tokens")
			assert.Greater(t, rep.RejoinedFirstID, int64(5))
			assert.Equal(t, []string{"interrupted", "interrupted", "interrupted"}, rep.Multitask, "r4 cancelled, r3 rolled back (gone), r2 and r1 preempted")
			assert.Equal(t, "HI ADA", rep.Configured, "config.configurable reached the workflow's expressions")

			ex := rep.Example
			const draft = "Graph engines let small steps add up to a whole agent." // the demo model's
			assert.Equal(t, "write", ex.TokenNode, "the llm node's tokens")
			assert.Greater(t, len(ex.Tokens), 1)
			assert.Equal(t, draft, strings.Join(ex.Tokens, ""))
			assert.Equal(t, []map[string]any{{"stage": "started", "tone": "formal"}, {"stage": "finished", "approved": true}}, ex.Custom)
			assert.Equal(t, map[string]any{"question": "Publish this draft?", "draft": draft}, ex.Payload)
			assert.Equal(t, "Published: "+draft, ex.Final)
			require.Len(t, ex.Messages, 2)
			humanID, _ := ex.Messages[0]["id"].(string)
			assert.Len(t, humanID, 36, "the input's message was given an id, as add_messages gives one")
			assert.Equal(t, []map[string]any{{"id": humanID, "type": "human", "content": "graph engines"}, {"id": "draft", "type": "ai", "content": ex.Final}}, ex.Messages)
			assert.Equal(t, []map[string]any{{"id": humanID, "type": "human", "content": "graph engines"}, {"id": "draft", "type": "ai", "content": "Edited by hand."}}, ex.Edited)
			assert.Equal(t, "running", ex.BeforeCancel)
			assert.Equal(t, "interrupted", ex.AfterCancel)
			assert.Nil(t, ex.DraftAfterCancel)
		})
	}
}
