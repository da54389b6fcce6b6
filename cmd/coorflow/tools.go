package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/tools/mcp"
	"github.com/coorflow/coorflow/workflows"
)

// toolInfo is a tool as `coorflow tools list --json` prints it.
type toolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	// Server and Remote name an MCP tool's server and its name there.
	Server string `json:"server,omitempty"`
	Remote string `json:"remote,omitempty"`
}

func (a *app) tools(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "list" {
		return usagef("tools: want tools list FILE|DIR|NAME [--json]")
	}
	fs := newFlags("tools list")
	asJSON := fs.Bool("json", false, "print the tools as JSON")
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
	// The tools as coorflow run gives them (runEnvironment).
	ts, err := wf.file.Tools(ctx, runEnvironment().apply(workflows.Env{Getenv: a.getenv, MCP: a.mcpHub(), Warn: func(msg string) { a.notice("%s: %s", wf.arg, msg) }}))
	if err != nil {
		return err
	}
	out := make([]toolInfo, len(ts))
	for i, t := range ts {
		out[i] = describeTool(t)
	}
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	for _, t := range out {
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
