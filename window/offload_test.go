package window_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/window"
)

// readAll reads ref back through read_context, page by page, until EOF.
func readAll(t *testing.T, r window.Reader, ref string, limit int64) (string, int) {
	t.Helper()
	tool := window.ReadContextTool(r)
	var b strings.Builder
	offset, pages := int64(0), 0
	for {
		args, err := json.Marshal(window.ReadArgs{Ref: ref, Offset: offset, Limit: limit})
		require.NoError(t, err)
		res := tools.Run(t.Context(), tool, args, tools.RunOptions{})
		require.Equal(t, tools.StatusOK, res.Status, res.Text())
		var page window.ReadPage
		require.NoError(t, json.Unmarshal([]byte(res.Output), &page))
		require.Equal(t, offset, page.Offset)
		b.WriteString(page.Content)
		pages++
		if page.EOF {
			return b.String(), pages
		}
		require.Greater(t, page.NextOffset, offset)
		offset = page.NextOffset
	}
}

func TestLargeToolResultIsOffloadedWithPreviewAndReadBack(t *testing.T) {
	big := lines(1000, 100)
	require.Equal(t, 25_000, llm.EstimateTokens(big))
	b, bs := newBuilder(t, nil, nil)
	history := []llms.MessageContent{
		toolCall("call_1", "web_search", `{"query":"go web frameworks"}`),
		toolResult("call_1", "web_search", big),
	}
	res, err := b.Assemble(t.Context(), window.Request{Agent: "researcher-1", Budget: window.Budget{MaxInputTokens: 128_000},
		Parts: []window.Part{
			{Name: "system", Kind: window.KindSystem, Text: "You are a researcher.", Required: true},
			{Name: "task", Kind: window.KindTask, Text: "Compare Go web frameworks.", Required: true},
			{Name: "history", Kind: window.KindHistory, Messages: history},
		}})
	require.NoError(t, err)

	applied := res.Snapshot.PoliciesOf(window.PolicyOffload)
	require.Len(t, applied, 1)
	ref := applied[0].Ref
	assert.True(t, strings.HasPrefix(ref, "mission/run-1/outputs/tool-results/researcher-1/web_search-"), ref)
	assert.Contains(t, applied[0].Detail, "25,000 tokens")
	part, ok := res.Snapshot.Part("history")
	require.True(t, ok)
	assert.Equal(t, []string{ref}, part.Refs)
	assert.Less(t, part.Tokens, 2_000)
	assert.Greater(t, part.FullTokens, 25_000)

	require.Len(t, res.Messages, 4)
	assert.Equal(t, history[0], res.Messages[2], "the tool call stays as it was")
	resp := res.Messages[3].Parts[0].(llms.ToolCallResponse)
	assert.Equal(t, "call_1", resp.ToolCallID)
	assert.Equal(t, "web_search", resp.Name)
	preview := strings.Split(resp.Content, "\n")
	assert.Equal(t, "[Tool result of web_search offloaded: 25,000 tokens, 1,000 lines, 100,000 bytes. Full text: "+ref+
		" — read it page by page with read_context (ref, offset, limit).]", preview[0])
	assert.Equal(t, "Preview (first 5 and last 5 of 1,000 lines):", preview[1])
	all := strings.Split(strings.TrimSuffix(big, "\n"), "\n")
	assert.Equal(t, all[:5], preview[2:7])
	assert.Equal(t, "[… 990 lines not shown …]", preview[7])
	assert.Equal(t, all[995:], preview[8:])
	assert.Len(t, preview, 13)

	assert.Equal(t, big, history[1].Parts[0].(llms.ToolCallResponse).Content, "the caller's messages are untouched")
	require.Contains(t, res.Compacted, "history")
	assert.Equal(t, res.Messages[2:], res.Compacted["history"])

	got, pages := readAll(t, bs, ref, 8_000)
	assert.Equal(t, big, got)
	assert.Equal(t, 13, pages)
}

func TestOffloadThreshold(t *testing.T) {
	tests := []struct {
		name    string
		tokens  int
		offload bool
	}{
		{"below", window.DefaultOffloadTokens - 1, false},
		{"at", window.DefaultOffloadTokens, false},
		{"above", window.DefaultOffloadTokens + 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := newBuilder(t, nil, nil)
			out := words(tt.tokens)
			res, err := b.Assemble(t.Context(), window.Request{Parts: []window.Part{
				{Name: "history", Kind: window.KindHistory, Messages: []llms.MessageContent{
					toolCall("c1", "fetch", "{}"), toolResult("c1", "fetch", out)}},
				{Name: "search results", Kind: window.KindToolResult, Text: out},
			}})
			require.NoError(t, err)
			applied := res.Snapshot.PoliciesOf(window.PolicyOffload)
			if !tt.offload {
				assert.Empty(t, applied)
				assert.Nil(t, res.Compacted)
				assert.Equal(t, out, text(res.Messages[1]))
				return
			}
			require.Len(t, applied, 2, "the tool message and the tool-result part")
			assert.Equal(t, []string{"history", "search results"}, []string{applied[0].Part, applied[1].Part})
			assert.Contains(t, applied[0].Ref, "/tool-results/fetch-")
			assert.Contains(t, applied[1].Ref, "/tool-results/search results-")
			assert.Contains(t, text(res.Messages[1]), "Preview (all 1 lines):")
		})
	}
}

// The preview of a Markdown result lists the headings it does not show,
// each with the offset read_context reads its section from.
func TestOffloadPreviewListsTheHeadingsNotShown(t *testing.T) {
	var doc strings.Builder
	doc.WriteString("# Storage engines under load\n")
	for s := 1; s <= 40; s++ {
		fmt.Fprintf(&doc, "## Engine %d\n", s)
		doc.WriteString(lines(10, 100))
		doc.WriteString("#hashtag, not a heading\n")
	}
	text := doc.String()
	require.Greater(t, llm.EstimateTokens(text), window.DefaultOffloadTokens)
	b, bs := newBuilder(t, nil, nil)
	o, err := b.OffloadToolResult(t.Context(), "researcher-1", "fetch", text)
	require.NoError(t, err)
	require.True(t, o.Offloaded)

	preview := strings.Split(o.Text, "\n")
	i := slices.Index(preview, "Headings of the lines not shown (read_context from the offset given):")
	require.Positive(t, i, o.Text)
	assert.Equal(t, "[… 471 lines not shown …]", preview[i-1])
	var headings []string
	for _, l := range preview[i+1:] {
		if !strings.HasPrefix(l, "## ") {
			break
		}
		headings = append(headings, l)
	}
	require.Len(t, headings, 30, "at most 30 headings")
	assert.Equal(t, "[… and 9 more headings]", preview[i+31])
	assert.Equal(t, "Last lines:", preview[i+32])
	assert.Len(t, preview[i+33:], 5)
	assert.NotContains(t, strings.Join(preview[i:i+33], "\n"), "#hashtag", "a # without a space is no heading")
	assert.Equal(t, "## Engine 2", strings.Split(headings[0], " (offset")[0], "Engine 1 is in the first lines shown")

	for _, h := range []string{headings[0], headings[29]} {
		title, off, ok := strings.Cut(h, " (offset ")
		require.True(t, ok, h)
		offset, err := strconv.ParseInt(strings.TrimSuffix(off, ")"), 10, 64)
		require.NoError(t, err)
		args, err := json.Marshal(window.ReadArgs{Ref: o.Ref, Offset: offset, Limit: 200})
		require.NoError(t, err)
		res := tools.Run(t.Context(), window.ReadContextTool(bs), args, tools.RunOptions{})
		require.Equal(t, tools.StatusOK, res.Status, res.Text())
		var page window.ReadPage
		require.NoError(t, json.Unmarshal([]byte(res.Output), &page))
		assert.True(t, strings.HasPrefix(page.Content, title+"\n"), "read_context from %d starts at %q: %q", offset, title, page.Content)
	}
}

// A page read back with read_context is what the agent asked to see: it
// stays whole however large, where offloading it again would show only
// its first and last lines (an answer in its middle was lost that way).
func TestReadBackPagesAreNotOffloadedAgain(t *testing.T) {
	big := lines(1000, 100) // 25,000 tokens, over the threshold
	b, bs := newBuilder(t, nil, nil)
	o, err := b.OffloadToolResult(t.Context(), "researcher-1", "fetch", big)
	require.NoError(t, err)
	require.True(t, o.Offloaded)

	args, err := json.Marshal(window.ReadArgs{Ref: o.Ref, Limit: window.MaxReadBytes})
	require.NoError(t, err)
	page := tools.Run(t.Context(), window.ReadContextTool(bs), args, tools.RunOptions{})
	require.Equal(t, tools.StatusOK, page.Status, page.Text())
	require.Greater(t, llm.EstimateTokens(page.Output), window.DefaultOffloadTokens)

	history := []llms.MessageContent{toolCall("call_1", "fetch", "{}"), toolResult("call_1", "fetch", o.Text),
		toolCall("call_2", window.ReadContextName, string(args)), toolResult("call_2", window.ReadContextName, page.Output)}
	res, err := b.Assemble(t.Context(), window.Request{Agent: "researcher-1", Parts: []window.Part{
		{Name: "history", Kind: window.KindHistory, Messages: history}}})
	require.NoError(t, err)
	assert.Empty(t, res.Snapshot.PoliciesOf(window.PolicyOffload))
	assert.Empty(t, res.Snapshot.PoliciesOf(window.PolicySkipped), "nothing to report: the page is not a candidate")
	assert.Equal(t, page.Output, text(res.Messages[3]))

	kept, err := b.OffloadToolResult(t.Context(), "researcher-1", window.ReadContextName, page.Output)
	require.NoError(t, err)
	assert.False(t, kept.Offloaded)
	assert.Equal(t, page.Output, kept.Text)
	assert.Contains(t, kept.Note, "stored already")
}

func TestOffloadWithoutOffloaderKeepsTheResult(t *testing.T) {
	b := window.New(window.Config{})
	out := words(window.DefaultOffloadTokens + 1)
	o, err := b.OffloadToolResult(t.Context(), "a", "fetch", out)
	require.NoError(t, err)
	assert.Equal(t, window.Output{Text: out, Note: "no offloader configured"}, o)

	res, err := b.Assemble(t.Context(), window.Request{Parts: []window.Part{
		{Name: "r", Kind: window.KindToolResult, Text: out}}})
	require.NoError(t, err)
	skipped := res.Snapshot.PoliciesOf(window.PolicySkipped)
	require.Len(t, skipped, 1)
	assert.Equal(t, "offload: no offloader configured", skipped[0].Detail)
	assert.Equal(t, out, text(res.Messages[0]))
}

type failingOffloader struct{}

func (failingOffloader) Offload(context.Context, string, string) (string, error) {
	return "", errors.New("disk full")
}

func TestFailingOffloaderSkipsThePolicy(t *testing.T) {
	b := window.New(window.Config{Offloader: failingOffloader{}})
	out := words(window.DefaultOffloadTokens + 1)
	_, err := b.OffloadToolResult(t.Context(), "a", "fetch", out)
	require.ErrorContains(t, err, "disk full")
	res, err := b.Assemble(t.Context(), window.Request{Parts: []window.Part{
		{Name: "r", Kind: window.KindToolResult, Text: out}}})
	require.NoError(t, err)
	skipped := res.Snapshot.PoliciesOf(window.PolicySkipped)
	require.Len(t, skipped, 1)
	assert.Contains(t, skipped[0].Detail, "disk full")
	assert.Equal(t, out, text(res.Messages[0]))
}

func TestReadContextErrors(t *testing.T) {
	bs := newBoardStore(t)
	ref, err := bs.Offload(t.Context(), "notes", "hello")
	require.NoError(t, err)
	tool := window.ReadContextTool(bs)
	assert.Equal(t, window.ReadContextName, tool.Name())

	tests := []struct {
		name string
		args string
		want error
	}{
		{"unknown ref", `{"ref":"mission/run-1/outputs/nothing"}`, store.ErrNotFound},
		{"other run", `{"ref":"mission/run-2/outputs/notes"}`, store.ErrNotFound},
		{"past the end", `{"ref":"` + ref + `","offset":6}`, store.ErrOffset},
		{"no ref", `{"offset":0}`, tools.ErrInvalidArguments},
		{"limit too large", `{"ref":"` + ref + `","limit":1000000}`, tools.ErrInvalidArguments},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := tools.Run(t.Context(), tool, json.RawMessage(tt.args), tools.RunOptions{})
			require.Equal(t, tools.StatusFailed, res.Status)
			assert.ErrorIs(t, res.Err, tt.want)
		})
	}
	res := tools.Run(t.Context(), tool, json.RawMessage(`{"ref":"`+ref+`","offset":5}`), tools.RunOptions{})
	require.Equal(t, tools.StatusOK, res.Status)
	assert.JSONEq(t, `{"ref":"`+ref+`","offset":5,"next_offset":5,"size":5,"eof":true,"content":""}`, res.Output)

	res = tools.Run(t.Context(), window.ReadContextTool(nil), json.RawMessage(`{"ref":"x/y"}`), tools.RunOptions{})
	assert.ErrorIs(t, res.Err, window.ErrNoReader)
}

func TestCompactOutputThreshold(t *testing.T) {
	tests := []struct {
		name    string
		size    int
		compact bool
	}{
		{"below", window.DefaultOutputBytes - 1, false},
		{"at", window.DefaultOutputBytes, false},
		{"above", window.DefaultOutputBytes + 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sum := summarizer("The frameworks compared: chi, echo, gin. Winner: chi.")
			b, bs := newBuilder(t, sum, nil)
			out := strings.Repeat("x", tt.size-1) + "\n"
			o, err := b.CompactOutput(t.Context(), "researcher-1", "s1", out)
			require.NoError(t, err)
			if !tt.compact {
				assert.Equal(t, window.Output{Text: out}, o)
				assert.Empty(t, sum.Calls())
				return
			}
			assert.True(t, o.Offloaded)
			assert.Equal(t, "The frameworks compared: chi, echo, gin. Winner: chi.", o.Summary)
			assert.Equal(t, o.Summary+"\n\n[Summary of a 32,769-byte output; the full output is at "+o.Ref+" — read it with read_context.]", o.Text)
			assert.LessOrEqual(t, len(o.Text), window.DefaultOutputSummaryBytes)
			got, _ := readAll(t, bs, o.Ref, window.MaxReadBytes)
			assert.Equal(t, out, got)

			calls := sum.Calls()
			require.Len(t, calls, 1)
			golden(t, "prompt_summarize_output.golden", text(calls[0].Messages[0]))
			assert.True(t, strings.HasPrefix(text(calls[0].Messages[1]), "Summarize the output of researcher-1 s1.\n\n<output>\nxxx"))

			again, err := b.CompactOutput(t.Context(), "researcher-1", "s1", out)
			require.NoError(t, err)
			assert.Equal(t, o, again)
			assert.Len(t, sum.Calls(), 1, "the summary is remembered")
		})
	}
}

func TestCompactOutputBoundsTheSummary(t *testing.T) {
	out := words(10_000)
	tests := []struct {
		name  string
		model llms.Model
		note  string
	}{
		{"too long", summarizer(words(2_000)), "summary cut to its bound"},
		{"failing", scripted.New(scripted.Script{Default: &scripted.Reply{Err: llm.ErrTransient}}), "summarizer failed"},
		{"none", nil, "no summarizer configured"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := newBuilder(t, tt.model, nil)
			o, err := b.CompactOutput(t.Context(), "a", "s1", out)
			require.NoError(t, err)
			assert.True(t, o.Offloaded)
			assert.Contains(t, o.Note, tt.note)
			assert.LessOrEqual(t, len(o.Text), window.DefaultOutputSummaryBytes)
			assert.True(t, strings.HasSuffix(o.Summary, " …"), o.Summary[len(o.Summary)-10:])
		})
	}
}

func TestLargeOutputsInPartsAreCompacted(t *testing.T) {
	sum := summarizer("Short summary.")
	b, _ := newBuilder(t, sum, nil)
	long := strings.Repeat("y", window.DefaultOutputBytes+10)
	steps := plan(2)
	steps[0].Result = long // has a summary and a reference: no model call
	steps[1].Result, steps[1].Summary, steps[1].Ref = long+"z", "", ""
	res, err := b.Assemble(t.Context(), window.Request{Parts: []window.Part{
		{Name: "handoff from coder", Kind: window.KindHandoff, Text: long + "h"},
		{Name: "steps", Kind: window.KindSteps, Steps: steps},
	}})
	require.NoError(t, err)
	applied := res.Snapshot.PoliciesOf(window.PolicyCompactOutput)
	require.Len(t, applied, 3)
	assert.Equal(t, "handoff from coder", applied[0].Part)
	assert.Contains(t, applied[1].Detail, "step s01: result of 32,778 bytes shown as its summary")
	assert.Contains(t, applied[2].Detail, "step s02: output of 32,779 bytes replaced by a summary")
	assert.Len(t, sum.Calls(), 2)
	got := text(res.Messages[0])
	assert.NotContains(t, got, "yyyyyyyyyy")
	assert.Contains(t, got, "Summary of s01")
	assert.Contains(t, got, "Short summary.")
	assert.Less(t, res.Snapshot.TotalTokens, 1_000)
}
