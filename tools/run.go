package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"
)

// Status says how a tool call ended.
type Status int

const (
	// StatusOK means the tool answered; Result.Output is its text.
	StatusOK Status = iota + 1
	// StatusDegraded means the tool did not answer in time; Result.Output
	// is a notice for the model to continue without it.
	StatusDegraded
	// StatusFailed means the call failed; Result.Err says why.
	StatusFailed
)

// String returns "ok", "degraded" or "failed".
func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusDegraded:
		return "degraded"
	case StatusFailed:
		return "failed"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Result is the outcome of one tool call.
type Result struct {
	Tool     string        // the tool's name (as asked for, if unknown)
	Status   Status        // ok, degraded or failed
	Output   string        // the tool's text, or the timeout notice when degraded
	Err      error         // why the call failed; nil unless Status is StatusFailed
	Duration time.Duration // from the start of Run to its return
}

// Text is what the model should be shown for this call in a tool-result
// message: the output, or the error rendered by ErrorText.
func (r Result) Text() string {
	if r.Status == StatusFailed {
		return ErrorText(r.Err)
	}
	return r.Output
}

// RunOptions configures one call.
type RunOptions struct {
	// Timeout bounds the call. Zero means the tool's own timeout if it is a
	// TimeoutTool, else DefaultTimeout.
	Timeout time.Duration
}

// Run validates args against t's schema, calls t with a timeout, and
// reports the outcome. It never panics because of the tool:
//
//   - arguments that do not match the schema fail with an *ArgumentError
//     and the tool is not called;
//   - a tool that returns an error fails with a *ToolError;
//   - a tool that panics fails with a *PanicError;
//   - a tool that does not answer in time gives a degraded result whose
//     Output tells the model to continue without it;
//   - if ctx itself ends, the call fails with an error wrapping ctx.Err().
//
// Run returns at the deadline even if the tool ignores its context. The
// tool's context is cancelled, but its goroutine is left to finish on its
// own: tools must honour ctx so that it does.
func Run(ctx context.Context, t Tool, args json.RawMessage, opts RunOptions) Result {
	start := time.Now()
	res := run(ctx, t, args, timeoutFor(t, opts))
	res.Tool = t.Name()
	res.Duration = time.Since(start)
	return res
}

// timeoutFor picks the call's timeout, then the tool's, then the default.
func timeoutFor(t Tool, opts RunOptions) time.Duration {
	if opts.Timeout > 0 {
		return opts.Timeout
	}
	if tt, ok := t.(TimeoutTool); ok && tt.Timeout() > 0 {
		return tt.Timeout()
	}
	return DefaultTimeout
}

// outcome is what the tool's goroutine sends back.
type outcome struct {
	out string
	err error
}

func run(ctx context.Context, t Tool, args json.RawMessage, timeout time.Duration) Result {
	if err := ctx.Err(); err != nil {
		return failed(fmt.Errorf("tools: tool %q not called: %w", t.Name(), err))
	}
	if err := validateArgs(t, args); err != nil {
		return failed(err)
	}
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan outcome, 1) // buffered: the goroutine never blocks on send
	go call(callCtx, t, normalizeArgs(args), done)
	select {
	case o := <-done:
		return finished(ctx, callCtx, t, timeout, o)
	case <-callCtx.Done():
		return expired(ctx, t, timeout)
	}
}

// call runs the tool, turning a panic into a *PanicError.
func call(ctx context.Context, t Tool, args json.RawMessage, done chan<- outcome) {
	defer func() {
		if v := recover(); v != nil {
			done <- outcome{err: &PanicError{Tool: t.Name(), Value: v, Stack: debug.Stack()}}
		}
	}()
	out, err := t.Call(ctx, args)
	done <- outcome{out: out, err: err}
}

// finished classifies a call that returned.
func finished(ctx, callCtx context.Context, t Tool, timeout time.Duration, o outcome) Result {
	switch {
	case o.err == nil:
		return Result{Status: StatusOK, Output: o.out}
	case errors.Is(o.err, ErrToolPanic), errors.Is(o.err, ErrInvalidArguments):
		return failed(o.err)
	case callCtx.Err() != nil:
		// The tool gave up because its context ended.
		return expired(ctx, t, timeout)
	default:
		return failed(&ToolError{Tool: t.Name(), Err: o.err})
	}
}

// expired reports a call whose context ended before the tool answered.
func expired(ctx context.Context, t Tool, timeout time.Duration) Result {
	if err := ctx.Err(); err != nil {
		return failed(fmt.Errorf("tools: tool %q abandoned: %w", t.Name(), err))
	}
	return Result{Status: StatusDegraded, Output: degradedText(t.Name(), timeout)}
}

// degradedText is the notice a model sees when a tool timed out.
func degradedText(name string, timeout time.Duration) string {
	return fmt.Sprintf("tool %q did not answer within %s; continue with what you have.", name, timeout)
}

func failed(err error) Result {
	return Result{Status: StatusFailed, Err: err}
}
