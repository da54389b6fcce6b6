package workflows

import (
	"embed"
	"fmt"
	"slices"
	"strings"
)

//go:embed research.yaml coor.yaml
var builtinFiles embed.FS

// builtinNames are the workflows that ship as files in this package.
var builtinNames = []string{"coor", "research"}

// Builtins returns the names of the built-in workflow files: coor and
// research.
func Builtins() []string { return slices.Clone(builtinNames) }

// Builtin loads the built-in workflow file called name ("research" or
// "coor"), the file form of Research and Coor.
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
