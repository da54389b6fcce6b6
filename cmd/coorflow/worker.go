//go:build temporal

package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/temporalrun"
	"github.com/coorflow/coorflow/trace"
)

// defaultTemporal is the address of a local Temporal server.
const defaultTemporal = "127.0.0.1:7233"

// worker runs a Temporal worker for workflows: it polls one task queue and
// runs the runs' workflow code and steps (or, with --steps-only, steps
// alone: a queue of one kind of node).
func (a *app) worker(ctx context.Context, args []string) error {
	fs := newFlags("worker")
	d := a.addDBFlags(fs)
	def := a.getenv("TEMPORAL_ADDRESS")
	if def == "" {
		def = defaultTemporal
	}
	addr := fs.String("temporal", def, "the Temporal server (host:port; default $TEMPORAL_ADDRESS or "+defaultTemporal+")")
	namespace := fs.String("namespace", "default", "the Temporal namespace")
	queue := fs.String("queue", "coorflow", "the task queue to poll")
	stepsOnly := fs.Bool("steps-only", false, "run steps only, no workflow code: a worker for a queue of one kind of node (model, tool, code)")
	sticky := fs.Duration("sticky-timeout", temporalrun.DefaultStickyTimeout, "how long the next workflow task of a run whose workflow code ran on a worker that died waits for it before another worker takes it")
	sf := addServedFlags(fs)
	pos, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	overrides, files, err := a.servedWorkflows("worker", sf, pos)
	if err != nil {
		return err
	}
	base, err := a.openDB(ctx, d.db, false)
	if err != nil {
		return err
	}
	defer base.Close()
	if !isPostgres(d.db) {
		a.notice("worker: threads are in %s: every worker and runner must run on this machine (use --db postgres://... to spread them)", base.where)
	}
	env := servedEnvironment(ctx, *sf.allowCodeExec)
	var compiled []*graph.Runnable
	var names []string
	for _, wf := range files {
		r, desc, err := a.compileForServe(ctx, wf, base, d.owner, overrides, *sf.demo, *sf.showModels, env)
		if err != nil {
			return err
		}
		compiled = append(compiled, r)
		env.left.named(r.Name(), wf.ref)
		names = append(names, fmt.Sprintf("  %-12s %s", r.Name(), desc))
	}
	c, err := client.Dial(client.Options{HostPort: *addr, Namespace: *namespace, Logger: temporalrun.Logger(a.stderr)})
	if err != nil {
		return fmt.Errorf("worker: connect to Temporal at %s: %w", *addr, err)
	}
	defer c.Close()
	graphs := temporalrun.NewGraphs(base.saver, compiled...).CheckRuntime(env.checkRun)
	if base.pool != nil {
		events, err := startEventLog(ctx, base.pool)
		if err != nil {
			return fmt.Errorf("worker: %w", err)
		}
		defer events.Close()
		graphs.StreamTo(events)
		go pruneEvents(ctx, events, a.stderr)
	}
	if *sticky <= 0 {
		return usagef("worker: --sticky-timeout must be positive, got %s", *sticky)
	}
	w, err := temporalrun.NewWorker(c, temporalrun.WorkerConfig{TaskQueue: *queue, Graphs: graphs, StepsOnly: *stepsOnly,
		Options: worker.Options{StickyScheduleToStartTimeout: *sticky}})
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("worker: start on queue %q: %w", *queue, err)
	}
	sort.Strings(names)
	kind := "runs and steps"
	if *stepsOnly {
		kind = "steps"
	}
	fmt.Fprintf(a.stdout, "worker for %s on Temporal %s (namespace %s, queue %s; threads in %s); Ctrl-C stops\n%s\n",
		kind, *addr, *namespace, *queue, base.where, strings.Join(names, "\n"))
	fmt.Fprintf(a.stdout, "code execution: %s\n", env.line)
	<-ctx.Done()
	w.Stop()
	fmt.Fprintln(a.stdout, "stopped")
	return nil
}

// runtimeKeys are the runtime values run and serve give the workers'
// nodes: whose run it is (the owner scopes agents and boards), its thread
// and run ids, its config, and the environment it records, which each
// worker checks against its own (environment.checkRun).
var runtimeKeys = []string{store.RuntimeOwner, graph.RuntimeThread, graph.RuntimeRun, runs.RuntimeConfig, runs.RuntimeEnv}

// startEventLog starts the log the workers store the events of streamed
// runs in, for their callers (run --temporal, serve --temporal).
func startEventLog(ctx context.Context, pool *pgxpool.Pool) (*temporalrun.EventLog, error) {
	events := temporalrun.NewEventLog(pool, temporalrun.EventLogConfig{})
	if err := events.Start(ctx); err != nil {
		return nil, err
	}
	return events, nil
}

// eventsKept is how long the events of a run nobody reads are kept.
const eventsKept = 24 * time.Hour

// pruneEvents deletes, when the worker starts and then every hour until
// ctx ends, the events of runs whose callers went away before reading
// them.
func pruneEvents(ctx context.Context, events *temporalrun.EventLog, stderr io.Writer) {
	tick := time.NewTicker(time.Hour)
	defer tick.Stop()
	for {
		if err := events.Prune(ctx, eventsKept); err != nil && ctx.Err() == nil {
			fmt.Fprintf(stderr, "coorflow: worker: %v\n", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// submitTo makes the run go to Temporal's workers at addr on queue; the
// returned func closes the connection. With threads on PostgreSQL the
// run's events reach this process through the event log, and it is shown
// as a local run is.
func (r *runner) submitTo(ctx context.Context, addr, queue string, timeouts *temporalTimeouts) (func(), error) {
	if err := timeouts.check("run"); err != nil {
		return nil, err
	}
	taskQueues, err := timeouts.tasks.queueMap("run")
	if err != nil {
		return nil, err
	}
	c, err := client.Dial(client.Options{HostPort: addr, Logger: temporalrun.Logger(r.app.stderr)})
	if err != nil {
		return nil, fmt.Errorf("run: connect to Temporal at %s: %w", addr, err)
	}
	cfg := temporalrun.Config{Client: c, Graph: r.r, Saver: r.db.saver, TaskQueue: queue, Payloads: trace.DecodePayload,
		RuntimeKeys: runtimeKeys, HeartbeatTimeout: timeouts.heartbeat, ScheduleToStartTimeout: timeouts.scheduleToStart, ActivitySteps: !timeouts.localSteps,
		TasksInNode: timeouts.tasks.inNode, TaskQueues: taskQueues}
	closeAll := c.Close
	if r.db.pool != nil {
		events, err := startEventLog(ctx, r.db.pool)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("run: %w", err)
		}
		cfg.Events, r.remoteStreams = events, true
		closeAll = func() {
			_ = events.Close()
			c.Close()
		}
	} else {
		r.app.notice("run --temporal: threads are in %s: only the run's outcome is shown (its events reach this process through PostgreSQL: --db postgres://...)", r.db.where)
	}
	run, err := temporalrun.New(cfg)
	if err != nil {
		closeAll()
		return nil, err
	}
	r.remote = run
	return closeAll, nil
}

// temporalExecutors makes the served workflows run on Temporal's workers
// at addr on queue; their events reach the server through the event log,
// which needs the threads on PostgreSQL. The returned func closes the
// connection and the log.
func (a *app) temporalExecutors(ctx context.Context, addr, queue string, timeouts *temporalTimeouts, served map[string]*graph.Runnable, base *db) (map[string]server.Executor, func(), error) {
	if base.pool == nil {
		return nil, nil, usagef("serve --temporal: threads are in %s: the runs' events reach the server from the workers through PostgreSQL; use --db postgres://… (the workers' database)", base.where)
	}
	if err := timeouts.check("serve"); err != nil {
		return nil, nil, err
	}
	taskQueues, err := timeouts.tasks.queueMap("serve")
	if err != nil {
		return nil, nil, err
	}
	c, err := client.Dial(client.Options{HostPort: addr, Logger: temporalrun.Logger(a.stderr)})
	if err != nil {
		return nil, nil, fmt.Errorf("serve: connect to Temporal at %s: %w", addr, err)
	}
	events, err := startEventLog(ctx, base.pool)
	if err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("serve: %w", err)
	}
	closeAll := func() {
		_ = events.Close()
		c.Close()
	}
	executors := make(map[string]server.Executor, len(served))
	for name, r := range served {
		run, err := temporalrun.New(temporalrun.Config{Client: c, Graph: r, Saver: base.saver, TaskQueue: queue,
			Events: events, Payloads: trace.DecodePayload, RuntimeKeys: runtimeKeys,
			HeartbeatTimeout: timeouts.heartbeat, ScheduleToStartTimeout: timeouts.scheduleToStart, ActivitySteps: !timeouts.localSteps,
			TasksInNode: timeouts.tasks.inNode, TaskQueues: taskQueues})
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		executors[name] = runs.Remote(run) // its model calls are the workers': the runs count them here
	}
	return executors, closeAll, nil
}
