package window_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/board"
	"github.com/coorflow/coorflow/store/memory"
	"github.com/coorflow/coorflow/window"
)

// fixedNow is the clock of every test snapshot.
var fixedNow = time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)

// viewer is who reads the test board.
var viewer = store.Viewer{Task: "t1", Agent: "researcher-1"}

// newBoardStore returns a BoardStore over a fresh in-memory board.
func newBoardStore(t *testing.T) *window.BoardStore {
	t.Helper()
	b, err := board.New(memory.New(store.Config{}), "alice", "run-1")
	require.NoError(t, err)
	return window.NewBoardStore(b, viewer)
}

// summarizer returns a scripted model whose summarizer agent answers
// every call with text.
func summarizer(text string) *scripted.Model {
	return scripted.New(scripted.Script{Rules: []scripted.Rule{{
		Agent: window.DefaultSummarizerAgent, Reply: scripted.Reply{Text: text},
	}}})
}

// newBuilder returns a Builder with a board store, the given summarizer
// and a fixed clock; mod adjusts the config.
func newBuilder(t *testing.T, sum llms.Model, mod func(*window.Config)) (*window.Builder, *window.BoardStore) {
	t.Helper()
	bs := newBoardStore(t)
	cfg := window.Config{Offloader: bs, Summarizer: sum, Now: func() time.Time { return fixedNow }}
	if mod != nil {
		mod(&cfg)
	}
	return window.New(cfg), bs
}

// words returns n tokens of ASCII text: n words of three letters and a
// space, four characters each.
func words(n int) string {
	return strings.TrimSuffix(strings.Repeat("abc ", n), " ") + "d"
}

// lines returns n numbered lines of width characters each, newline
// included.
func lines(n, width int) string {
	var b strings.Builder
	for i := range n {
		l := fmt.Sprintf("line %05d ", i+1)
		b.WriteString(l + strings.Repeat("x", width-len(l)-1) + "\n")
	}
	return b.String()
}

// limitFor returns a limit at which a policy with threshold fraction
// starts at exactly tokens.
func limitFor(t *testing.T, fraction float64, tokens int) int {
	t.Helper()
	start := int(float64(tokens)/fraction) - 3
	for l := max(start, 1); l < start+10; l++ {
		if int(math.Ceil(fraction*float64(l)-1e-9)) == tokens {
			return l
		}
	}
	t.Fatalf("no limit puts %v of it at %d tokens", fraction, tokens)
	return 0
}

// text returns the text of a message.
func text(m llms.MessageContent) string {
	var b strings.Builder
	for _, p := range m.Parts {
		switch p := p.(type) {
		case llms.TextContent:
			b.WriteString(p.Text)
		case llms.ToolCallResponse:
			b.WriteString(p.Content)
		}
	}
	return b.String()
}

// golden compares got with testdata/name, rewriting it when
// UPDATE_GOLDEN is set.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv("UPDATE_GOLDEN") != "" {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(want), got)
}

// toolCall returns an assistant message calling tool with id.
func toolCall(id, tool, args string) llms.MessageContent {
	return llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{
		llms.ToolCall{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: tool, Arguments: args}},
	}}
}

// toolResult returns the tool message answering id.
func toolResult(id, tool, content string) llms.MessageContent {
	return llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
		llms.ToolCallResponse{ToolCallID: id, Name: tool, Content: content},
	}}
}
