package plan

import (
	"errors"
	"strings"
)

// ErrInvalid: a planner could not get a valid plan from its model.
var ErrInvalid = errors.New("plan: invalid plan")

// Error is a plan that stayed invalid after the repairs allowed.
type Error struct {
	// Problems are what Validate found in the last plan.
	Problems []string
	// Output is the model's last plan, as JSON.
	Output string
}

func (e *Error) Error() string {
	return "plan: the planner's plan is invalid after repairs: " + strings.Join(e.Problems, "; ")
}

// Unwrap returns ErrInvalid.
func (e *Error) Unwrap() error { return ErrInvalid }
