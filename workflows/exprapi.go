package workflows

import (
	"context"
	"errors"
	"fmt"

	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"

	"github.com/coorflow/coorflow/graph"
)

// Expr is an expression over a file's state and config, compiled and
// type-checked as the file's own conditions and set expressions are, with
// their limits. Package eval grades a run's final state with it.
type Expr struct {
	sc   *scope
	prog *vm.Program
}

// ExprError is an expression that does not compile: where in its text
// (Line and Column from 1) and why.
type ExprError struct {
	Line, Column int
	Message      string
}

func (e *ExprError) Error() string {
	return fmt.Sprintf("workflows: expression: %d:%d: %s", e.Line, e.Column, e.Message)
}

// Expr compiles src against the file's channels (state.NAME) and config
// (config.KEY). The error is an *ExprError.
func (f *File) Expr(src string) (*Expr, error) {
	p, err := f.scope.compileExpr(src, false)
	if err != nil {
		e := &ExprError{Line: 1, Column: 1, Message: f.scope.explain(src, errMessage(err))}
		var fe *file.Error
		if errors.As(err, &fe) {
			e.Line, e.Column = max(fe.Line, 1), fe.Column+1
		}
		return nil, e
	}
	return &Expr{sc: f.scope, prog: p}, nil
}

// Eval runs the expression on state s, the config of the run of ctx
// (graph's runtime) in config, and returns its value as JSON would have
// it (numbers as float64 or int, objects as maps).
func (x *Expr) Eval(ctx context.Context, s graph.State) (any, error) {
	return x.sc.eval(ctx, x.prog, s)
}
