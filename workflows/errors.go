package workflows

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Sentinel errors callers test with errors.Is.
var (
	// ErrInvalidFile: a workflow file is not valid. The error is a
	// *FileError listing every problem found.
	ErrInvalidFile = errors.New("workflows: invalid workflow file")
	// ErrUnknownWorkflow: no built-in workflow has that name.
	ErrUnknownWorkflow = errors.New("workflows: unknown built-in workflow")
	// ErrNoModel: a node needs a model and none is configured.
	ErrNoModel = errors.New("workflows: no model configured")
)

// Problem is one thing wrong in a workflow file, and where.
type Problem struct {
	// File is the file's path as given to Load.
	File string `json:"file"`
	// Line and Column locate the offending key or value, from 1.
	Line   int `json:"line"`
	Column int `json:"column"`
	// Path is the key path of the offending entry, such as
	// "nodes.planner.tier" or "edges[2].to"; empty for the whole file.
	Path string `json:"path,omitempty"`
	// Message says what is wrong, and often how to fix it.
	Message string `json:"message"`

	// missing is the field a "missing required field" problem of the
	// schema names: the checks leave that field alone, not the entry.
	missing string
	// unknown marks an "unknown field" problem of the schema: the field
	// is ignored, so what the checks find at its entry still stands.
	unknown bool
}

// String renders the problem as "file:line:column: path: message".
func (p Problem) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d:%d: ", p.File, max(p.Line, 1), max(p.Column, 1))
	if p.Path != "" {
		b.WriteString(p.Path + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// FileError lists every problem found in a workflow file, in the order
// they appear in the file.
type FileError struct {
	File     string
	Problems []Problem
}

// Error renders every problem, one per line.
func (e *FileError) Error() string {
	if len(e.Problems) == 1 {
		return "workflows: " + e.Problems[0].String()
	}
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return fmt.Sprintf("workflows: %s: %d problems:\n%s", e.File, len(e.Problems), strings.Join(lines, "\n"))
}

// Is reports ErrInvalidFile.
func (e *FileError) Is(target error) bool { return target == ErrInvalidFile }

// problems collects the problems of one file.
type problems struct {
	file string
	list []Problem
}

// at records a problem at a position.
func (ps *problems) at(pos position, path, format string, args ...any) {
	ps.list = append(ps.list, Problem{File: ps.file, Line: pos.line, Column: pos.col, Path: path, Message: fmt.Sprintf(format, args...)})
}

func (ps *problems) add(p ...Problem) { ps.list = append(ps.list, p...) }

// err returns the problems as a *FileError sorted by position, or nil.
func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	list := slices.Clone(ps.list)
	slices.SortStableFunc(list, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	list = slices.CompactFunc(list, func(a, b Problem) bool { return a == b })
	return &FileError{File: ps.file, Problems: list}
}
