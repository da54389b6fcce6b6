package scripted

import (
	"errors"
	"fmt"
)

var (
	// ErrExhausted means an agent called more often than it has replies.
	ErrExhausted = errors.New("scripted: script exhausted")
	// ErrNoReply means no rule, agent entry or default answers a call.
	ErrNoReply = errors.New("scripted: no reply scripted")
	// ErrToolNotOffered means a reply calls a tool the call did not offer.
	ErrToolNotOffered = errors.New("scripted: tool not offered")
	// ErrInvalidScript means a script file is malformed.
	ErrInvalidScript = errors.New("scripted: invalid script")
	// ErrScriptTooLarge means a script is longer than MaxScriptBytes.
	ErrScriptTooLarge = fmt.Errorf("scripted: the script is longer than %d MiB", MaxScriptBytes>>20)
)

// TurnError is the failure of one call, naming the agent and its turn.
// Err is ErrExhausted, ErrNoReply or ErrToolNotOffered.
type TurnError struct {
	Agent  string // the calling agent's label
	Turn   int    // the agent's call number, from 1
	Reason string // what went wrong, in words
	Err    error  // the sentinel
}

// Error returns "scripted: agent "name" turn N: reason".
func (e *TurnError) Error() string {
	return fmt.Sprintf("scripted: agent %q turn %d: %s", e.Agent, e.Turn, e.Reason)
}

// Unwrap returns the sentinel.
func (e *TurnError) Unwrap() error { return e.Err }
