package llm

import (
	"context"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// anthropicModel fits langchaingo's Anthropic client (v0.1.14) to the way
// every other client, and coorflow's agents, see a reply:
//   - the client makes a choice of each content block, so a reply that
//     says something and then calls a tool has the text in Choices[0] and
//     the call in Choices[1], where an agent reading Choices[0] misses it;
//     anthropicModel merges the blocks into one choice: the text blocks'
//     text, the thinking as ReasoningContent, every tool call;
//   - the client encodes only the first part of an assistant message, so
//     an agent's turn with text and tool calls, or with several calls,
//     loses its calls and the tool results that follow are refused;
//     anthropicModel sends each part of such a message as an assistant
//     message of its own, which the Messages API joins into one turn.
type anthropicModel struct {
	inner llms.Model
}

// Call implements llms.Model.
func (m *anthropicModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

// GenerateContent implements llms.Model.
func (m *anthropicModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent,
	opts ...llms.CallOption,
) (*llms.ContentResponse, error) {
	resp, err := m.inner.GenerateContent(ctx, splitAssistantParts(msgs), opts...)
	if err != nil {
		return nil, err
	}
	return mergeBlocks(resp), nil
}

// splitAssistantParts returns msgs with every assistant message of several
// parts split into one message per part, empty text parts left out.
func splitAssistantParts(msgs []llms.MessageContent) []llms.MessageContent {
	out := make([]llms.MessageContent, 0, len(msgs))
	for _, m := range msgs {
		if m.Role != llms.ChatMessageTypeAI || len(m.Parts) < 2 {
			out = append(out, m)
			continue
		}
		for _, p := range m.Parts {
			if t, ok := p.(llms.TextContent); ok && strings.TrimSpace(t.Text) == "" {
				continue
			}
			out = append(out, llms.MessageContent{Role: m.Role, Parts: []llms.ContentPart{p}})
		}
	}
	return out
}

// mergeBlocks turns the choices the client made of one message's content
// blocks into a single choice.
func mergeBlocks(resp *llms.ContentResponse) *llms.ContentResponse {
	if resp == nil || len(resp.Choices) < 2 {
		return resp
	}
	merged := &llms.ContentChoice{GenerationInfo: map[string]any{}}
	var text, thinking strings.Builder
	for _, c := range resp.Choices {
		if c == nil {
			continue
		}
		text.WriteString(c.Content)
		if t, _ := c.GenerationInfo["ThinkingContent"].(string); t != "" && c.Content == "" &&
			len(c.ToolCalls) == 0 {
			thinking.WriteString(t)
		}
		for k, v := range c.GenerationInfo {
			if _, ok := merged.GenerationInfo[k]; !ok {
				merged.GenerationInfo[k] = v
			}
		}
		merged.StopReason = c.StopReason
		merged.ToolCalls = append(merged.ToolCalls, c.ToolCalls...)
	}
	merged.Content = text.String()
	if thinking.Len() > 0 {
		merged.ReasoningContent = thinking.String()
		merged.GenerationInfo["ThinkingContent"] = thinking.String()
	}
	if len(merged.ToolCalls) > 0 {
		merged.FuncCall = merged.ToolCalls[0].FunctionCall
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{merged}}
}
