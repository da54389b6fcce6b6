package llm

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// cacheBreakpoints sets Anthropic's prompt-cache breakpoints on every
// Messages API request: cache_control on the last tool, on the system
// prompt, on the last block of the first message (where a window's pinned
// parts end) and on the last block of the last message, so that the
// stable prefix and the conversation so far are cached and the next call,
// which repeats them, reads them from the cache; after a compaction has
// changed the history, the stable prefix still hits. langchaingo
// v0.1.14 cannot send these itself: it sends the system prompt as a plain
// string and tools and tool results without cache_control (only a user
// message's text or image, wrapped in llms.CachedContent, can carry one),
// so the breakpoints are set on the request body. A body it cannot read
// is sent as it is; a request whose messages already carry a breakpoint
// (set by the caller with llms.CachedContent) keeps them and gets only
// the tools' and system's.
type cacheBreakpoints struct {
	base http.RoundTripper
}

// maxBreakpoints is the Messages API's limit per request.
const maxBreakpoints = 4

var ephemeral = json.RawMessage(`{"type":"ephemeral"}`)

// RoundTrip implements http.RoundTripper.
func (t *cacheBreakpoints) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/messages") || req.Body == nil {
		return t.base.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, err
	}
	if out, ok := withBreakpoints(body); ok {
		body = out
	}
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return t.base.RoundTrip(r)
}

// withBreakpoints returns body with the breakpoints set; ok is false when
// body is not a request it can read.
func withBreakpoints(body []byte) ([]byte, bool) {
	var req map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil {
		return nil, false
	}
	var blocks []map[string]json.RawMessage
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if raw, ok := req["messages"]; ok && json.Unmarshal(raw, &msgs) != nil {
		return nil, false
	}
	used := strings.Count(string(req["messages"]), `"cache_control"`)
	if tools, ok := req["tools"]; ok && json.Unmarshal(tools, &blocks) == nil && len(blocks) > 0 && used < maxBreakpoints {
		blocks[len(blocks)-1]["cache_control"] = ephemeral
		req["tools"], _ = json.Marshal(blocks)
		used++
	}
	if sys := systemBlocks(req["system"]); len(sys) > 0 && used < maxBreakpoints {
		sys[len(sys)-1]["cache_control"] = ephemeral
		req["system"], _ = json.Marshal(sys)
		used++
	}
	if n := len(msgs); n > 0 && !strings.Contains(string(req["messages"]), `"cache_control"`) {
		// The end of the first message, where the pinned parts (the task,
		// handoffs) end, then the end of the conversation so far.
		at := []int{0, n - 1}
		if n == 1 {
			at = at[:1]
		}
		for _, i := range at {
			if used >= maxBreakpoints {
				break
			}
			if c, ok := markLast(msgs[i].Content); ok {
				msgs[i].Content = c
				used++
			}
		}
		req["messages"], _ = json.Marshal(msgs)
	}
	out, err := json.Marshal(req)
	return out, err == nil
}

// systemBlocks reads a system prompt, a string or a list of text blocks,
// as blocks; nil when there is none.
func systemBlocks(raw json.RawMessage) []map[string]json.RawMessage {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil
		}
		text, _ := json.Marshal(s)
		return []map[string]json.RawMessage{{"type": json.RawMessage(`"text"`), "text": text}}
	}
	var blocks []map[string]json.RawMessage
	if json.Unmarshal(raw, &blocks) != nil {
		return nil
	}
	return blocks
}

// markLast sets a breakpoint on the last block of a message's content
// that can carry one: not a thinking block, not an empty text.
func markLast(content json.RawMessage) (json.RawMessage, bool) {
	blocks := systemBlocks(content) // a string content is one text block
	for i := len(blocks) - 1; i >= 0; i-- {
		var typ, text string
		_ = json.Unmarshal(blocks[i]["type"], &typ)
		_ = json.Unmarshal(blocks[i]["text"], &text)
		if typ == "thinking" || typ == "redacted_thinking" || (typ == "text" && strings.TrimSpace(text) == "") {
			continue
		}
		blocks[i]["cache_control"] = ephemeral
		out, err := json.Marshal(blocks)
		return out, err == nil
	}
	return nil, false
}
