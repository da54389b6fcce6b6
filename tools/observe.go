package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
)

// Call is one tool call, as a model or a node asks for it.
type Call struct {
	// ID identifies the call in events, in the journal and in replays: the
	// id the model gave its tool call. A call that a node makes itself may
	// leave it empty; it is then derived from Name and Args, so that it is
	// the same on every run of the node.
	ID string
	// Name is the tool to call; Args its arguments, a JSON object (empty
	// means none).
	Name string
	Args json.RawMessage
}

// Caller runs tool calls through the journal and reports them as events:
// the tools twin of llm.Observe. Every tool call made inside a graph node
// goes through a Caller — the ReAct agent's, a workflow file's tool node's,
// and a Go node's own:
//
//	res, err := tools.Observe(reg).Run(ctx, tools.Call{Name: "web_search", Args: args}, tools.RunOptions{})
//	if err != nil {
//		return graph.Command{}, err // an interrupt, or the journal failed
//	}
//
// A Caller is safe for concurrent use.
type Caller struct {
	reg            *Registry
	recordFailures bool
}

// ObserveOption configures a Caller.
type ObserveOption func(*Caller)

// RecordFailures makes the Caller journal failed calls too, for a caller
// that passes a failure on rather than failing with it — a model that
// reads the error and goes on — so that when the node runs again it sees
// the same failure, not a second call. Without it a failed call is not
// recorded (graph.Do records only successes): a node that fails because its
// tool failed calls the tool again when it is retried.
func RecordFailures() ObserveOption { return func(c *Caller) { c.recordFailures = true } }

// Observe returns the Caller of reg's tools; a nil reg has none.
func Observe(reg *Registry, opts ...ObserveOption) *Caller {
	if reg == nil {
		reg = &Registry{}
	}
	c := &Caller{reg: reg}
	for _, opt := range opts {
		opt(c)
	}
	return c
}

// errNotRecorded keeps a failed call out of the journal.
var errNotRecorded = errors.New("tools: failed call not recorded")

// callRecord is what the journal keeps of a tool call.
type callRecord struct {
	Status   string        `json:"status"`
	Text     string        `json:"text"`
	Duration time.Duration `json:"duration"`
}

// Run runs call the way Registry.Run does. Inside a running graph node
// it also
//
//   - publishes a tool_call event (CallEvent) before the call and a
//     tool_result event (ResultEvent) after it, at the caller's path,
//     labelled with llm.AgentFrom(ctx);
//   - records the result in the node's journal (graph.Do, under
//     "tool:<ID>"): when the node runs again — after an interrupt later in
//     the node, a retry or a crash — the recorded result is returned and
//     the tool is not called again. A failed call is recorded only with
//     RecordFailures; a replayed failure keeps its text (Result.Text), not
//     its error type;
//   - runs the tool in a scope of its own, "tool:<ID>", so that what the
//     tool journals or asks is told apart from concurrent calls.
//
// The error is not how the call went (a failed call is a Result with
// StatusFailed) but what the node should know: the tool interrupted the
// run (graph.Interrupt, as ask_human does) — there is no result, return the
// error, the call runs again on resume — or the journal could not record
// the result, which is then a failure whose Text says so.
func (c *Caller) Run(ctx context.Context, call Call, opts RunOptions) (Result, error) {
	if call.ID == "" {
		call.ID = callID(call.Name, call.Args)
	}
	args := json.RawMessage(strings.TrimSpace(string(call.Args)))
	shown := args
	if !json.Valid(shown) {
		shown = nil
	}
	agent := llm.AgentFrom(ctx)
	graph.Emit(ctx, CallEvent{Agent: agent, ID: call.ID, Name: call.Name, Args: shown})
	var res Result
	rec, err := graph.Do(ctx, "tool:"+call.ID, func(ctx context.Context) (callRecord, error) {
		res = c.reg.Run(graph.WithScope(ctx, "tool:"+call.ID), call.Name, args, opts)
		var ie *graph.InterruptError
		if errors.As(res.Err, &ie) {
			return callRecord{}, ie // not a result: the run pauses, and the call runs again on resume
		}
		rec := callRecord{Status: res.Status.String(), Text: res.Text(), Duration: res.Duration}
		if res.Status == StatusFailed && !c.recordFailures {
			return rec, errNotRecorded
		}
		return rec, nil
	})
	var ie *graph.InterruptError
	switch {
	case errors.As(err, &ie):
		return Result{}, ie
	case errors.Is(err, errNotRecorded):
		err = nil
	case err != nil: // the journal could not record the call
		rec = callRecord{Status: StatusFailed.String(), Text: "The tool call could not be completed: " + err.Error()}
	}
	if res.Status == 0 || err != nil { // replayed from the journal, or not recorded
		res = rec.result(call.Name)
	}
	graph.Emit(ctx, ResultEvent{Agent: agent, ID: call.ID, Name: call.Name, Status: rec.Status, Output: rec.Text, Duration: rec.Duration})
	return res, err
}

// result rebuilds the Result of a recorded call.
func (r callRecord) result(tool string) Result {
	res := Result{Tool: tool, Output: r.Text, Duration: r.Duration}
	switch r.Status {
	case StatusOK.String():
		res.Status = StatusOK
	case StatusDegraded.String():
		res.Status = StatusDegraded
	default:
		res.Status, res.Output, res.Err = StatusFailed, "", &recordedError{text: r.Text}
	}
	return res
}

// recordedError is the error of a failed call replayed from the journal:
// ErrorText renders it as the text the model saw the first time.
type recordedError struct{ text string }

func (e *recordedError) Error() string { return strings.TrimPrefix(e.text, "Error: ") }

// callID derives the id of a call that has none from what it calls.
func callID(name string, args json.RawMessage) string {
	sum := sha256.Sum256([]byte(name + "\x00" + strings.TrimSpace(string(args))))
	return "call_" + hex.EncodeToString(sum[:6])
}
