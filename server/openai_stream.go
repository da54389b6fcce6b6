package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode"

	"github.com/coorflow/coorflow/llm"
)

// chatAnswer is the answer to one chat completion: the run's, in
// OpenAI's shapes.
type chatAnswer struct {
	s       *Server
	c       *chat
	runID   string
	created int64
	// format streams the answer (nil: answered at once).
	format *oaiFormat
	// remember is called with the run's answer, as the client has it,
	// before the client has its end: its conversation's next request
	// finds the thread (rememberConv).
	remember func(answer string)
}

// oaiUsage is a completion's usage: the run's model calls.
type oaiUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func usageOf(sp llm.Spend) oaiUsage {
	u := oaiUsage{PromptTokens: sp.PromptTokens, CompletionTokens: sp.CompletionTokens, TotalTokens: sp.PromptTokens + sp.CompletionTokens}
	u.PromptTokensDetails.CachedTokens = sp.CachedTokens
	u.CompletionTokensDetails.ReasoningTokens = sp.ReasoningTokens
	return u
}

// oaiRunInfo tells a client that reads it which thread and run answered.
type oaiRunInfo struct {
	ThreadID string `json:"thread_id"`
	RunID    string `json:"run_id"`
	Status   string `json:"status"`
}

// answerText is what the ended run v says to the user: the value of the
// workflow's output channel when it is done, its questions when it waits
// on them (the next user message answers them), or its error.
func (a *chatAnswer) answerText(v Run) (string, *apiError) {
	switch v.Status {
	case StatusDone:
		var values map[string]json.RawMessage
		_ = json.Unmarshal(v.Values, &values)
		raw, ok := values[a.c.desc.Output]
		if !ok {
			return fmt.Sprintf("(the run finished without a value in channel %s)", a.c.desc.Output), nil
		}
		var text string
		if json.Unmarshal(raw, &text) == nil {
			return text, nil
		}
		return string(raw), nil
	case StatusInterrupted:
		qs := make([]string, 0, len(v.Interrupts))
		for _, in := range v.Interrupts {
			qs = append(qs, questionText(in.Payload))
		}
		return strings.Join(qs, "\n\n"), nil
	}
	return "", runErrorOf(v)
}

// write answers the ended run v at once, as a chat.completion.
func (a *chatAnswer) write(w http.ResponseWriter, v Run) {
	text, e := a.answerText(v)
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	a.remember(text)
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "chatcmpl-" + a.runID, "object": "chat.completion", "created": a.created, "model": a.c.req.Model,
		"system_fingerprint": nil,
		"choices": []any{map[string]any{"index": 0, "logprobs": nil, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": text, "refusal": nil}}},
		"usage":    usageOf(v.Usage),
		"coorflow": oaiRunInfo{ThreadID: v.ThreadID, RunID: v.ID, Status: v.Status},
	})
}

// oaiFormat streams a run as chat.completion.chunk events: the tokens
// of the model calls of the workflow's nodes that lead to its end (a
// reporter, a chat node: graph.Runnable.EndNodes) as they come, then
// whatever of the answer they did not hold, the finish, the usage when
// asked (stream_options.include_usage), and data: [DONE]. A run that
// fails ends the stream with {"error": ...} in OpenAI's shape.
type oaiFormat struct {
	a    *chatAnswer
	root string
	ends map[string]bool
	// streamed is the text sent so far; lost is set when events were
	// dropped before the stream read them, after which the rest of the
	// answer is sent at the end.
	streamed strings.Builder
	lost     bool
}

func newOAIFormat(a *chatAnswer) *oaiFormat {
	f := &oaiFormat{a: a, root: a.c.wf.Name(), ends: map[string]bool{}}
	for _, n := range a.c.wf.EndNodes() {
		f.ends[n] = true
	}
	return f
}

func (f *oaiFormat) filter() kindFilter { return kindFilter{llm.EventToken: true} }

// chunk is one chat.completion.chunk event.
func (f *oaiFormat) chunk(delta map[string]any, finish any) []byte {
	return f.data(map[string]any{
		"id": "chatcmpl-" + f.a.runID, "object": "chat.completion.chunk", "created": f.a.created, "model": f.a.c.req.Model,
		"system_fingerprint": nil,
		"choices":            []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
	})
}

func (f *oaiFormat) data(v any) []byte {
	b, _ := json.Marshal(v)
	return append(append([]byte("data: "), b...), '\n', '\n')
}

func (f *oaiFormat) head() []byte {
	return f.chunk(map[string]any{"role": "assistant", "content": ""}, nil)
}

func (f *oaiFormat) truncated(int64, int64) []byte {
	f.lost = true
	return nil
}

func (f *oaiFormat) event(fr frame) []byte {
	if fr.name != llm.EventToken || f.lost {
		return nil
	}
	var ev recordedEvent
	if json.Unmarshal(frameData(fr.data), &ev) != nil {
		return nil
	}
	rel, ok := strings.CutPrefix(ev.Path, f.root+"/")
	if !ok {
		return nil
	}
	node, _, _ := strings.Cut(rel, "/")
	var text string
	if !f.ends[node] || json.Unmarshal(ev.Data, &text) != nil || text == "" {
		return nil
	}
	f.streamed.WriteString(text)
	return f.chunk(map[string]any{"content": text}, nil)
}

func (f *oaiFormat) end(v Run, _ int64) []byte {
	text, e := f.a.answerText(v)
	if e != nil {
		_, body := openAIErrorOf(e)
		return f.data(body)
	}
	streamed := f.streamed.String()
	rest, ok := strings.CutPrefix(text, streamed)
	if !ok {
		// A node's answer is often its text trimmed.
		rest, ok = strings.CutPrefix(text, strings.TrimRightFunc(streamed, unicode.IsSpace))
	}
	if !ok {
		// The end nodes said something else than the answer (or the
		// stream lost some of it): the answer follows in full.
		rest = "\n\n" + text
	}
	var out []byte
	if rest != "" {
		out = append(out, f.chunk(map[string]any{"content": rest}, nil)...)
	}
	out = append(out, f.chunk(map[string]any{}, "stop")...)
	if o := f.a.c.req.StreamOptions; o != nil && o.IncludeUsage {
		out = append(out, f.data(map[string]any{
			"id": "chatcmpl-" + f.a.runID, "object": "chat.completion.chunk", "created": f.a.created, "model": f.a.c.req.Model,
			"system_fingerprint": nil, "choices": []any{}, "usage": usageOf(v.Usage),
		})...)
	}
	f.a.remember(streamed + rest)
	return append(out, "data: [DONE]\n\n"...)
}
