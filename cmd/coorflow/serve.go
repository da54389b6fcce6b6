package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/coorflow/coorflow/checkpoint/postgres"
	"github.com/coorflow/coorflow/factory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/server/replicas"
	"github.com/coorflow/coorflow/telemetry"
	"github.com/coorflow/coorflow/workflows"
)

func (a *app) serve(ctx context.Context, args []string) error {
	fs := newFlags("serve")
	d := a.addDBFlags(fs)
	addr := fs.String("addr", ":8080", "the address to listen on")
	var tokenFlags, webhookFlags, corsFlags multiFlag
	tokenFile := fs.String("token-file", "", "a file (chmod 600) of bearer tokens clients send: lines TOKEN or TOKEN=OWNER")
	fs.Var(&tokenFlags, "token", "refused: a token on the command line is visible to every user (use --token-file)")
	fs.Var(&webhookFlags, "webhook-allow", "a URL prefix the webhooks of Platform API runs may call (repeatable; none: webhooks are refused)")
	fs.Var(&corsFlags, "cors-origin", "an origin (scheme://host[:port]) whose pages may call the API, such as a chat UI's (repeatable; none: only pages of the server's own origin)")
	sf := addServedFlags(fs)
	keep := addRetentionFlags(fs, "prune-")
	pruneEvery := ageFlag{defaultPruneEvery}
	fs.Var(&pruneEvery, "prune-every", "how often to prune the recorded runs (none: never)")
	replicaName := fs.String("replica", "", "with --db postgres://…: this replica's name among the servers on the database (default host:pid)")
	leaseTTL := fs.Duration("lease-ttl", server.DefaultLeaseTTL, "with --db postgres://…: how long a replica's hold on a run lasts unless renewed; another replica takes the run over after it")
	temporalAddr := fs.String("temporal", "", "HOST:PORT: submit the runs to Temporal's workers (coorflow worker, same --db postgres://…) instead of running them here")
	queue := fs.String("queue", "coorflow", "with --temporal, the workers' task queue")
	timeouts := addTemporalTimeouts(fs)
	var ownerBudget llm.Budget
	fs.IntVar(&ownerBudget.Tokens, "owner-budget-tokens", 0, "the most tokens each owner's runs may spend together, counted over its recorded runs (0: no limit)")
	fs.Float64Var(&ownerBudget.USD, "owner-budget-usd", 0, "the most US dollars each owner's runs may spend together, counted over its recorded runs (0: no limit)")
	pos, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	if ownerBudget.Tokens < 0 || ownerBudget.USD < 0 {
		return usagef("serve: an owner budget cannot be negative")
	}
	if err := timeouts.check("serve"); err != nil {
		return err
	}
	if err := checkReplicaFlags(fs, d.db, *leaseTTL); err != nil {
		return err
	}
	tokens, err := a.tokens(*tokenFile, tokenFlags)
	if err != nil {
		return err
	}
	overrides, files, err := a.servedWorkflows("serve", sf, pos)
	if err != nil {
		return err
	}
	shutdownTracing, err := telemetry.Setup(ctx)
	if err != nil {
		return usagef("serve: %v", err)
	}
	defer func() { _ = shutdownTracing(context.WithoutCancel(ctx)) }()

	base, err := a.openDB(ctx, d.db, false)
	if err != nil {
		return err
	}
	defer base.Close()
	// Every run is recorded in the same database; the recorder is closed
	// (its last events written) after the server has shut down, before the
	// database closes.
	rec := a.newRecorder(ctx, base)
	defer a.closeRecorder(ctx, rec)
	stopPruning := a.startPruner(ctx, base.traces, keep, pruneEvery.d)
	defer stopPruning()
	env := servedEnvironment(ctx, *sf.allowCodeExec)
	served := map[string]*graph.Runnable{}
	mcpTools := map[string]server.MCPTool{}
	budgets := map[string]llm.Budget{}
	envs := map[string]runs.Env{}
	configs := map[string]map[string]any{}
	var names []string
	for _, wf := range files {
		name := wf.file.Name()
		if _, dup := served[name]; dup {
			return usagef("serve: two workflows are named %q; the API names workflows by name", name)
		}
		r, desc, err := a.compileForServe(ctx, wf, base, d.owner, overrides, *sf.demo, *sf.showModels, env)
		if err != nil {
			return err
		}
		served[name], mcpTools[name], envs[name] = r, mcpToolOf(wf.file), env.of(wf)
		if b := wf.file.Budget(); !b.IsZero() {
			budgets[name] = b
		}
		if c := wf.file.ConfigSchema(); c != nil {
			configs[name] = c
		}
		names = append(names, fmt.Sprintf("  %-12s %s", name, desc))
	}
	cfg := server.Config{
		Workflows: served, MCPTools: mcpTools, Saver: base.saver, Tokens: tokens,
		Agents: registryAgents{store: base}, Logger: slog.New(slog.NewTextHandler(a.stderr, nil)),
		Recorder: rec, Budgets: budgets, OwnerBudget: ownerBudget, Store: base.store, WebhookAllow: webhookFlags, CORSOrigins: corsFlags,
		Envs: envs, ConfigSchemas: configs,
	}
	if *temporalAddr != "" {
		executors, closeTemporal, err := a.temporalExecutors(ctx, *temporalAddr, *queue, timeouts, served, base)
		if err != nil {
			return err
		}
		defer closeTemporal()
		cfg.Executors = executors
	}
	replicaLine := ""
	if *temporalAddr != "" {
		replicaLine = fmt.Sprintf("runs go to Temporal %s, queue %s: coorflow worker runs them\n", *temporalAddr, *queue)
	}
	if base.pool != nil {
		reps, err := replicas.New(base.pool, replicas.Config{Saver: base.saver.(*postgres.Saver), Name: *replicaName, LeaseTTL: *leaseTTL})
		if err != nil {
			return err
		}
		if err := reps.Start(ctx); err != nil {
			return err
		}
		defer func() { _ = reps.Close() }()
		cfg.Replicas, cfg.LeaseTTL = reps, *leaseTTL
		replicaLine += fmt.Sprintf("replica %s: runs are shared with every server on this database (lease %v)\n", reps.Name(), *leaseTTL)
	}
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	sort.Strings(names)
	kept := "threads"
	if rec != nil {
		kept = fmt.Sprintf("threads and recorded runs (run viewer at http://%s/viewer/)", ln.Addr())
	}
	fmt.Fprintf(a.stdout, "serving http://%s (%s in %s, %d token(s)); Ctrl-C stops\n%s\n", ln.Addr(), kept, base.where, len(tokens), strings.Join(names, "\n"))
	fmt.Fprintf(a.stdout, "%scode execution: %s\n", replicaLine, env.line)
	hs := server.NewHTTPServer(srv, server.Limits{})
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err = errors.Join(hs.Shutdown(stop), srv.Shutdown(stop))
	<-errc
	fmt.Fprintln(a.stdout, "stopped")
	return err
}

// minLeaseTTL is the shortest lease a replica may hold: it renews it every
// third of that.
const minLeaseTTL = 100 * time.Millisecond

// checkReplicaFlags refuses the replica flags where they mean nothing
// (SQLite, one process) or cannot work.
func checkReplicaFlags(fs *flag.FlagSet, db string, ttl time.Duration) error {
	var set []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "replica" || f.Name == "lease-ttl" {
			set = append(set, "--"+f.Name)
		}
	})
	switch {
	case len(set) > 0 && !isPostgres(db):
		return usagef("serve: %s: replicas share a PostgreSQL database (--db postgres://…); on SQLite, coorflow serve is one process", strings.Join(set, " and "))
	case ttl < minLeaseTTL:
		return usagef("serve: --lease-ttl %v is too short: a replica renews its lease every third of it; give at least %v", ttl, minLeaseTTL)
	}
	return nil
}

// findWorkflows loads the workflows to serve: files, directories (their
// workflow.yaml, or every workflow file in them and in their
// subdirectories' workflow.yaml), built-in names; by default the built-in
// workflows.
func findWorkflows(args []string, opts ...workflows.LoadOption) (out []*workflowRef, skipped []string, err error) {
	if len(args) == 0 {
		args = workflows.Builtins()
	}
	for _, arg := range args {
		fi, err := os.Stat(arg)
		if err != nil || !fi.IsDir() || fileExists(filepath.Join(arg, "workflow.yaml")) {
			wf, err := runnable(arg, opts...)
			if err != nil {
				return nil, nil, err
			}
			out = append(out, wf)
			continue
		}
		paths, err := workflowFiles(arg)
		if err != nil {
			return nil, nil, err
		}
		if len(paths) == 0 {
			return nil, nil, usagef("serve: no workflow files in %s", arg)
		}
		for _, p := range paths {
			wf, err := loadWorkflow(p, opts...)
			if err != nil {
				return nil, nil, err
			}
			if need := wf.file.Unregistered(); len(need) > 0 {
				skipped = append(skipped, fmt.Sprintf("%s (it needs %s from its Go program)", p, strings.Join(need, ", ")))
				continue
			}
			out = append(out, wf)
		}
	}
	if len(out) == 0 {
		return nil, skipped, usagef("serve: no workflow to serve in %s", strings.Join(args, ", "))
	}
	return out, skipped, nil
}

// workflowFiles lists the workflow files of a directory: its YAML files
// that declare apiVersion coorflow/v1 and the workflow.yaml of its
// subdirectories.
func workflowFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		switch {
		case e.IsDir() && fileExists(filepath.Join(p, "workflow.yaml")):
			out = append(out, filepath.Join(p, "workflow.yaml"))
		case !e.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")):
			if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), "apiVersion: coorflow/v1") {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// compileForServe resolves the models of a workflow and compiles it over
// the database; show prints its models' table (see showModels).
func (a *app) compileForServe(ctx context.Context, wf *workflowRef, base *db, owner string, overrides map[llm.Tier]string, demo, show bool, environ environment) (*graph.Runnable, string, error) {
	models, err := wf.file.Resolve(ctx, workflows.ModelOptions{Getenv: a.getenv, Overrides: overrides, Demo: demo})
	if err != nil {
		return nil, "", err
	}
	a.showModels(wf.arg, models, show)
	if models.Demo && !demo {
		a.notice("%s: no model provider is configured (%s): serving it on %s", wf.arg, models.Reason, demoName(models))
	}
	env := environ.apply(workflows.Env{Store: base.store, Owner: owner, Getenv: a.getenv, Warn: func(msg string) { a.notice("%s: %s", wf.arg, msg) }, MCP: a.mcpHub()}, wf)
	if models.Models != nil {
		env.Models = models.Models
	}
	r, err := wf.file.Compile(ctx, env)
	if err != nil {
		return nil, "", err
	}
	desc := models.Describe()
	if desc == "" {
		desc = "no model"
	}
	return r, desc, nil
}

// registryAgents lists, for GET /v1/agents, the agents the served
// workflows built and reuse for the caller: the runs of each owner keep
// their agents in that owner's registry (factory.Registry.OwnerOf).
type registryAgents struct {
	store *db
}

// ListAgents lists the agents of owner's registry.
func (r registryAgents) ListAgents(ctx context.Context, owner string) ([]server.AgentInfo, error) {
	list, err := factory.NewRegistry(r.store.store, owner).List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]server.AgentInfo, len(list))
	for i, a := range list {
		out[i] = server.AgentInfo{Name: a.Name, Role: a.Role, Description: a.Description, Tier: a.Tier, Tools: a.Tools, CreatedAt: a.Created}
	}
	return out, nil
}
