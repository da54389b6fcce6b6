package workflows

import (
	"context"
	"embed"
	"fmt"
	"slices"
	"strings"

	"github.com/coorflow/coorflow/graph"
)

//go:embed research.yaml coor.yaml
var builtinFiles embed.FS

// builtinNames are the workflows that ship as files in this package.
var builtinNames = []string{"coor", "research"}

// Builtins returns the names of the built-in workflow files: coor and
// research.
func Builtins() []string { return slices.Clone(builtinNames) }

// Builtin loads the built-in workflow file called name ("research" or
// "coor"), the one definition of Research and Coor.
func Builtin(name string, opts ...LoadOption) (*File, error) {
	if !slices.Contains(builtinNames, name) {
		return nil, fmt.Errorf("%w %q (built in: %s)", ErrUnknownWorkflow, name, strings.Join(builtinNames, ", "))
	}
	data, err := builtinFiles.ReadFile(name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("workflows: built-in %s: %w", name, err)
	}
	return Parse(name+".yaml", data, opts...)
}

// BuiltinSource returns the YAML of a built-in workflow file.
func BuiltinSource(name string) ([]byte, error) {
	if !slices.Contains(builtinNames, name) {
		return nil, fmt.Errorf("%w %q (built in: %s)", ErrUnknownWorkflow, name, strings.Join(builtinNames, ", "))
	}
	return builtinFiles.ReadFile(name + ".yaml")
}

// Research compiles research.yaml, the Deer-Flow-shaped workflow:
// coordinator → background investigator → planner → human feedback →
// research team → researcher | coder (one step at a time) → … → planner →
// reporter. opts are given to Builtin: WithTools, for one, supplies tools
// written in Go, such as a web_search of the program's own.
func Research(ctx context.Context, env Env, opts ...LoadOption) (*graph.Runnable, error) {
	return compileBuiltin(ctx, "research", env, opts)
}

// Coor compiles coor.yaml, the dynamic-agent workflow: coordinator →
// planner → review → team → planner | reporter. The planner may declare
// new agents; the team node builds them (the meta-prompt stage writes
// their prompts) and runs the plan's steps concurrently as a DAG. opts
// are given to Builtin, as for Research.
func Coor(ctx context.Context, env Env, opts ...LoadOption) (*graph.Runnable, error) {
	return compileBuiltin(ctx, "coor", env, opts)
}

func compileBuiltin(ctx context.Context, name string, env Env, opts []LoadOption) (*graph.Runnable, error) {
	f, err := Builtin(name, opts...)
	if err != nil {
		return nil, err
	}
	return f.Compile(ctx, env)
}
