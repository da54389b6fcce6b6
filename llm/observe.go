package llm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
)

// ModelInfo names a model in events and traces.
type ModelInfo struct {
	Tier  string
	Model string
	// Provider and Price price the calls: Price when set, else the
	// built-in price of the model (LookupPrice).
	Provider Provider
	Price    *Price
}

// Observe wraps a model so that every call made inside a graph node goes
// through the journal (graph.Do: after an interrupt or a crash the recorded
// response is returned and the model is not called again), streams its
// text as Token events when the run's stream wants them, and reports a
// ModelCall event with its token usage. Outside a node it is the model
// itself. Calls are labelled with AgentFrom(ctx).
func Observe(m llms.Model, info ModelInfo) llms.Model {
	if o, ok := m.(*observed); ok {
		m = o.m
	}
	return &observed{m: m, info: info}
}

type observed struct {
	m    llms.Model
	info ModelInfo
}

// modelRecord is what the journal keeps of a model call. It has its own
// JSON form because langchaingo's llms.ToolCall does not survive a JSON
// round trip (v0.1.14: its UnmarshalJSON drops the function call).
type modelRecord struct {
	Choices []recordedChoice `json:"choices"`
	TokenUsage
}

type recordedChoice struct {
	Content          string             `json:"content"`
	StopReason       string             `json:"stop_reason,omitempty"`
	ReasoningContent string             `json:"reasoning,omitempty"`
	GenerationInfo   map[string]any     `json:"info,omitempty"`
	FuncCall         *llms.FunctionCall `json:"func_call,omitempty"`
	ToolCalls        []recordedToolCall `json:"tool_calls,omitempty"`
}

type recordedToolCall struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func record(resp *llms.ContentResponse) []recordedChoice {
	out := make([]recordedChoice, len(resp.Choices))
	for i, c := range resp.Choices {
		rc := recordedChoice{Content: c.Content, StopReason: c.StopReason, ReasoningContent: c.ReasoningContent,
			GenerationInfo: c.GenerationInfo, FuncCall: c.FuncCall}
		for _, tc := range c.ToolCalls {
			r := recordedToolCall{ID: tc.ID, Type: tc.Type}
			if tc.FunctionCall != nil {
				r.Name, r.Arguments = tc.FunctionCall.Name, tc.FunctionCall.Arguments
			}
			rc.ToolCalls = append(rc.ToolCalls, r)
		}
		out[i] = rc
	}
	return out
}

func (m modelRecord) response() *llms.ContentResponse {
	resp := &llms.ContentResponse{Choices: make([]*llms.ContentChoice, len(m.Choices))}
	for i, c := range m.Choices {
		cc := &llms.ContentChoice{Content: c.Content, StopReason: c.StopReason, ReasoningContent: c.ReasoningContent,
			GenerationInfo: c.GenerationInfo, FuncCall: c.FuncCall}
		for _, tc := range c.ToolCalls {
			cc.ToolCalls = append(cc.ToolCalls, llms.ToolCall{ID: tc.ID, Type: tc.Type,
				FunctionCall: &llms.FunctionCall{Name: tc.Name, Arguments: tc.Arguments}})
		}
		resp.Choices[i] = cc
	}
	return resp
}

func (o *observed) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, o, prompt, opts...)
}

func (o *observed) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	var co llms.CallOptions
	for _, opt := range opts {
		opt(&co)
	}
	callerStream := co.StreamingFunc
	start := time.Now()
	live, refused := false, false
	var settleErr error
	rec, err := graph.Do(ctx, "model", func(ctx context.Context) (modelRecord, error) {
		live = true
		res, err := reserveCall(ctx, o.info, msgs, co)
		if err != nil {
			refused = true
			return modelRecord{}, graph.Permanent(err)
		}
		callOpts := opts
		if res != nil && res.completion > 0 {
			// The budget's completion allowance: the call may not spend more.
			callOpts = append(append([]llms.CallOption{}, callOpts...), llms.WithMaxTokens(res.completion))
		}
		if callerStream != nil || graph.Wants(ctx, EventToken) {
			callOpts = append(append([]llms.CallOption{}, callOpts...), llms.WithStreamingFunc(func(ctx context.Context, chunk []byte) error {
				if len(chunk) == 0 || isToolCallChunk(chunk) {
					return nil
				}
				graph.Emit(ctx, Token(chunk))
				if callerStream != nil {
					return callerStream(ctx, chunk)
				}
				return nil
			}))
		}
		rec, err := o.generate(ctx, msgs, callOpts)
		if res != nil {
			var spent Spend
			if err == nil {
				spent.Add(o.call(ctx, rec.TokenUsage))
			}
			settleErr = res.settle(ctx, spent)
		}
		return rec, err
	})
	if refused {
		return nil, err
	}
	call := o.call(ctx, rec.TokenUsage)
	call.Duration, call.Replayed = time.Since(start), err == nil && !live
	if err != nil {
		call.CostUSD = nil
	}
	if graph.Wants(ctx, EventModelCall) {
		call.Request, call.Hash = EncodeRequest(msgs, co)
		if err != nil {
			call.Err = err.Error()
		} else {
			call.Response, _ = json.Marshal(rec.Choices)
		}
		graph.Emit(ctx, call)
	}
	if err != nil {
		return nil, err
	}
	if settleErr != nil {
		// The answer is in the journal: a retry of the node replays it.
		return nil, settleErr
	}
	resp := rec.response()
	if !live && callerStream != nil {
		// A replayed answer reaches a streaming caller in one chunk.
		if err := callerStream(ctx, []byte(resp.Choices[0].Content)); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// generate makes the call.
func (o *observed) generate(ctx context.Context, msgs []llms.MessageContent, opts []llms.CallOption) (modelRecord, error) {
	resp, err := o.m.GenerateContent(ctx, msgs, opts...)
	if err != nil {
		return modelRecord{}, err
	}
	if len(resp.Choices) == 0 {
		return modelRecord{}, fmt.Errorf("llm: model %q returned no choices: %w", o.info.Model, ErrTransient)
	}
	return modelRecord{Choices: record(resp), TokenUsage: ReadUsage(resp, msgs)}, nil
}

// call is the ModelCall of a call with usage u, priced.
func (o *observed) call(ctx context.Context, u TokenUsage) ModelCall {
	c := ModelCall{
		Agent: AgentFrom(ctx), Tier: o.info.Tier, Model: o.info.Model,
		PromptTokens: u.PromptTokens, CachedTokens: u.CachedTokens, CacheWriteTokens: u.CacheWriteTokens,
		CompletionTokens: u.CompletionTokens, ReasoningTokens: u.ReasoningTokens, Estimated: u.Estimated,
	}
	if p, ok := priceOf(o.info); ok {
		cost := p.Cost(u)
		c.CostUSD = &cost
	}
	return c
}

// CachedInputTokens returns the prompt tokens a provider reports it served
// from its prompt cache (ReadUsage's CachedTokens: OpenAI's
// prompt_tokens_details.cached_tokens, Anthropic's cache reads); 0 when it
// reports none.
func CachedInputTokens(resp *llms.ContentResponse) int {
	if resp == nil || len(resp.Choices) == 0 || resp.Choices[0] == nil {
		return 0
	}
	return ReadUsage(resp, nil).CachedTokens
}

// isToolCallChunk reports whether a streamed chunk is not text but a tool
// call delta: langchaingo's OpenAI client (v0.1.14,
// combineStreamingChatResponse) passes each tool-call delta to the
// streaming function as the JSON of the delta list — [{"id":…,"type":…,
// "function":{"name":…,"arguments":…}}] — and a legacy function-call delta
// as {"name":…,"arguments":…}. Text never decodes to that shape with the
// keys present.
func isToolCallChunk(chunk []byte) bool {
	switch chunk[0] {
	case '[':
		var deltas []map[string]json.RawMessage
		if json.Unmarshal(chunk, &deltas) != nil || len(deltas) == 0 {
			return false
		}
		for _, d := range deltas {
			if _, ok := d["function"]; !ok {
				return false
			}
		}
		return true
	case '{':
		var fc map[string]json.RawMessage
		if json.Unmarshal(chunk, &fc) != nil {
			return false
		}
		_, name := fc["name"]
		_, args := fc["arguments"]
		return name && args && len(fc) == 2
	}
	return false
}

// Request is a model request as recorders keep it (ModelCall's
// Request): the messages, in a JSON form that keeps tool calls whole, and
// the names of the tools offered.
type Request struct {
	Messages []RequestMessage `json:"messages"`
	Tools    []string         `json:"tools,omitempty"`
}

// RequestMessage is one message of a Request.
type RequestMessage struct {
	Role  string        `json:"role"`
	Parts []RequestPart `json:"parts"`
}

// RequestPart is one part of a RequestMessage: Type is "text",
// "tool_call" (ID, Name, Content holding the arguments), "tool_result"
// (ID, Name, Content) or the Go type of another part.
type RequestPart struct {
	Type    string `json:"type"`
	Text    string `json:"text,omitempty"`
	ID      string `json:"id,omitempty"`
	Name    string `json:"name,omitempty"`
	Content string `json:"content,omitempty"`
}

// EncodeRequest renders a request as Observe records it, with its hash:
// the same messages and tools always give the same hash, which is how a
// replay recognises a recorded call.
func EncodeRequest(msgs []llms.MessageContent, co llms.CallOptions) (json.RawMessage, string) {
	var req Request
	for _, m := range msgs {
		mm := RequestMessage{Role: string(m.Role)}
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.TextContent:
				mm.Parts = append(mm.Parts, RequestPart{Type: "text", Text: p.Text})
			case llms.ToolCall:
				pp := RequestPart{Type: "tool_call", ID: p.ID}
				if p.FunctionCall != nil {
					pp.Name, pp.Content = p.FunctionCall.Name, p.FunctionCall.Arguments
				}
				mm.Parts = append(mm.Parts, pp)
			case llms.ToolCallResponse:
				mm.Parts = append(mm.Parts, RequestPart{Type: "tool_result", ID: p.ToolCallID, Name: p.Name, Content: p.Content})
			default:
				mm.Parts = append(mm.Parts, RequestPart{Type: fmt.Sprintf("%T", p)})
			}
		}
		req.Messages = append(req.Messages, mm)
	}
	for _, t := range co.Tools {
		if t.Function != nil {
			req.Tools = append(req.Tools, t.Function.Name)
		}
	}
	data, _ := json.Marshal(req)
	sum := sha256.Sum256(data)
	return data, hex.EncodeToString(sum[:8])
}

// DecodeResponse reads back a response as Observe records it
// (ModelCall's Response).
func DecodeResponse(raw json.RawMessage) (*llms.ContentResponse, error) {
	var choices []recordedChoice
	if err := json.Unmarshal(raw, &choices); err != nil {
		return nil, fmt.Errorf("llm: decode a recorded response: %w", err)
	}
	if len(choices) == 0 {
		return nil, errors.New("llm: the recorded response has no choices")
	}
	return modelRecord{Choices: choices}.response(), nil
}
