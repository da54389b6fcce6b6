package temporalrun

import (
	"context"
	"errors"

	"go.temporal.io/sdk/temporal"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
)

// errType is the ApplicationError type of a failure the engine reported.
const errType = "coorflow.graph"

// sentinels are the engine's errors a caller tests with errors.Is; they
// keep their identity across the wire by name.
var sentinels = map[string]error{
	"step_limit":          graph.ErrStepLimit,
	"conflicting_writes":  graph.ErrConflictingWrites,
	"node_timeout":        graph.ErrNodeTimeout,
	"unknown_channel":     graph.ErrUnknownChannel,
	"unknown_node":        graph.ErrUnknownNode,
	"unknown_branch":      graph.ErrUnknownBranch,
	"no_input":            graph.ErrNoInput,
	"ambiguous_resume":    graph.ErrAmbiguousResume,
	"invalid_command":     graph.ErrInvalidCommand,
	"not_found":           graph.ErrNotFound,
	"not_interrupted":     graph.ErrNotInterrupted,
	"checkpoint_conflict": graph.ErrCheckpointConflict,
	"corrupt_checkpoint":  graph.ErrCorruptCheckpoint,
	"stale_step":          graph.ErrStaleStep,
	"canceled":            context.Canceled,
	"deadline_exceeded":   context.DeadlineExceeded,
	"unpriced":            llm.ErrUnpriced,
}

// errorInfo is an engine error as it travels in a workflow's history.
type errorInfo struct {
	Message   string                    `json:"message"`
	Sentinels []string                  `json:"sentinels,omitempty"`
	Panic     bool                      `json:"panic,omitempty"`
	Node      *nodeInfo                 `json:"node,omitempty"`
	StepLimit *graph.StepLimitError     `json:"step_limit,omitempty"`
	Conflict  *graph.WriteConflictError `json:"conflict,omitempty"`
	Budget    *llm.BudgetError          `json:"budget,omitempty"`
}

type nodeInfo struct {
	Node    string     `json:"node"`
	Path    string     `json:"path"`
	Step    int        `json:"step"`
	Attempt int        `json:"attempt"`
	Cause   *errorInfo `json:"cause"`
}

func describe(err error) *errorInfo {
	info := &errorInfo{Message: err.Error()}
	for name, s := range sentinels {
		if errors.Is(err, s) {
			info.Sentinels = append(info.Sentinels, name)
		}
	}
	var pe *graph.PanicError
	info.Panic = errors.As(err, &pe)
	var ne *graph.NodeError
	if errors.As(err, &ne) {
		info.Node = &nodeInfo{Node: ne.Node, Path: ne.Path, Step: ne.Step, Attempt: ne.Attempt, Cause: describe(ne.Err)}
	}
	var sl *graph.StepLimitError
	if errors.As(err, &sl) {
		info.StepLimit = sl
	}
	var wc *graph.WriteConflictError
	if errors.As(err, &wc) {
		info.Conflict = wc
	}
	var be *llm.BudgetError
	if errors.As(err, &be) && info.Node == nil {
		info.Budget = be
	}
	return info
}

// shorten cuts the messages of info (and of its causes) to n bytes.
func (info *errorInfo) shorten(n int) {
	if info == nil {
		return
	}
	info.Message = shorten(info.Message, n)
	if info.Node != nil {
		info.Node.Cause.shorten(n)
	}
}

// permanent reports whether err is the engine's verdict on the run (a
// node failed, the graph cannot go on), which no retry of the step
// changes; other errors (the saver unreachable, a conflict a retry
// resolves) are worth retrying.
func permanent(err error) bool {
	var ne *graph.NodeError
	if errors.As(err, &ne) {
		return true
	}
	if errors.Is(err, graph.ErrCheckpointConflict) {
		return false
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// encodeError turns an engine error into an ApplicationError that keeps
// its details; a cancellation stays what it is.
func encodeError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) && !permanent(unwrapCancel(err)) {
		return err
	}
	info := describe(err)
	if permanent(err) {
		return temporal.NewNonRetryableApplicationError(info.Message, errType, nil, *info)
	}
	return temporal.NewApplicationError(info.Message, errType, *info)
}

// unwrapCancel exists so a node failure that happens to wrap a cancel is
// still reported as the node's failure.
func unwrapCancel(err error) error {
	var ne *graph.NodeError
	if errors.As(err, &ne) {
		return ne
	}
	return nil
}

// decodeError rebuilds the engine's error from what a run reported: a
// *graph.NodeError, *graph.StepLimitError or *graph.WriteConflictError
// where the engine returned one, and errors.Is for its sentinels.
func decodeError(err error) error {
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != errType {
		return err
	}
	var info errorInfo
	if derr := app.Details(&info); derr != nil {
		return err
	}
	return info.rebuild()
}

func (info *errorInfo) rebuild() error {
	switch {
	case info.StepLimit != nil:
		return info.StepLimit
	case info.Conflict != nil:
		return info.Conflict
	case info.Node != nil:
		n := info.Node
		return &graph.NodeError{Node: n.Node, Path: n.Path, Step: n.Step, Attempt: n.Attempt, Err: n.Cause.rebuild()}
	case info.Panic:
		return &graph.PanicError{Value: info.Message}
	case info.Budget != nil:
		return info.Budget
	}
	re := &RemoteError{Message: info.Message}
	for _, name := range info.Sentinels {
		if s, ok := sentinels[name]; ok {
			re.sentinels = append(re.sentinels, s)
		}
	}
	return re
}

// RemoteError is an engine error reported by a worker: its message, and
// the engine's sentinel errors it matched there (errors.Is).
type RemoteError struct {
	Message   string
	sentinels []error
}

func (e *RemoteError) Error() string { return e.Message }

// Is reports the sentinels the error matched on the worker.
func (e *RemoteError) Is(target error) bool {
	for _, s := range e.sentinels {
		if s == target {
			return true
		}
	}
	return false
}
