package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/lgsdktest"
)

// TestTheLangGraphSDKsDriveTheLangGraphScenarioExample serves
// examples/langgraph-scenario with the built binary, on its demo model,
// and runs example.mjs with each pinned SDK: an assistant configures the
// tone, the custom event, the interrupt's JSON payload and answer, the
// final message replacing the draft's by id, a client's state update
// replacing a message by id, and a delay from the run's context.
func TestTheLangGraphSDKsDriveTheLangGraphScenarioExample(t *testing.T) {
	for _, sdk := range lgsdktest.SDKs {
		lgsdktest.NodeModulesOf(t, sdk) // skip before building when an SDK is absent
	}
	bin := buildCoorflow(t)
	for _, sdk := range lgsdktest.SDKs {
		t.Run(sdk.Version, func(t *testing.T) {
			dir := t.TempDir()
			tokens := filepath.Join(dir, "tokens")
			require.NoError(t, os.WriteFile(tokens, []byte("sdk-secret=alice\n"), 0o600))
			url := startServe(t, bin, "../../examples/langgraph-scenario", "--db", filepath.Join(dir, "coorflow.db"), "--token-file", tokens)
			var rep struct {
				Steps            []string
				Custom           []any
				Payload          map[string]any
				Final            string
				Messages         []map[string]any
				Edited           []map[string]any
				BeforeCancel     string
				AfterCancel      string
				DraftAfterCancel any
			}
			lgsdktest.RunScript(t, sdk, "example.mjs", map[string]string{"LG_URL": url, "LG_KEY": "sdk-secret", "LG_GRAPH": "langgraph-scenario"}, &rep)
			assert.Equal(t, []string{"assistant", "interrupt", "final", "update", "delay"}, rep.Steps)
			assert.Equal(t, []any{map[string]any{"stage": "started", "tone": "formal"}}, rep.Custom)
			assert.Equal(t, "Publish this draft?", rep.Payload["question"])
			assert.Equal(t, "Published: Graph engines let small steps add up to a whole agent.", rep.Final, "the demo model's draft")
			assert.Equal(t, []map[string]any{{"type": "human", "content": "graph engines"}, {"id": "draft", "type": "ai", "content": rep.Final}}, rep.Messages)
			assert.Equal(t, "Edited by hand.", rep.Edited[1]["content"])
			assert.Equal(t, "interrupted", rep.AfterCancel)
			assert.Nil(t, rep.DraftAfterCancel)
		})
	}
}
