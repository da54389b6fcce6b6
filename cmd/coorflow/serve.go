package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/coorflow/coorflow/factory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/telemetry"
	"github.com/coorflow/coorflow/workflows"
)

func (a *app) serve(ctx context.Context, args []string) error {
	fs := newFlags("serve")
	d := a.addDBFlags(fs)
	addr := fs.String("addr", ":8080", "the address to listen on")
	var tokenFlags, modelFlags multiFlag
	fs.Var(&tokenFlags, "token", "TOKEN or TOKEN=OWNER: a bearer token clients send (repeatable)")
	fs.Var(&modelFlags, "model", "TIER=provider:model (repeatable)")
	demo := fs.Bool("demo", false, "run every workflow on its scripted demo model")
	pos, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	tokens, err := a.tokens(tokenFlags)
	if err != nil {
		return err
	}
	overrides, err := parseModels(modelFlags)
	if err != nil {
		return err
	}
	files, skipped, err := findWorkflows(pos)
	if err != nil {
		return err
	}
	for _, s := range skipped {
		a.notice("serve: left out %s", s)
	}
	shutdownTracing, err := telemetry.Setup(ctx)
	if err != nil {
		return usagef("serve: %v", err)
	}
	defer func() { _ = shutdownTracing(context.WithoutCancel(ctx)) }()

	base, err := openDB(ctx, d.db, false)
	if err != nil {
		return err
	}
	defer base.Close()
	// Every run is recorded in the same database; the recorder is closed
	// (its last events written) after the server has shut down, before the
	// database closes.
	rec := a.newRecorder(ctx, base)
	defer a.closeRecorder(ctx, rec)
	served := map[string]*graph.Runnable{}
	mcpTools := map[string]server.MCPTool{}
	var names []string
	for _, wf := range files {
		name := wf.file.Name()
		if _, dup := served[name]; dup {
			return usagef("serve: two workflows are named %q; the API names workflows by name", name)
		}
		r, desc, err := a.compileForServe(ctx, wf, base, d.owner, overrides, *demo)
		if err != nil {
			return err
		}
		served[name], mcpTools[name] = r, mcpToolOf(wf.file)
		names = append(names, fmt.Sprintf("  %-12s %s", name, desc))
	}
	srv, err := server.New(server.Config{
		Workflows: served, MCPTools: mcpTools, Saver: base.saver, Tokens: tokens,
		Agents: registryAgents{store: base, owner: d.owner}, Logger: slog.New(slog.NewTextHandler(a.stderr, nil)),
		Recorder: rec,
	})
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
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
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

// tokens are the bearer tokens: the flags, else COORFLOW_TOKENS
// ("tok=owner,tok2=owner2"), else COORFLOW_TOKEN (owner "default").
func (a *app) tokens(flags []string) (map[string]string, error) {
	list := flags
	if len(list) == 0 {
		if env := a.getenv("COORFLOW_TOKENS"); env != "" {
			list = strings.Split(env, ",")
		} else if tok := a.getenv("COORFLOW_TOKEN"); tok != "" {
			list = []string{tok}
		}
	}
	if len(list) == 0 {
		return nil, usagef("serve: every request needs a bearer token: give --token TOKEN[=OWNER], or set COORFLOW_TOKEN or COORFLOW_TOKENS")
	}
	out := map[string]string{}
	for _, t := range list {
		tok, owner, ok := strings.Cut(strings.TrimSpace(t), "=")
		if !ok {
			owner = "default"
		}
		if tok == "" || owner == "" {
			return nil, usagef("serve: token %q: want TOKEN or TOKEN=OWNER", t)
		}
		out[tok] = owner
	}
	return out, nil
}

// findWorkflows loads the workflows to serve: files, directories (their
// workflow.yaml, or every workflow file in them and in their
// subdirectories' workflow.yaml), built-in names; by default the built-in
// workflows.
func findWorkflows(args []string) (out []*workflowRef, skipped []string, err error) {
	if len(args) == 0 {
		args = workflows.Builtins()
	}
	for _, arg := range args {
		fi, err := os.Stat(arg)
		if err != nil || !fi.IsDir() || fileExists(filepath.Join(arg, "workflow.yaml")) {
			wf, err := runnable(arg)
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
			wf, err := loadWorkflow(p)
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
// the database.
func (a *app) compileForServe(ctx context.Context, wf *workflowRef, base *db, owner string, overrides map[llm.Tier]string, demo bool) (*graph.Runnable, string, error) {
	models, err := wf.file.Resolve(ctx, workflows.ModelOptions{Getenv: a.getenv, Overrides: overrides, Demo: demo})
	if err != nil {
		return nil, "", err
	}
	if models.Demo && !demo {
		a.notice("%s: no model provider is configured (%s): serving it on the scripted demo model %s", wf.arg, models.Reason, models.Script)
	}
	env := workflows.Env{Store: base.store, Owner: owner, Getenv: a.getenv, Warn: func(msg string) { a.notice("%s: %s", wf.arg, msg) }, MCP: a.mcpHub()}
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

// registryAgents lists the agents the served workflows build and reuse,
// for GET /v1/agents. They are kept under the serve command's --owner,
// whichever token's owner asks: the workflows share one registry.
type registryAgents struct {
	store *db
	owner string
}

// ListAgents lists the agents of the served workflows' registry.
func (r registryAgents) ListAgents(ctx context.Context, _ string) ([]server.AgentInfo, error) {
	list, err := factory.NewRegistry(r.store.store, r.owner).List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]server.AgentInfo, len(list))
	for i, a := range list {
		out[i] = server.AgentInfo{Name: a.Name, Role: a.Role, Description: a.Description, Tier: a.Tier, Tools: a.Tools, CreatedAt: a.Created}
	}
	return out, nil
}
