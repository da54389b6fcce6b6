package llm

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// ollamaModel guards langchaingo's native Ollama client (v0.1.14), which
// drops the tools of a request without a word and cannot encode tool calls
// or tool results: an agent would never call its tools. A call that
// offers tools, or carries tool calls, goes to the same server's
// OpenAI-compatible API (/v1) instead, which takes them; without that
// client it fails at once with an error that says what to use instead.
type ollamaModel struct {
	inner   llms.Model
	tools   llms.Model // the server's OpenAI-compatible API, for calls with tools
	model   string
	baseURL string
}

// Call implements llms.Model.
func (m *ollamaModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

// GenerateContent implements llms.Model.
func (m *ollamaModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent,
	opts ...llms.CallOption,
) (*llms.ContentResponse, error) {
	var co llms.CallOptions
	for _, o := range opts {
		o(&co)
	}
	if len(co.Tools) > 0 || len(co.Functions) > 0 || hasToolParts(msgs) {
		if m.tools != nil {
			return m.tools.GenerateContent(ctx, msgs, opts...)
		}
		base := strings.TrimSuffix(m.baseURL, "/")
		if base == "" {
			base = defaultOllamaEndpoint
		}
		return nil, fmt.Errorf("%w: ollama model %q: the native Ollama client sends no tools and reads no "+
			"tool calls; for a model that uses tools, configure provider openai with base_url %s/v1 "+
			"(Ollama's OpenAI-compatible API)", ErrToolsUnsupported, m.model, base)
	}
	return m.inner.GenerateContent(ctx, joinTextParts(msgs), opts...)
}

// joinTextParts makes each message of several text parts one text part,
// the parts as paragraphs: the native client takes a single text part
// per message ("expecting a single Text content"), and structured output
// adds its instruction to the last message as a part of its own.
func joinTextParts(msgs []llms.MessageContent) []llms.MessageContent {
	out := msgs
	for i, m := range msgs {
		if len(m.Parts) < 2 {
			continue
		}
		texts := make([]string, 0, len(m.Parts))
		for _, p := range m.Parts {
			t, ok := p.(llms.TextContent)
			if !ok {
				texts = nil
				break
			}
			texts = append(texts, t.Text)
		}
		if texts == nil {
			continue
		}
		if &out[0] == &msgs[0] {
			out = slices.Clone(msgs)
		}
		out[i] = llms.TextParts(m.Role, strings.Join(texts, "\n\n"))
	}
	return out
}

// hasToolParts reports whether a conversation holds tool calls or tool
// results.
func hasToolParts(msgs []llms.MessageContent) bool {
	for _, m := range msgs {
		for _, p := range m.Parts {
			switch p.(type) {
			case llms.ToolCall, llms.ToolCallResponse:
				return true
			}
		}
	}
	return false
}
