package window

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidPart is wrapped by the error returned for a part without a
	// name, with a name used twice, with an unknown kind, or with both text
	// and messages.
	ErrInvalidPart = errors.New("window: invalid part")
	// ErrInvalidBudget is wrapped by the error returned for a negative
	// budget, or one whose output reserve leaves no room for input.
	ErrInvalidBudget = errors.New("window: invalid budget")
	// ErrBudgetTooSmall is wrapped by the error returned when the required
	// parts, each cut as short as it can be, still do not fit the budget.
	ErrBudgetTooSmall = errors.New("window: budget too small for the required parts")
	// ErrNoReader is returned by the read_context tool when it was built
	// without a Reader.
	ErrNoReader = errors.New("window: no reader for offloaded context")
)

// OverflowError reports a model call that the provider refused for too
// many input tokens even after the window was rebuilt with the history
// summarized (Retried), or that could not be retried because nothing was
// left to summarize. errors.Is(err, llm.ErrContextOverflow) holds.
type OverflowError struct {
	// Agent is the caller's label from the snapshot.
	Agent string
	// Tokens is the estimated input of the last attempt.
	Tokens int
	// Retried is true when a second, summarized attempt was made.
	Retried bool
	// Err is the provider's error, classified by llm.Classify.
	Err error
}

// Error says how many tokens the last attempt held and whether it was a
// retry.
func (e *OverflowError) Error() string {
	if e.Retried {
		return fmt.Sprintf("window: context overflow again after summarizing (about %d input tokens): %v", e.Tokens, e.Err)
	}
	return fmt.Sprintf("window: context overflow and nothing left to summarize (about %d input tokens): %v", e.Tokens, e.Err)
}

// Unwrap returns the provider's classified error.
func (e *OverflowError) Unwrap() error { return e.Err }
