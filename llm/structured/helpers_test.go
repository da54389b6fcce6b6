package structured_test

import (
	"context"

	"github.com/tmc/langchaingo/llms"
)

// emptyModel returns responses without choices.
type emptyModel struct{}

func (emptyModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, emptyModel{}, prompt, opts...)
}

func (emptyModel) GenerateContent(context.Context, []llms.MessageContent, ...llms.CallOption) (*llms.ContentResponse,
	error,
) {
	return &llms.ContentResponse{}, nil
}
