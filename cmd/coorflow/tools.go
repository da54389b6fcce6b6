package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/tools/mcp"
	"github.com/coorflow/coorflow/workflows"
)

// toolInfo is a tool as `coorflow tools list --json` prints it.
type toolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	// Server and Remote name an MCP tool's server and its name there.
	Server string `json:"server,omitempty"`
	Remote string `json:"remote,omitempty"`
	// NotStarted is an MCP server of the file that was not started (no
	// --mcp NAME): Command or URL says what listing its tools would run
	// or reach.
	NotStarted bool   `json:"not_started,omitempty"`
	Command    string `json:"command,omitempty"`
	URL        string `json:"url,omitempty"`
}

func (a *app) tools(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "list" {
		return usagef("tools: want tools list FILE|DIR|NAME [--json] [--mcp SERVER]")
	}
	fs := newFlags("tools list")
	asJSON := fs.Bool("json", false, "print the tools as JSON")
	var start multiFlag
	fs.Var(&start, "mcp", "SERVER: start (or reach) the file's MCP server SERVER to list its tools; a server is a command or URL "+
		"the file chose, so none is started unless named (repeatable, or comma-separated)")
	pos, err := a.parse(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("tools list: give one workflow file, directory or built-in name")
	}
	wf, err := loadWorkflow(pos[0])
	if err != nil {
		return err
	}
	var servers, names []string
	for _, s := range wf.file.MCPServers() {
		names = append(names, s.Name)
	}
	for _, s := range start {
		for _, name := range strings.Split(s, ",") {
			if !slices.Contains(names, name) {
				return usagef("tools list --mcp: %s has no MCP server %q%s", wf.arg, name, didYouMean(name, names))
			}
			servers = append(servers, name)
		}
	}
	// The tools as coorflow run gives them (runEnvironment).
	ts, err := wf.file.Tools(ctx, runEnvironment().apply(workflows.Env{Getenv: a.getenv, MCP: a.mcpHub(), Warn: func(msg string) { a.notice("%s: %s", wf.arg, msg) }}, nil), servers...)
	if err != nil {
		return err
	}
	out := make([]toolInfo, len(ts))
	for i, t := range ts {
		out[i] = describeTool(t)
	}
	for _, s := range wf.file.MCPServers() {
		if !slices.Contains(servers, s.Name) {
			out = append(out, toolInfo{Name: s.Name, Server: s.Name, NotStarted: true, Command: s.CommandLine(), URL: s.URL})
		}
	}
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	for _, t := range out {
		if t.NotStarted {
			fmt.Fprintf(a.stdout, "%s  (MCP server, not started: it would %s; to list its tools, run coorflow tools list %s --mcp %s)\n",
				t.Name, notStartedWhat(t), shellQuote(pos[0]), t.Name)
			continue
		}
		head := t.Name
		if t.Server != "" {
			head += fmt.Sprintf("  (MCP server %s, tool %s)", t.Server, t.Remote)
		}
		fmt.Fprintln(a.stdout, head)
		if t.Description != "" {
			fmt.Fprintln(a.stdout, "  "+strings.ReplaceAll(strings.TrimSpace(t.Description), "\n", "\n  "))
		}
		fmt.Fprintln(a.stdout, "  schema: "+string(t.Schema))
	}
	return nil
}

// notStartedWhat says what starting an MCP server would do.
func notStartedWhat(t toolInfo) string {
	if t.Command != "" {
		return "run the command " + t.Command
	}
	return "connect to " + t.URL
}

func describeTool(t tools.Tool) toolInfo {
	info := toolInfo{Name: t.Name(), Description: t.Description(), Schema: json.RawMessage(`{"type":"object","properties":{}}`)}
	var compact bytes.Buffer
	if json.Compact(&compact, t.Schema()) == nil {
		info.Schema = compact.Bytes()
	}
	if m, ok := t.(*mcp.Tool); ok {
		info.Server, info.Remote = m.Server(), m.Remote()
	}
	return info
}

// mcpHub returns the hub that owns the command's MCP sessions.
func (a *app) mcpHub() *mcp.Hub {
	if a.hub == nil {
		a.hub = &mcp.Hub{}
	}
	return a.hub
}

// closeMCP ends the command's MCP sessions and stops its stdio servers.
func (a *app) closeMCP() {
	if a.hub != nil {
		_ = a.hub.Close()
	}
}
