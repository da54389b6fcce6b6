package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/tools/mcp"
	"github.com/coorflow/coorflow/trace"
	"github.com/coorflow/coorflow/workflows"
)

// Exit codes.
const (
	exitOK          = 0
	exitFailed      = 1   // the work failed: a run, the database, a missing thread
	exitUsage       = 2   // the command line or a file is wrong
	exitInterrupted = 3   // a run paused on a question nobody answered
	exitCancelled   = 130 // Ctrl-C
)

// app is the command line, with its streams and environment, so that
// tests run it in process.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// unsetenv removes a variable from the environment of the process
	// (tokens, once read); nil leaves the environment alone.
	unsetenv func(string) error
	// interactive says a person can answer questions on stdin.
	interactive bool
	// hub owns the sessions with the MCP servers of the workflows the
	// command compiles; main closes it when the command ends.
	hub *mcp.Hub
}

// usageError is a wrong command line: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// interruptedError is a run that paused with nobody to answer: exit 3.
type interruptedError struct{}

func (interruptedError) Error() string { return "the run is waiting for an answer" }

var commands = []string{"run", "validate", "graph", "threads", "agents", "runs", "replay", "eval", "export", "serve", "mcp", "worker", "tools", "schema", "help"}

func (a *app) main(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(a.stderr, usage)
		return exitUsage
	}
	var err error
	defer a.closeMCP()
	switch cmd, rest := args[0], args[1:]; cmd {
	case "run":
		err = a.run(ctx, rest)
	case "validate":
		err = a.validate(ctx, rest)
	case "graph":
		err = a.graph(ctx, rest)
	case "threads":
		err = a.threads(ctx, rest)
	case "agents":
		err = a.agents(ctx, rest)
	case "runs":
		err = a.runs(ctx, rest)
	case "replay":
		err = a.replay(ctx, rest)
	case "eval":
		err = a.eval(ctx, rest)
	case "export":
		err = a.export(ctx, rest)
	case "serve":
		err = a.serve(ctx, rest)
	case "mcp":
		err = a.mcpServe(ctx, rest)
	case "worker":
		err = a.worker(ctx, rest)
	case "tools":
		err = a.tools(ctx, rest)
	case "schema":
		_, err = a.stdout.Write(workflows.Schema())
	case "help", "-h", "-help", "--help":
		fmt.Fprint(a.stdout, usage)
	default:
		err = usagef("unknown command %q%s; run coorflow help", cmd, didYouMean(cmd, commands))
	}
	return a.report(ctx, err)
}

// report prints err on stderr, one line per problem, and returns the exit
// code it stands for.
func (a *app) report(ctx context.Context, err error) int {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		code := exitOK
		for _, e := range j.Unwrap() {
			code = max(code, a.report(ctx, e))
		}
		return code
	}
	var (
		ue *usageError
		fe *workflows.FileError
		ce *llm.ConfigError
	)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errHelp):
		return exitOK
	case errors.As(err, &fe):
		for _, p := range fe.Problems {
			fmt.Fprintln(a.stderr, p.String())
		}
		return exitUsage
	case errors.As(err, &ue):
		a.errorLine(ue.msg)
		return exitUsage
	case errors.As(err, &ce), errors.Is(err, workflows.ErrNoModel), errors.Is(err, workflows.ErrUnknownWorkflow), errors.Is(err, workflows.ErrNoDemo),
		errors.Is(err, trace.ErrNotReplayable):
		a.errorLine(err.Error())
		return exitUsage
	case errors.As(err, new(interruptedError)):
		return exitInterrupted
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		a.errorLine("cancelled")
		return exitCancelled
	}
	a.errorLine(err.Error())
	return exitFailed
}

// errorLine prints one error line: "coorflow: message", with the lines
// of a multi-line message joined.
func (a *app) errorLine(msg string) {
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	fmt.Fprintln(a.stderr, "coorflow: "+strings.Join(lines, " "))
}

// notice prints an informational line on stderr.
func (a *app) notice(format string, args ...any) {
	fmt.Fprintf(a.stderr, "coorflow: "+format+"\n", args...)
}

// didYouMean suggests the option closest to got (workflows.DidYouMean).
func didYouMean(got string, options []string) string { return workflows.DidYouMean(got, options) }

const usage = `coorflow checks, draws, runs and serves coorflow workflows.

Usage:
  coorflow run FILE|DIR|NAME [flags]   run a workflow (NAME: a built-in workflow, coor or research)
      --input TEXT|@FILE               the input, written to the file's input channel
      --thread ID                      the thread to start or continue (default: a new one)
      --resume VALUE|@FILE             answer the question the thread waits on, and continue
      --answer ID=VALUE                answer one of several questions (repeatable)
      --config KEY=VALUE|@FILE         the run's config, read by its nodes and as config.KEY by its expressions
                                       (VALUE: JSON or text; FILE: a JSON object; repeatable)
      --db PATH|postgres://...         where threads and agents are kept (default .coorflow/coorflow.db, or $COORFLOW_DB)
      --model TIER=provider:model      use this model for a tier (repeatable), e.g. basic=openai:gpt-4o
      --demo                           use the file's demo model even when a provider is configured: its demo
                                       script, or the reactive demo (the built-ins), which answers from each request
      --show-models                    print each tier's provider, model and endpoint first (printed anyway when
                                       the environment or --model leaves tiers on different providers or endpoints)
      --owner NAME                     whose agents and boards (default "default")
      --stream                         print the models' tokens as they come
      --json                           print events and the result as JSON lines
      -v                               print notices (optional tools left out)
      --temporal HOST:PORT [--queue Q] run on Temporal's workers (coorflow worker) instead of in this
                                       process, shown and recorded as here when --db is postgres:// (its
                                       events come through it); on SQLite only the outcome is shown
      --heartbeat-timeout 5s --schedule-to-start-timeout 0 --local-steps=true
                                       with --temporal: how soon a dead worker's step runs elsewhere; how long
                                       a step may wait for a worker (0: no limit); one-node steps as local
                                       activities (=false: every step an activity, on any worker)
      --task-queue SELECTOR=QUEUE      with --temporal: the queue of the tasks of a node (a team's agent builds and
                                       steps; each an activity of its own) that carry a label (tier:reasoning: the
                                       agents of that tier) or whose key has a prefix (step:); repeatable
      --tasks-in-node                  with --temporal: a node's tasks inside its activity, on its worker
  coorflow validate FILE|DIR|NAME... [--json]
  coorflow graph FILE|DIR|NAME         print the graph as a Mermaid flowchart
  coorflow threads list [--db] [--json] [--limit N]   each thread's workflow, status and last run
  coorflow threads show ID [--db] [--json] [--workflow FILE]
  coorflow threads history ID [--db] [--json] [--workflow FILE]
  coorflow threads rm ID [--db]        remove the thread and its recorded runs
  coorflow agents list [--db] [--owner] [--json]
  coorflow agents show NAME [--db] [--owner] [--json]
  coorflow agents edit NAME [--prompt TEXT|@FILE] [--description TEXT] [--tier TIER] [--tools a,b] [--db] [--owner]
  coorflow agents rm NAME [--db] [--owner]
  coorflow runs list [--db] [--json] [--limit N] [--thread ID] [--status STATUS] [--owner]
  coorflow runs show RUN [--db] [--json]   a recorded run: status, input, its steps and agents
                                       every run (and resume) of run and serve is recorded in the database
  coorflow runs prune [--max-age 30d] [--max-runs 10000] [--owner] [--dry-run] [--db] [--json]
                                       remove recorded runs older than max-age, or finished and beyond
                                       the newest max-runs of their owner (none: no limit)
  coorflow replay RUN [--db] [--json] [--workflow FILE] [--input TEXT|@FILE] [--model] [--demo]
                                       run a recorded run again offline from its recorded model responses
                                       and report where it diverged; exit 0 without divergence, 1 with
  coorflow eval WORKFLOW DATASET [flags]   run every case of a dataset (YAML or JSONL: docs/eval.md) on
                                       its own thread, grade it, and keep the eval run in --db
      --concurrency N --repeats K      cases at once (4), runs of each case (1)
      --budget-tokens N --budget-usd X one run of a case; --total-tokens N --total-usd X the whole eval
      --timeout D                      one run of a case (e.g. 2m)
      --judge [TIER=]provider:model    the judges' model (default: the workflow's models)
      --id ID | --resume EVALRUN       name the eval run; resume an interrupted one (finished cases kept)
      --replay EVALRUN                 answer the model calls from that eval run's recordings; the cases
                                       that diverge run on the models
      --label NAME --json --fail-under RATE --max-cost USD  (and --db --owner --model --demo)
  coorflow eval compare A B [--fail-under RATE] [--max-cost USD] [--max-regressions N] [--judge MODEL] [--json]
                                       what got better or worse per case from eval run A to B
  coorflow eval list|show ID [--db] [--owner] [--json]
  coorflow export RUN [-o FILE] [--name NAME] [--workflow FILE] [--db] [--owner]
                                       write a finished run of a dynamic workflow (coor) as a workflow file
                                       with its plan and agents fixed: no coordinator, planner or builder
  coorflow serve [FILE|DIR|NAME...] [--addr :8080] [--db] [--token-file FILE] [--owner] [--model] [--demo] [--show-models]
                                       tokens from FILE (chmod 600; lines TOKEN or TOKEN=OWNER), else
                                       $COORFLOW_TOKENS (tok=owner,...) or $COORFLOW_TOKEN, removed once read
      --prune-max-age 30d --prune-max-runs 10000 --prune-every 1h
                                       prune the recorded runs at start and then periodically (none: never)
      --webhook-allow PREFIX           a URL prefix the webhooks of LangGraph Platform runs may call (repeatable)
      --cors-origin ORIGIN             an origin (http://localhost:5173) whose pages may call the API, as a
                                       chat UI served elsewhere does (repeatable; none: the server's own only)
      --temporal HOST:PORT [--queue Q] submit the runs to Temporal's workers (coorflow worker, same
                                       --db postgres://…) instead of running them here
      --heartbeat-timeout 5s --schedule-to-start-timeout 0 --local-steps=true   as for run --temporal
      --task-queue SELECTOR=QUEUE --tasks-in-node                              as for run --temporal
  coorflow mcp [FILE|DIR|NAME...] [--db] [--owner] [--model] [--demo] [--show-models] [--allow-code-exec] [--allow-env NAME]
                                       serve the workflows as MCP tools over stdin and stdout
                                       (for desktop MCP clients; serve offers them at /mcp too)
  coorflow worker [FILE|DIR|NAME...] (a build with -tags temporal) [--temporal HOST:PORT] [--namespace NS] [--queue Q] [--steps-only] [--sticky-timeout 2s] [--db] [--model] [--demo]
                                       run the workflows' runs on Temporal: poll the task queue for their
                                       workflow code and steps (--steps-only: steps alone, for a queue of
                                       one kind of node); threads live in --db (postgres:// across machines);
                                       --sticky-timeout: how long a run whose workflow code ran on a dead
                                       worker waits for it before another worker takes it
  coorflow tools list FILE|DIR|NAME [--json] [--mcp SERVER]
                                       the file's tools, with their schemas; an MCP server's tools only
                                       when --mcp names it (it is a command or URL the file chose)
  coorflow schema                      print the JSON Schema of workflow files

Models, strongest first: --model TIER=provider:model; COORFLOW_MODEL_<TIER> (e.g.
COORFLOW_MODEL_REASONING); COORFLOW_MODEL (every tier the file set, and basic); the
file's models section. Unset tiers follow basic. OPENAI_BASE_URL, ANTHROPIC_BASE_URL
and OLLAMA_HOST give the endpoint of the tiers of that provider that set none; keys come from OPENAI_API_KEY,
ANTHROPIC_API_KEY, GOOGLE_API_KEY or the tier's api_key_env. --show-models prints the
result. With no provider configured, a file runs on its demo script, or (the built-ins,
and files of built-in node types only) on the reactive demo model.

Exit codes: 0 done; 1 the work failed (a replay that diverged too); 2 the command
line or a file is wrong (a run that cannot be replayed or exported too); 3 the run
waits for an answer (the command to resume is printed); 130 Ctrl-C. An eval or an
eval compare that crossed a gate exits 1, and an invalid dataset 2.
`
