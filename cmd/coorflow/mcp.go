package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/workflows"
)

// mcpServe serves workflows as MCP tools over stdin and stdout, for a
// desktop client that starts coorflow as its MCP server. Nothing but the
// protocol is written to stdout: notices and logs go to stderr.
func (a *app) mcpServe(ctx context.Context, args []string) error {
	fs := newFlags("mcp")
	d := a.addDBFlags(fs)
	sf := addServedFlags(fs)
	pos, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	overrides, files, err := a.servedWorkflows("mcp", sf, pos)
	if err != nil {
		return err
	}
	env := servedEnvironment(ctx, *sf.allowCodeExec)
	a.notice("mcp: code execution: %s", env.line)
	base, err := a.openDB(ctx, d.db, false)
	if err != nil {
		return err
	}
	defer base.Close()
	rec := a.newRecorder(ctx, base)
	defer a.closeRecorder(ctx, rec)
	served := map[string]*graph.Runnable{}
	tools := map[string]server.MCPTool{}
	envs := map[string]runs.Env{}
	for _, wf := range files {
		name := wf.file.Name()
		if _, dup := served[name]; dup {
			return usagef("mcp: two workflows are named %q; MCP tools are named by workflow", name)
		}
		r, _, err := a.compileForServe(ctx, wf, base, d.owner, overrides, *sf.demo, *sf.showModels, env)
		if err != nil {
			return err
		}
		served[name], tools[name], envs[name] = r, mcpToolOf(wf.file), env.of(wf)
	}
	srv, err := server.New(server.Config{
		Workflows: served, MCPTools: tools, Saver: base.saver,
		// No HTTP here: the token is never shown, only the owner counts.
		Tokens: map[string]string{randomToken(): d.owner},
		Agents: registryAgents{store: base}, Recorder: rec, Envs: envs,
		Logger: slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	t := &mcp.IOTransport{Reader: io.NopCloser(a.stdin), Writer: nopWriteCloser{a.stdout}}
	err = srv.ServeMCP(ctx, d.owner, t)
	stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if serr := srv.Shutdown(stop); err == nil {
		err = serr
	}
	return err
}

// mcpToolOf describes a workflow file as an MCP tool.
func mcpToolOf(f *workflows.File) server.MCPTool {
	return server.MCPTool{Description: f.Description(), Input: f.InputChannel(), InputSchema: f.InputSchema(), Output: f.OutputChannel()}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func randomToken() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("mcp-%s", hex.EncodeToString(b[:]))
}
