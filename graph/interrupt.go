package graph

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// InterruptInfo is a question a paused run is waiting on.
type InterruptInfo struct {
	// ID is stable: the same question, asked at the same place of the same
	// task after the same checkpoint, has the same id across resumes and
	// processes.
	ID string `json:"id"`
	// Node and Path locate the task that asked.
	Node string `json:"node"`
	Path string `json:"path"`
	// Payload is what the node passed to Interrupt (after a round trip
	// through JSON when read from a saver).
	Payload any `json:"payload"`
}

// InterruptError is what Interrupt returns when the run must pause: return
// it from the node (wrapped or joined with others is fine).
type InterruptError struct {
	Interrupts []InterruptInfo
}

func (e *InterruptError) Error() string {
	return fmt.Sprintf("graph: interrupted: waiting on %s", interruptIDs(e.Interrupts))
}

// interruptsOf collects the interrupts in err's tree (errors.Join of
// several concurrent questions included).
func interruptsOf(err error) []InterruptInfo {
	var out []InterruptInfo
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *InterruptError:
			out = append(out, e.Interrupts...)
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		}
	}
	walk(err)
	return out
}

// Interrupt asks a question and pauses the run until it is answered. The
// first time, it returns an *InterruptError, which the node must return
// (the run stops, is persisted, and reports the interrupt); when the run is
// resumed with an answer, the node runs again from its start and this call
// returns the answer, decoded from JSON (numbers are float64, objects
// map[string]any). Use InterruptAs for a typed answer.
//
// Code before Interrupt runs again on resume: put side effects in Do. Each
// call in a node is told apart by its order within its scope (WithScope),
// so concurrent questions must come from different scopes.
func Interrupt(ctx context.Context, payload any) (any, error) {
	var v any
	err := interrupt(ctx, payload, &v)
	return v, err
}

// InterruptAs is Interrupt with the answer decoded into a T.
func InterruptAs[T any](ctx context.Context, payload any) (T, error) {
	var v T
	err := interrupt(ctx, payload, &v)
	return v, err
}

func interrupt(ctx context.Context, payload, answer any) error {
	e := emitterFrom(ctx)
	if e == nil || e.t == nil {
		return errors.New("graph: Interrupt called outside a running node")
	}
	t := e.t
	key := t.jr.next(e.scope, "interrupt")
	ns, cp := "", ""
	if e.r.p != nil {
		ns, cp = e.r.p.ns, e.r.p.cp.ID
	}
	id := interruptID(ns, cp, t.label, key)
	if raw, ok := t.resume[id]; ok {
		if err := json.Unmarshal(raw, answer); err != nil {
			return fmt.Errorf("graph: answer to interrupt %s does not decode as %T: %w", id, answer, err)
		}
		return nil
	}
	return &InterruptError{Interrupts: []InterruptInfo{{ID: id, Node: e.node, Path: e.path, Payload: payload}}}
}

func interruptID(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

type resumeSpec struct {
	one    json.RawMessage
	hasOne bool
	each   map[string]json.RawMessage
	err    error
}

// Resume answers the pending interrupt of the thread with v and continues
// the run. It is an error when several interrupts are pending (use
// ResumeEach) or none is. v must encode as JSON.
func Resume(v any) Option {
	return func(c *config) {
		raw, err := json.Marshal(v)
		c.resume = &resumeSpec{one: raw, hasOne: true, err: err}
	}
}

// ResumeEach answers pending interrupts by id and continues the run.
// Interrupts it does not answer stay pending: the run pauses again with
// them once everything else that can run has run.
func ResumeEach(answers map[string]any) Option {
	return func(c *config) {
		rs := &resumeSpec{each: make(map[string]json.RawMessage, len(answers))}
		for id, v := range answers {
			raw, err := json.Marshal(v)
			if err != nil {
				rs.err = fmt.Errorf("answer to %s: %w", id, err)
			}
			rs.each[id] = raw
		}
		c.resume = rs
	}
}
