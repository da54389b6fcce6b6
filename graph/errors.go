package graph

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors callers test with errors.Is.
var (
	// ErrStepLimit: a run took more steps than its limit. The error is a
	// *StepLimitError.
	ErrStepLimit = errors.New("graph: step limit reached")
	// ErrConflictingWrites: two writes to a last-value channel in one step.
	// The error is a *WriteConflictError.
	ErrConflictingWrites = errors.New("graph: conflicting writes")
	// ErrInvalidGraph: Compile found problems. The error is a *CompileError.
	ErrInvalidGraph = errors.New("graph: invalid graph")
	// ErrNodeTimeout: a node did not finish within its timeout.
	ErrNodeTimeout = errors.New("graph: node timed out")
	// ErrUnknownChannel: a node wrote to a channel the graph does not declare.
	ErrUnknownChannel = errors.New("graph: unknown channel")
	// ErrUnknownNode: a node routed to, or sent a packet to, a node the
	// graph does not have or that it did not declare as a destination.
	ErrUnknownNode = errors.New("graph: unknown node")
	// ErrUnknownBranch: a Router returned a label its conditional edge
	// does not declare.
	ErrUnknownBranch = errors.New("graph: unknown branch")
	// ErrNoInput: a run of a thread that does not exist was given no input
	// (nil): there is nothing to continue. It comes with ErrNotFound.
	ErrNoInput = errors.New("graph: no input")
	// ErrAmbiguousResume: one answer (Resume, or ResumeAt with a path) fits
	// several pending interrupts.
	ErrAmbiguousResume = errors.New("graph: ambiguous resume")
	// ErrInvalidCommand: a node returned a command the graph cannot follow,
	// such as a Send packet for End.
	ErrInvalidCommand = errors.New("graph: invalid command")
)

// NodeError is the failure of one node: its own error, a panic, a timeout,
// an invalid command, or a failing router on its edges.
type NodeError struct {
	// Node is the node's name; Path its full path (graph/node, nested).
	Node string
	Path string
	// Step is the step in which it ran, Attempt the attempt that failed
	// (1 for the first).
	Step    int
	Attempt int
	// Err is the cause. A panic is a *PanicError.
	Err error
}

func (e *NodeError) Error() string {
	return fmt.Sprintf("graph: node %q (step %d, attempt %d): %v", e.Node, e.Step, e.Attempt, e.Err)
}

func (e *NodeError) Unwrap() error { return e.Err }

// PanicError is a panic recovered from a node, with its stack.
type PanicError struct {
	Value any
	Stack string
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// StepLimitError reports a run stopped by its step limit.
type StepLimitError struct {
	Limit int
	// LastNodes are the nodes of the last step that ran.
	LastNodes []string
	// Setting is where the limit is raised (StepLimitSetting); empty
	// means the StepLimit option.
	Setting string
}

func (e *StepLimitError) Error() string {
	setting := e.Setting
	if setting == "" {
		setting = "graph.StepLimit"
	}
	return fmt.Sprintf("graph: step limit of %d reached (last step ran %s); raise it with %s if the loop is intended",
		e.Limit, strings.Join(e.LastNodes, ", "), setting)
}

// Is reports ErrStepLimit.
func (e *StepLimitError) Is(target error) bool { return target == ErrStepLimit }

// WriteConflictError reports two writes to a last-value channel in one step.
type WriteConflictError struct {
	Channel string
	Step    int
	// Writers are the nodes (or tasks) that wrote, in apply order.
	Writers []string
}

func (e *WriteConflictError) Error() string {
	return fmt.Sprintf("graph: step %d: channel %q keeps the last value but was written by %s in the same step; give it a reducer (graph.Append, graph.Merge, graph.Sum, graph.Reduce) or write it from one node",
		e.Step, e.Channel, quoteJoin(e.Writers))
}

// Is reports ErrConflictingWrites.
func (e *WriteConflictError) Is(target error) bool { return target == ErrConflictingWrites }

// CompileError lists every problem Compile found.
type CompileError struct {
	Graph    string
	Problems []string
}

func (e *CompileError) Error() string {
	if len(e.Problems) == 1 {
		return fmt.Sprintf("graph %q: %s", e.Graph, e.Problems[0])
	}
	return fmt.Sprintf("graph %q: %d problems:\n  - %s", e.Graph, len(e.Problems), strings.Join(e.Problems, "\n  - "))
}

// Is reports ErrInvalidGraph.
func (e *CompileError) Is(target error) bool { return target == ErrInvalidGraph }

func quoteJoin(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	switch len(q) {
	case 0:
		return ""
	case 1:
		return q[0]
	case 2:
		return q[0] + " and " + q[1]
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}
