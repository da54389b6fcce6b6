package graph

import "errors"

// Interrupt is a question a paused run is waiting on.
type Interrupt struct {
	// ID is stable: the same question in the same task of the same
	// checkpoint has the same id across resumes and processes.
	ID string `json:"id"`
	// Node and Path locate the task that asked.
	Node string `json:"node"`
	Path string `json:"path"`
	// Payload is what the node passed to Interrupt.
	Payload any `json:"payload"`
}

// interruptError is returned by a node whose task is waiting on answers.
type interruptError struct {
	interrupts []Interrupt
}

func (e *interruptError) Error() string { return "graph: interrupted" }

func isInterrupt(err error) bool {
	var ie *interruptError
	return errors.As(err, &ie)
}
