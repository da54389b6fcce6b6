package window

import (
	"context"
	"fmt"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
)

// Builder assembles the messages of model calls under a token budget. It
// is safe for concurrent use: one Builder can serve every agent of a run.
type Builder struct {
	cfg Config

	mu        sync.Mutex
	summaries map[string]string // by kind, text hash and bound
	// tiered holds the steps parts (by agent and part name) that have been
	// tiered: they stay tiered, so that a window that shrinks again (after
	// a clearing or a summary) does not change the prompt's beginning.
	tiered map[string]bool
}

// New returns a Builder with cfg, its zero settings at their defaults.
func New(cfg Config) *Builder {
	return &Builder{cfg: cfg.withDefaults(), summaries: make(map[string]string), tiered: make(map[string]bool)}
}

// Config returns the Builder's configuration, defaults filled in.
func (b *Builder) Config() Config { return b.cfg }

// Request is what one model call should see.
type Request struct {
	// Agent labels the snapshot and names what is offloaded; empty means
	// llm.AgentFrom(ctx).
	Agent string
	// Parts are laid out in this order.
	Parts []Part
	// Budget is the room of the call.
	Budget Budget
	// Force compresses the steps and summarizes the history whatever the
	// window's size; CallWithOverflowRetry sets it after the provider
	// refused a window as too long.
	Force bool
}

// Result is an assembled window.
type Result struct {
	// Messages are what to send.
	Messages []llms.MessageContent
	// Snapshot says what went in, and was published as a snapshot
	// event.
	Snapshot Snapshot
	// Compacted holds, by part name, the new messages of conversation
	// parts that were changed for good — tool results offloaded, older
	// history summarized and archived. Keep them in place of the originals
	// (appending new messages to them), so the next call does not redo the
	// work. Cuts made only to fit this call's budget are not in it.
	Compacted map[string][]llms.MessageContent
}

// Assemble builds the messages of one model call from req's parts, in
// this order of policies: tool results above the offload threshold are
// offloaded, agent outputs above the output threshold compacted; when
// clearing is enabled and the window reaches its threshold, tool results
// older than the last turns are replaced by stubs; when the window
// reaches the steps threshold the completed steps are tiered; when
// it reaches the history threshold the older history is summarized and
// archived; last, if the window exceeds the budget, parts are left out
// lowest priority first, and required parts are cut instead. The
// thresholds of a part's policies measure the window of the parts of its
// priority or higher: a lower-priority part is left out before a more
// important one is compressed. The snapshot is published on ctx as a
// snapshot event (graph.Emit).
//
// A failing Offloader or summarizer does not fail the call: the policy is
// skipped (or the summary is an extract) and the snapshot says so. Errors
// are invalid parts or budget, required parts that cannot fit, and a
// cancelled context.
func (b *Builder) Assemble(ctx context.Context, req Request) (Result, error) {
	if err := validateParts(req.Parts); err != nil {
		return Result{}, err
	}
	if err := validateBudget(req.Budget); err != nil {
		return Result{}, err
	}
	a := b.newAssembly(ctx, req)
	for _, stage := range []func(context.Context) error{
		a.offload, a.compactOutputs, a.clearToolResults, a.compressSteps, a.summarizeHistory, a.pack,
	} {
		if err := stage(ctx); err != nil {
			return Result{}, err
		}
		if err := ctx.Err(); err != nil {
			return Result{}, fmt.Errorf("window: assemble for %q: %w", a.agent, err)
		}
	}
	res := a.result()
	publish(ctx, res.Snapshot)
	return res, nil
}

func validateBudget(bu Budget) error {
	switch {
	case bu.MaxInputTokens < 0 || bu.ReserveForOutput < 0:
		return fmt.Errorf("%w: negative tokens (max input %d, reserve %d)", ErrInvalidBudget, bu.MaxInputTokens, bu.ReserveForOutput)
	case bu.MaxInputTokens > 0 && bu.Limit() <= llm.TokensPerReply:
		return fmt.Errorf("%w: reserving %d of %d tokens for output leaves no room for input",
			ErrInvalidBudget, bu.ReserveForOutput, bu.MaxInputTokens)
	}
	return nil
}
