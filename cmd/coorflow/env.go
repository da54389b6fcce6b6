package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

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
	// left holds what the compiles of each workflow left out (nil:
	// nothing is kept).
	left *leftOut
}

// leftOut is, per workflow, the optional tools and MCP servers its
// compile left out (workflows.Env.LeftOut).
type leftOut struct {
	mu sync.Mutex
	by map[string][]string
	// graphs names the workflow each graph was compiled from (named).
	graphs map[string]string
}

// named notes that workflow compiled to the graph called graph: a worker
// knows a run by its graph.
func (l *leftOut) named(graph, workflow string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.graphs == nil {
		l.graphs = map[string]string{}
	}
	l.graphs[graph] = workflow
}

// ofGraph is of for the workflow that compiled to graph.
func (l *leftOut) ofGraph(graph string) []string {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	workflow := l.graphs[graph]
	l.mu.Unlock()
	return l.of(workflow)
}

func (l *leftOut) add(workflow, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil {
		l.by = map[string][]string{}
	}
	if !slices.Contains(l.by[workflow], name) {
		l.by[workflow] = append(l.by[workflow], name)
	}
}

// of returns what the compile of workflow left out, sorted; nil for
// nothing (or a nil l).
func (l *leftOut) of(workflow string) []string {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.by[workflow]) == 0 {
		return nil
	}
	return slices.Sorted(slices.Values(l.by[workflow]))
}

// runEnvironment is the environment of coorflow run: the user's own file,
// its python code run directly, with a scrubbed environment.
func runEnvironment() environment {
	return environment{desc: runs.Env{CodeExec: runs.CodeExecLocal}, python: localPython(), left: &leftOut{},
		line: "on, on this machine (coorflow run runs your own file's code; serve, mcp and worker run code only in a sandbox)"}
}

// servedEnvironment is the environment of the commands that run others'
// runs (serve, mcp, worker) and of run --temporal, whose nodes run on the
// workers: code execution off unless allowed, and then always in the
// sandbox.
func servedEnvironment(ctx context.Context, allow bool) environment {
	if !allow {
		return environment{desc: runs.Env{CodeExec: runs.CodeExecOff}, left: &leftOut{},
			line: "off: the python tool refuses to run code (--allow-code-exec runs it in a bubblewrap sandbox)"}
	}
	env := environment{desc: runs.Env{CodeExec: runs.CodeExecSandbox}, python: &tools.PythonConfig{}, left: &leftOut{},
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
		return environment{desc: desc, left: &leftOut{}}, nil
	}
	if !ok {
		desc = runs.Env{CodeExec: runs.CodeExecSandbox}
	}
	return environment{desc: desc, python: &tools.PythonConfig{}, left: &leftOut{}}, nil
}

// of is the environment's description for the runs of workflow wf.
func (e environment) of(wf *workflowRef) runs.Env {
	d := e.desc
	d.Workflow = wf.ref
	d.LeftOut = e.left.of(wf.ref)
	return d
}

// checkRun refuses a run whose recorded environment (runs.RuntimeEnv of
// its runtime values) executes code otherwise than this one — a worker
// compiled with --allow-code-exec runs the steps of a run recorded with
// code execution off, or the reverse — or left out other optional tools
// and MCP servers than this one's compile of its graph did (keys set on
// one side only). Its models would be shown other tools than the run
// records, and its replay would diverge. A run that carries no
// environment (an older caller's) passes.
func (e environment) checkRun(graph string, runtime map[string]string) error {
	desc, ok, err := runs.DecodeEnv(runtime[runs.RuntimeEnv])
	if err != nil || !ok {
		return err
	}
	if desc.CodeExec.Enabled() == e.desc.CodeExec.Enabled() {
		if have := e.left.ofGraph(graph); !slices.Equal(desc.LeftOut, have) {
			return fmt.Errorf("workflow %s: this worker's compile of it left out %s, the run's caller's %s (an optional tool or MCP server is "+
				"left out when its key is unset or its server unreachable): its models would be shown other tools than the run records; "+
				"give the workers and the caller the same keys and servers", graph, namesOr(have), namesOr(desc.LeftOut))
		}
		return nil
	}
	if e.desc.CodeExec.Enabled() {
		return fmt.Errorf("workflow %s: this worker runs code (worker --allow-code-exec), but the run was started for workers that do not "+
			"(code execution %s), and records so: start it with --allow-code-exec too (run --temporal --allow-code-exec, serve --allow-code-exec), "+
			"or give it workers without --allow-code-exec", graph, desc.CodeExec)
	}
	return fmt.Errorf("workflow %s: this worker runs no code (started without --allow-code-exec), but the run was started for workers that do "+
		"(code execution %s), and records so: start the workers with --allow-code-exec, or the run without it", graph, desc.CodeExec)
}

// namesOr lists names, or says none.
func namesOr(names []string) string {
	if len(names) == 0 {
		return "nothing"
	}
	return strings.Join(names, ", ")
}

// apply sets what the environment decides in env, for the compile of
// workflow wf (nil: a compile whose runs are not recorded): the python
// tool; what the compile leaves out, kept for the runs of wf (of); and,
// for a replay, what the recorded run was without.
func (e environment) apply(env workflows.Env, wf *workflowRef) workflows.Env {
	env.Python = e.python
	env.LeaveOut = e.desc.LeftOut
	if e.left != nil && wf != nil {
		env.LeftOut = func(name string) { e.left.add(wf.ref, name) }
	}
	return env
}
