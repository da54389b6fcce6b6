package window

import (
	"context"
	"errors"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
)

// BuildFunc builds the window of a model call. force is false on the
// first attempt and true on the retry after a context overflow, when the
// window must shrink whatever its estimated size (Request.Force).
type BuildFunc func(ctx context.Context, force bool) (Result, error)

// CallWithOverflowRetry calls model with the messages build returns. When
// the provider refuses them with llm.ErrContextOverflow, it builds again
// with force — the steps tiered and the older history summarized and
// archived — and calls once more. A second overflow, or a rebuilt window
// no smaller than the first, is an *OverflowError. Other errors are
// returned as the model gave them. The Result is the one the last call
// was made with; keep its Compacted messages.
func CallWithOverflowRetry(ctx context.Context, model llms.Model, build BuildFunc, opts ...llms.CallOption) (*llms.ContentResponse, Result, error) {
	res, err := build(ctx, false)
	if err != nil {
		return nil, Result{}, err
	}
	// The snapshot of each call is published by build: a model wrapped
	// with Observe does not publish another.
	callCtx := withAssembled(ctx)
	resp, err := model.GenerateContent(callCtx, res.Messages, opts...)
	if err == nil || !errors.Is(llm.Classify(err), llm.ErrContextOverflow) {
		return resp, res, err
	}
	first := res.Snapshot.TotalTokens
	retry, berr := build(ctx, true)
	if berr != nil {
		return nil, res, berr
	}
	if retry.Snapshot.TotalTokens >= first {
		return nil, retry, &OverflowError{Agent: retry.Snapshot.Agent, Tokens: first, Err: llm.Classify(err)}
	}
	resp, err = model.GenerateContent(callCtx, retry.Messages, opts...)
	if err != nil && errors.Is(llm.Classify(err), llm.ErrContextOverflow) {
		return nil, retry, &OverflowError{Agent: retry.Snapshot.Agent, Tokens: retry.Snapshot.TotalTokens,
			Retried: true, Err: llm.Classify(err)}
	}
	return resp, retry, err
}

// Generate assembles req and calls model with it through
// CallWithOverflowRetry.
func (b *Builder) Generate(ctx context.Context, model llms.Model, req Request, opts ...llms.CallOption) (*llms.ContentResponse, Result, error) {
	return CallWithOverflowRetry(ctx, model, func(ctx context.Context, force bool) (Result, error) {
		r := req
		r.Force = r.Force || force
		return b.Assemble(ctx, r)
	}, opts...)
}
