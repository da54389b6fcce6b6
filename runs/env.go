package runs

import (
	"encoding/json"
	"fmt"
)

// RuntimeEnv is the runtime key (graph.WithRuntime) under which a run
// carries the description of the environment its workflow was compiled
// with (Env, as JSON text), so that its recording keeps it and a replay
// compiles the same.
const RuntimeEnv = "coorflow.env"

// RuntimeStart is the runtime key under which a run's recording keeps the
// checkpoint of its thread that an input started it from (none for a new
// thread): the end of the conversation's previous turn, from which a
// replay of a later turn starts too.
const RuntimeStart = "coorflow.start_checkpoint"

// CodeExec is how the python tool of a workflow runs code.
type CodeExec string

// The code execution policies.
const (
	// CodeExecOff: the tool is there, so that every file compiles, but
	// its description tells the model not to call it and each call is
	// refused (tools.PythonDisabled). The default of the commands that
	// serve others' runs (serve, mcp, worker).
	CodeExecOff CodeExec = "off"
	// CodeExecSandbox: code runs in the bubblewrap sandbox (serve, mcp
	// and worker with --allow-code-exec; replay).
	CodeExecSandbox CodeExec = "sandbox"
	// CodeExecLocal: code runs directly, with a scrubbed environment:
	// the user's own file run from the command line (coorflow run).
	CodeExecLocal CodeExec = "local"
)

// Enabled reports whether the python tool runs code: the models see the
// same tool, whichever of sandbox and local runs it.
func (c CodeExec) Enabled() bool { return c == CodeExecSandbox || c == CodeExecLocal }

// Env describes the environment a workflow is compiled with, as far as it
// changes what the models are asked: the one definition each entry point
// (run, serve, worker, mcp) decides once at start, and that a replay
// takes from the recording. The models themselves are the recording's
// (trace.Cassette).
type Env struct {
	// CodeExec is the python tool's policy.
	CodeExec CodeExec `json:"code_exec"`
	// Workflow is the file the workflow was compiled from, as the CLI
	// names it again (an absolute path, or builtin:<name>): a served
	// run's workflow is otherwise known by its name alone.
	Workflow string `json:"workflow,omitempty"`
	// LeftOut names the optional tools ("web_search") and MCP servers
	// ("mcp.<server>") of the file that its compile left out (a key
	// unset, a server unreachable): the models saw fewer tools, and a
	// replay leaves them out too (workflows.Env.LeaveOut).
	LeftOut []string `json:"left_out,omitempty"`
}

// Encode is the env as RuntimeEnv holds it.
func (e Env) Encode() string {
	b, _ := json.Marshal(e)
	return string(b)
}

// Runtime is the env as runtime values.
func (e Env) Runtime() map[string]any { return map[string]any{RuntimeEnv: e.Encode()} }

// DecodeEnv reads the text of RuntimeEnv; false when s is empty (a run
// recorded before environments were).
func DecodeEnv(s string) (Env, bool, error) {
	if s == "" {
		return Env{}, false, nil
	}
	var e Env
	if err := json.Unmarshal([]byte(s), &e); err != nil {
		return Env{}, false, fmt.Errorf("runs: environment %q: %w", s, err)
	}
	switch e.CodeExec {
	case CodeExecOff, CodeExecSandbox, CodeExecLocal:
	default:
		return Env{}, false, fmt.Errorf("runs: environment %q: unknown code execution %q (off, sandbox or local)", s, e.CodeExec)
	}
	return e, true, nil
}
