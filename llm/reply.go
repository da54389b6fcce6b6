package llm

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/ollama"
	"github.com/tmc/langchaingo/llms/openai"
)

// clientEmptyErrors are the errors langchaingo's clients return for a
// reply without any choice: OpenAI's {"choices": []}, Anthropic's empty
// content list or a stream that ended before message_stop. (Gemini is
// reached through the OpenAI client.)
var clientEmptyErrors = []error{openai.ErrEmptyResponse, anthropic.ErrEmptyResponse, ollama.ErrEmptyResponse}

// clientEmptyText is the text of the ErrEmptyResponse of langchaingo's
// internal openaiclient and anthropicclient packages, which cannot be
// named: openaiclient.CreateChat returns it, unwrapped, for a reply whose
// "choices" list is empty.
const clientEmptyText = "empty response"

// isClientEmpty reports whether err is a langchaingo client's error for a
// reply without any choice.
func isClientEmpty(err error) bool {
	for _, target := range clientEmptyErrors {
		if errors.Is(err, target) {
			return true
		}
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if errors.Unwrap(e) == nil && e.Error() == clientEmptyText {
			return true
		}
	}
	return false
}

// isUndecodable reports whether err is a failure to decode JSON.
func isUndecodable(err error) bool {
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	return errors.As(err, &syntaxErr) || errors.As(err, &typeErr)
}

// isEmpty reports whether a response holds no answer: no choice with text
// (outside <think> blocks) or a tool call.
func isEmpty(resp *llms.ContentResponse) bool {
	if resp == nil {
		return true
	}
	for _, c := range resp.Choices {
		if c == nil {
			continue
		}
		if len(c.ToolCalls) > 0 || c.FuncCall != nil || StripThink(c.Content) != "" {
			return false
		}
	}
	return true
}

// answerModel fails every call that its model answers with nothing, with
// an *EmptyResponseError naming the model, which Classify files under
// ErrTransient so that WithRetry asks again. New puts it around every
// provider's client: each model call of coorflow expects an answer.
type answerModel struct {
	inner    llms.Model
	provider Provider
	model    string
}

// Call implements llms.Model.
func (m *answerModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

// GenerateContent implements llms.Model.
func (m *answerModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent,
	opts ...llms.CallOption,
) (*llms.ContentResponse, error) {
	resp, err := m.inner.GenerateContent(ctx, msgs, opts...)
	switch {
	case err != nil && isClientEmpty(err):
		return nil, &EmptyResponseError{Provider: m.provider, Model: m.model, Err: err}
	case err != nil:
		return nil, err
	case isEmpty(resp):
		return nil, &EmptyResponseError{Provider: m.provider, Model: m.model}
	}
	return resp, nil
}
