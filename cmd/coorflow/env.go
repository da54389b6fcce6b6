package main

import (
	"context"
	"errors"

	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/trace"
	"github.com/coorflow/coorflow/workflows"
)

// environment is the one definition of the environment the commands
// compile workflows with: what it is (runs.Env, which every run carries
// and its recording keeps) and what makes it so. Each command decides it
// once, at start: runEnvironment (run, and what the inspection commands
// report), servedEnvironment (serve, mcp, worker, run --temporal), and
// replayEnvironment (replay: the recording's).
type environment struct {
	desc runs.Env
	// python is the python tool's configuration; nil turns code
	// execution off.
	python *tools.PythonConfig
	// line says what code execution is, for the start-up message.
	line string
}

// runEnvironment is the environment of coorflow run: the user's own file,
// its python code run directly, with a scrubbed environment.
func runEnvironment() environment {
	return environment{desc: runs.Env{CodeExec: runs.CodeExecLocal}, python: localPython(),
		line: "on, on this machine (coorflow run runs your own file's code; serve, mcp and worker run code only in a sandbox)"}
}

// servedEnvironment is the environment of the commands that run others'
// runs (serve, mcp, worker) and of run --temporal, whose nodes run on the
// workers: code execution off unless allowed, and then always in the
// sandbox.
func servedEnvironment(ctx context.Context, allow bool) environment {
	if !allow {
		return environment{desc: runs.Env{CodeExec: runs.CodeExecOff},
			line: "off: the python tool refuses to run code (--allow-code-exec runs it in a bubblewrap sandbox)"}
	}
	env := environment{desc: runs.Env{CodeExec: runs.CodeExecSandbox}, python: &tools.PythonConfig{},
		line: "on, in a bubblewrap sandbox (no network, no file of this host but the system's, limited memory, CPU time and processes)"}
	var se *tools.SandboxError
	if err := tools.CheckSandbox(ctx, *env.python); errors.As(err, &se) {
		env.line = "on, but the sandbox cannot be set up, so the python tool refuses to run code: " + se.Reason
	}
	return env
}

// replayEnvironment is the environment a recorded run had, as its
// recording says: code execution off when it was, else on in the sandbox
// (a served run's code came from a caller's model; the models see the
// same tool either way). A run recorded before environments were replays
// with code execution on.
func replayEnvironment(run trace.RunInfo) (environment, error) {
	desc, ok, err := runs.DecodeEnv(run.Runtime[runs.RuntimeEnv])
	if err != nil {
		return environment{}, err
	}
	if ok && !desc.CodeExec.Enabled() {
		return environment{desc: desc}, nil
	}
	if !ok {
		desc = runs.Env{CodeExec: runs.CodeExecSandbox}
	}
	return environment{desc: desc, python: &tools.PythonConfig{}}, nil
}

// of is the environment's description for the runs of workflow wf.
func (e environment) of(wf *workflowRef) runs.Env {
	d := e.desc
	d.Workflow = wf.ref
	return d
}

// apply sets what the environment decides in env.
func (e environment) apply(env workflows.Env) workflows.Env {
	env.Python = e.python
	return env
}
