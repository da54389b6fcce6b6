package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/a2atest"
	"github.com/coorflow/coorflow/internal/chatuitest"
	"github.com/coorflow/coorflow/internal/lgsdktest"
	"github.com/coorflow/coorflow/internal/mcptest"
	"github.com/coorflow/coorflow/internal/openaitest"
)

// TestTheREADMEsTestCommandSaysWhatTheSkippedTestsNeed: right after the
// README's test command come the commands that install the npm packages
// without which the MCP, LangGraph SDK, OpenAI client and A2A tests skip,
// naming the folders those tests read, and build the chat UI the browser
// test serves.
func TestTheREADMEsTestCommandSaysWhatTheSkippedTestsNeed(t *testing.T) {
	blocks := readmeBlocks(t, "../../README.md")
	i := 0
	for i < len(blocks) && blocks[i].text != "go test -race ./...\n" {
		i++
	}
	require.Less(t, i, len(blocks)-1, "the test command and a block after it")
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	rel := func(dir string) string {
		r, err := filepath.Rel(root, dir)
		require.NoError(t, err)
		_, err = os.Stat(filepath.Join(dir, "package-lock.json"))
		require.NoError(t, err, "%s has a lockfile for npm ci", dir)
		return filepath.ToSlash(r)
	}
	want := "npm ci --prefix " + rel(mcptest.Dir())
	for _, sdk := range lgsdktest.SDKs {
		want += " && npm ci --prefix " + rel(filepath.Join(lgsdktest.Dir(), sdk.Dir))
	}
	want += " && npm ci --prefix " + rel(filepath.Join(openaitest.Dir(), "npm"))
	want += " && npm ci --prefix " + rel(filepath.Join(a2atest.Dir(), "npm"))
	want += "\n(cd " + rel(chatuitest.Dir()) + " && npm ci --ignore-scripts && npm run build)"
	assert.Equal(t, want+"\n", blocks[i+1].text, "every pinned SDK's folder, and the chat UI's build")
	assert.Equal(t, "sh", blocks[i+1].lang)
}
