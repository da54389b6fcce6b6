package graph

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
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
	// through JSON when read from a saver): InterruptPayload reads it as a
	// T either way.
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

// InterruptPayload decodes the payload of in into a T. It goes through
// JSON whatever the source, so it reads the same from Result.Interrupts
// (where Payload is the Go value the node passed to Interrupt) and from
// State (where Payload was read back from the saver as JSON values).
func InterruptPayload[T any](in InterruptInfo) (T, error) {
	var v T
	raw, err := json.Marshal(in.Payload)
	if err != nil {
		return v, fmt.Errorf("graph: payload of interrupt %s at %q does not encode as JSON: %w", in.ID, in.Path, err)
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("graph: payload of interrupt %s at %q does not decode as %T: %w", in.ID, in.Path, v, err)
	}
	return v, nil
}

// resumeSpec holds the answers of one run: one answer for the only pending
// interrupt, or answers by id and by path.
type resumeSpec struct {
	one    json.RawMessage
	hasOne bool
	each   map[string]json.RawMessage // by interrupt id
	at     map[string]json.RawMessage // by interrupt path
	err    error
}

// addResume lets f add to the run's answers, leaving the config it was
// copied from (a Runnable's defaults) untouched.
func (c *config) addResume(f func(rs *resumeSpec) error) {
	rs := &resumeSpec{}
	if c.resume != nil {
		*rs = *c.resume
		rs.each, rs.at = maps.Clone(rs.each), maps.Clone(rs.at)
	}
	if err := f(rs); err != nil && rs.err == nil {
		rs.err = err
	}
	c.resume = rs
}

func encodeAnswer(what string, v any) (json.RawMessage, error) {
	raw, err := json.Marshal(v)
	if err != nil && what != "" {
		err = fmt.Errorf("answer to %s: %w", what, err)
	}
	return raw, err
}

// Resume answers the pending interrupt of the thread with v and continues
// the run. It is an error when several interrupts are pending (answer them
// with ResumeAt or ResumeEach) or none is. v must encode as JSON.
func Resume(v any) Option {
	return func(c *config) {
		c.addResume(func(rs *resumeSpec) (err error) {
			rs.one, err = encodeAnswer("", v)
			rs.hasOne = true
			return err
		})
	}
}

// ResumeEach answers pending interrupts by id and continues the run.
// Interrupts it does not answer stay pending: the run pauses again with
// them once everything else that can run has run. It adds to the answers
// of other ResumeEach and ResumeAt options.
func ResumeEach(answers map[string]any) Option {
	return func(c *config) {
		c.addResume(func(rs *resumeSpec) error {
			if rs.each == nil {
				rs.each = make(map[string]json.RawMessage, len(answers))
			}
			var errs []error
			for _, id := range sortedKeys(answers) {
				raw, err := encodeAnswer(id, answers[id])
				errs = append(errs, err)
				rs.each[id] = raw
			}
			return errors.Join(errs...)
		})
	}
}

// ResumeAt answers the pending interrupt asked at path with v and continues
// the run. path is an interrupt's Path ("review/sub/ask"), or that path
// without the root graph's name ("sub/ask"). Several ResumeAt options (and
// ResumeEach) answer several questions in one call; the others stay
// pending. It is an error when no pending interrupt has the path, or
// several do (a node that asked twice in one scope: answer them by id with
// ResumeEach).
func ResumeAt(path string, v any) Option {
	return func(c *config) {
		c.addResume(func(rs *resumeSpec) error {
			if rs.at == nil {
				rs.at = make(map[string]json.RawMessage)
			}
			raw, err := encodeAnswer(path, v)
			rs.at[path] = raw
			return err
		})
	}
}

// matchPath returns the interrupts of pending asked at path (see ResumeAt)
// in a run of the graph called root.
func matchPath(pending []InterruptInfo, root, path string) []InterruptInfo {
	var out []InterruptInfo
	for _, in := range pending {
		if in.Path == path || in.Path == root+"/"+path {
			out = append(out, in)
		}
	}
	return out
}

// describeInterrupts lists interrupts as "path (id)".
func describeInterrupts(ins []InterruptInfo) string {
	parts := make([]string, len(ins))
	for i, in := range ins {
		parts[i] = in.Path + " (" + in.ID + ")"
	}
	return strings.Join(parts, ", ")
}
