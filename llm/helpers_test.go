package llm_test

import (
	"context"
	"sync"

	"github.com/tmc/langchaingo/llms"
)

// funcModel is an llms.Model whose replies come from a function, for
// testing wrappers. It counts its calls.
type funcModel struct {
	mu    sync.Mutex
	calls int
	reply func(ctx context.Context, call int, opts llms.CallOptions) (*llms.ContentResponse, error)
}

func (f *funcModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, f, prompt, opts...)
}

func (f *funcModel) GenerateContent(ctx context.Context, _ []llms.MessageContent,
	opts ...llms.CallOption,
) (*llms.ContentResponse, error) {
	f.mu.Lock()
	f.calls++
	n := f.calls
	f.mu.Unlock()
	var co llms.CallOptions
	for _, o := range opts {
		o(&co)
	}
	return f.reply(ctx, n, co)
}

func (f *funcModel) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func textResponse(s string) *llms.ContentResponse {
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: s}}}
}

func human(s string) []llms.MessageContent {
	return []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, s)}
}
