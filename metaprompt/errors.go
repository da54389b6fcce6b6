package metaprompt

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors; callers classify with errors.Is.
var (
	// ErrInvalidPrompt: the model did not write a prompt that passes Check,
	// even after a repair round. The error is an *Error.
	ErrInvalidPrompt = errors.New("metaprompt: invalid prompt")
	// ErrInvalidBrief: the brief cannot be expanded (no name, nothing to
	// expand, a tool without a name).
	ErrInvalidBrief = errors.New("metaprompt: invalid brief")
	// ErrConfig: New was given an unusable Config.
	ErrConfig = errors.New("metaprompt: invalid config")
	// ErrCache: the cache store failed to read or write an entry.
	ErrCache = errors.New("metaprompt: cache")
)

// Error is the failure of an expansion whose last reply still failed Check
// after the repair round. It matches ErrInvalidPrompt.
type Error struct {
	// Agent is the name in the brief.
	Agent string
	// Attempts counts the model calls made.
	Attempts int
	// Problems are what Check found in Output.
	Problems []Problem
	// Output is the model's last reply, with think blocks and a wrapping
	// code fence removed.
	Output string
}

// Error names the agent and lists the problems.
func (e *Error) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Message
	}
	return fmt.Sprintf("metaprompt: agent %q: invalid prompt after %d attempts: %s",
		e.Agent, e.Attempts, strings.Join(msgs, "; "))
}

// Unwrap returns ErrInvalidPrompt.
func (e *Error) Unwrap() error { return ErrInvalidPrompt }
