package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/tools/mcp"
)

// mcpKey is the entry of the tools section that names MCP servers.
const mcpKey = "mcp"

// mcpServerSpec is a server of the tools.mcp section.
type mcpServerSpec struct {
	Command        string            `yaml:"command"`
	Args           []string          `yaml:"args"`
	Dir            string            `yaml:"dir"`
	Env            map[string]string `yaml:"env"`
	InheritEnv     []string          `yaml:"inherit_env"`
	URL            string            `yaml:"url"`
	Headers        map[string]string `yaml:"headers"`
	BearerEnv      string            `yaml:"bearer_env"`
	Tools          []string          `yaml:"tools"`
	Timeout        string            `yaml:"timeout"`
	ConnectTimeout string            `yaml:"connect_timeout"`
	MaxResultBytes int               `yaml:"max_result_bytes"`
	Optional       bool              `yaml:"optional"`
}

// mcpServers returns the servers of the tools.mcp section, in file order.
func (f *File) mcpServers() []named[mcpServerSpec] {
	n := f.doc.node("/tools/" + mcpKey)
	if n == nil {
		return nil
	}
	var out []named[mcpServerSpec]
	for _, e := range mapping(n, "/tools/"+mcpKey) {
		var s mcpServerSpec
		if err := e.node.Decode(&s); err != nil {
			continue // the schema reported it
		}
		out = append(out, named[mcpServerSpec]{Name: e.Name, Spec: s, Key: e.Key, Ptr: e.Ptr})
	}
	return out
}

// server is the mcp.Server a spec describes. The bearer token is read
// from the environment variable the file names; a stdio server runs in the
// file's directory unless dir says otherwise (relative to the file).
func (f *File) server(s named[mcpServerSpec], getenv func(string) string) mcp.Server {
	srv := mcp.Server{
		Name: s.Name, Command: s.Spec.Command, Args: s.Spec.Args, Env: s.Spec.Env, InheritEnv: s.Spec.InheritEnv,
		URL: s.Spec.URL, Headers: s.Spec.Headers, Tools: s.Spec.Tools, MaxResultBytes: s.Spec.MaxResultBytes,
	}
	if srv.Command != "" {
		srv.Dir = f.dir
		if s.Spec.Dir != "" {
			srv.Dir = s.Spec.Dir
			if !filepath.IsAbs(srv.Dir) {
				srv.Dir = filepath.Join(f.dir, srv.Dir)
			}
		}
	}
	if s.Spec.BearerEnv != "" && getenv != nil {
		srv.Bearer = getenv(s.Spec.BearerEnv)
	}
	srv.Timeout, _ = time.ParseDuration(s.Spec.Timeout)
	srv.ConnectTimeout, _ = time.ParseDuration(s.Spec.ConnectTimeout)
	return srv
}

// checkMCP checks the servers of the tools.mcp section.
func (f *File) checkMCP(ps *problems) {
	for _, s := range f.mcpServers() {
		l := f.doc.loc(s.Ptr)
		srv := f.server(s, nil)
		srv.Bearer = s.Spec.BearerEnv // its presence, for the check
		if err := srv.Check(); err != nil {
			msg := strings.TrimPrefix(err.Error(), fmt.Sprintf("%s %q: ", mcp.ErrInvalidServer, s.Name))
			ps.at(l.key, l.path, "MCP server %q: %s", s.Name, msg)
			continue
		}
		if name := s.Spec.BearerEnv; name != "" {
			bl := f.doc.loc(s.Ptr + "/bearer_env")
			switch {
			case !envName.MatchString(name):
				ps.at(bl.val, bl.path, "bearer_env names the environment variable that holds the token; %q is not a variable name", name)
			case !f.opts.envAllowed(name):
				ps.at(bl.val, bl.path, "bearer_env names environment variable %s, %s", name, notAllowed(name))
			}
		}
	}
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// mcpServerNames are the names of the servers of the tools.mcp section.
func (f *File) mcpServerNames() []string {
	var out []string
	for _, s := range f.mcpServers() {
		out = append(out, s.Name)
	}
	return out
}

// mcpRef reports whether name refers to MCP tools: a server's name (all
// its tools) or "<server>_<tool>" (one of them). A server's exact name
// wins over a prefix (with servers ev and ev_b, ev_b is the server), and
// the longest server name that prefixes name over a shorter one;
// ambiguousMCP reports the names two servers could both claim.
func (f *File) mcpRef(name string) (server string, whole, ok bool) {
	servers := f.mcpServers()
	for _, s := range servers {
		if name == s.Name {
			return s.Name, true, true
		}
	}
	for _, s := range servers {
		if strings.HasPrefix(name, s.Name+"_") && len(s.Name) > len(server) {
			server = s.Name
		}
	}
	return server, false, server != ""
}

// ambiguousMCP says why name, a tool a node names, is ambiguous: it is
// not a server's name and two servers' prefixes fit it (with servers ev
// and ev_b, ev_b_x is ev's tool b_x or ev_b's tool x). It returns "" when
// name is not ambiguous.
func (f *File) ambiguousMCP(name string) string {
	var fits []string
	for _, s := range f.mcpServers() {
		if name == s.Name {
			return ""
		}
		if strings.HasPrefix(name, s.Name+"_") {
			fits = append(fits, fmt.Sprintf("MCP server %s's tool %q", s.Name, strings.TrimPrefix(name, s.Name+"_")))
		}
	}
	if len(fits) < 2 {
		return ""
	}
	return fmt.Sprintf("tool %q is ambiguous: it could be %s; rename a server in tools.mcp so that no server's name starts with another's followed by _",
		name, strings.Join(fits, " or "))
}

// knowsTool reports whether a node may name tool: a tool the file
// declares, a server of its tools.mcp section, or a tool of one.
func (f *File) knowsTool(name string) bool {
	if _, ok := f.tools[name]; ok && name != mcpKey && name != a2aKey {
		return true
	}
	if f.a2aAgent(name) {
		return true
	}
	_, _, ok := f.mcpRef(name)
	return ok
}

// toolChoices are the names a node may use, for suggestions.
func (f *File) toolChoices() []string {
	out := slices.DeleteFunc(sortedKeys(f.tools), func(s string) bool { return s == mcpKey || s == a2aKey })
	for _, a := range f.a2aAgents() {
		out = append(out, a.Name)
	}
	for _, s := range f.mcpServers() {
		out = append(out, s.Name)
	}
	return out
}

// addMCPTools connects to the file's MCP servers, lists their tools and
// registers them in reg, so that nodes, the builder of dynamic agents and
// tool nodes see them with their schemas. The sessions belong to env.MCP,
// which the host closes. Offline, the tools nodes name get stand-ins.
func (f *File) addMCPTools(ctx context.Context, env Env, reg *tools.Registry) error {
	return f.addMCPToolsOf(ctx, env, reg, nil)
}

// addMCPToolsOf is addMCPTools for the servers start accepts (all when
// nil); the others are left out.
func (f *File) addMCPToolsOf(ctx context.Context, env Env, reg *tools.Registry, start func(server string) bool) error {
	if start == nil {
		start = func(string) bool { return true }
	}
	servers := slices.DeleteFunc(f.mcpServers(), func(s named[mcpServerSpec]) bool { return !start(s.Name) })
	if len(servers) == 0 {
		return nil
	}
	if env.Offline {
		for _, name := range f.mcpToolRefs() {
			if _, err := reg.Get(name); err != nil {
				_ = reg.Register(standInTool(name))
			}
		}
		return nil
	}
	if env.MCP == nil {
		return fmt.Errorf("workflows: %s: tools.mcp: the program that compiles the file must give it Env.MCP (an *mcp.Hub it closes when done), which owns the servers' sessions", f.path)
	}
	var cfg mcp.Config
	cfg.Getenv = env.Getenv
	for _, s := range servers {
		if s.Spec.Optional && env.leaves("mcp."+s.Name, "MCP server "+s.Name) {
			continue
		}
		srv := f.server(s, env.Getenv)
		if s.Spec.BearerEnv != "" && srv.Bearer == "" {
			err := unsetError(f.path+": tools.mcp."+s.Name+".bearer_env", []string{s.Spec.BearerEnv})
			if s.Spec.Optional {
				env.leftOut("mcp."+s.Name, fmt.Sprintf("MCP server %s is left out: %s", s.Name, strings.TrimPrefix(err.Error(), "workflows: ")))
				continue
			}
			return err
		}
		// The file chose the URL: like every key it names, the token
		// goes only where the operator allows.
		if to, ok := llm.KeyMayGoTo(env.Getenv, srv.URL); srv.Bearer != "" && !ok {
			return fmt.Errorf("workflows: %s: tools.mcp.%s.bearer_env: %s is not an endpoint the operator allows, so %s is not sent to it: "+
				"a workflow file may send a key only to its provider; if you trust the endpoint, allow it: %s=%s", f.path, s.Name, to, s.Spec.BearerEnv, llm.EnvAllowEndpoints, to)
		}
		cfg.Servers = append(cfg.Servers, srv)
	}
	ts, err := env.MCP.Toolset(cfg)
	if err != nil {
		return fmt.Errorf("workflows: %s: tools.mcp: %w", f.path, err)
	}
	for _, s := range servers {
		if !slices.Contains(ts.Servers(), s.Name) {
			continue
		}
		got, err := ts.ServerTools(ctx, s.Name)
		if err != nil && s.Spec.Optional {
			env.leftOut("mcp."+s.Name, fmt.Sprintf("MCP server %s is left out: %v", s.Name, err))
			continue
		}
		if err != nil {
			return fmt.Errorf("workflows: %s: tools.mcp.%s: %w", f.path, s.Name, err)
		}
		for _, t := range got {
			if err := reg.Register(t); err != nil {
				return fmt.Errorf("workflows: %s: tools.mcp.%s: tool %q: %w", f.path, s.Name, t.Remote(), err)
			}
		}
	}
	return f.checkMCPRefs(reg, start)
}

// mcpToolRefs are the names of single MCP tools the file's nodes and
// agents use.
func (f *File) mcpToolRefs() []string {
	var out []string
	for _, name := range f.toolRefNames() {
		if _, whole, ok := f.mcpRef(name); ok && !whole && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// toolRefNames are the tool names the file's nodes and agents use.
func (f *File) toolRefNames() []string {
	var out []string
	for _, n := range f.nodes {
		out = append(out, n.Spec.Tools...)
		if n.Spec.Tool != "" {
			out = append(out, n.Spec.Tool)
		}
		if n.team != nil {
			for _, a := range n.team.agents {
				out = append(out, a.Tools...)
			}
		}
	}
	return out
}

// checkMCPRefs reports the MCP tools the file names that its servers
// (those started) do not offer.
func (f *File) checkMCPRefs(reg *tools.Registry, started func(server string) bool) error {
	var errs []error
	for _, name := range f.mcpToolRefs() {
		server, _, _ := f.mcpRef(name)
		if _, err := reg.Get(name); err == nil || !started(server) {
			continue
		}
		var offered []string
		for _, n := range reg.Names() {
			if t, err := reg.Get(n); err == nil {
				if mt, isMCP := t.(*mcp.Tool); isMCP && mt.Server() == server {
					offered = append(offered, n)
				}
			}
		}
		errs = append(errs, fmt.Errorf("workflows: %s: tool %q: MCP server %s offers no such tool%s", f.path, name, server,
			suggest(name, offered, "it offers")))
	}
	return errors.Join(errs...)
}

// usesMCP reports whether names holds MCP tools or servers.
func (f *File) usesMCP(names []string) bool {
	return slices.ContainsFunc(names, func(n string) bool {
		_, _, ok := f.mcpRef(n)
		return ok
	})
}

// expandTools replaces the MCP servers in names with their tools, as reg
// holds them.
func (b *build) expandTools(names []string) []string {
	var out []string
	for _, name := range names {
		server, whole, ok := b.f.mcpRef(name)
		if !ok || !whole {
			out = append(out, name)
			continue
		}
		for _, n := range b.tools.Names() {
			if t, err := b.tools.Get(n); err == nil {
				if mt, isMCP := t.(*mcp.Tool); isMCP && mt.Server() == server {
					out = append(out, n)
				}
			}
		}
	}
	return out
}

// Tools returns the tools the file declares, sorted by name, to be shown
// (`coorflow tools list`). Of its MCP servers, which are commands the
// file chose or URLs it chose, only those named in start are started or
// reached, through env.MCP (unless env.Offline), to list their tools; the
// tools nodes name of the others show as stand-ins, and MCPServers lists
// them. The other tools are made as for an offline compilation, so that
// tools a Go program registers and unset ${ENV} show as stand-ins.
func (f *File) Tools(ctx context.Context, env Env, start ...string) ([]tools.Tool, error) {
	env.defaults()
	offline := env
	offline.Offline = true
	mem, err := f.memories(offline)
	if err != nil {
		return nil, err
	}
	reg, err := f.buildTools(offline, mem)
	if err != nil {
		return nil, err
	}
	for _, name := range start {
		if !slices.ContainsFunc(f.mcpServers(), func(s named[mcpServerSpec]) bool { return s.Name == name }) {
			return nil, fmt.Errorf("workflows: %s: tools.mcp has no server %q%s", f.path, name, suggest(name, f.mcpServerNames(), "its servers are"))
		}
	}
	if err := f.addMCPToolsOf(ctx, env, reg, func(s string) bool { return slices.Contains(start, s) }); err != nil {
		return nil, err
	}
	return reg.List(), nil
}

// InputSchema returns the JSON Schema of the value of the file's input
// channel: as the file declares it, or the type of a built-in channel (an
// empty schema, any value, when it has none). The MCP tool that serves the
// file takes its input with it.
func (f *File) InputSchema() json.RawMessage {
	c, ok := f.byName[f.InputChannel()]
	switch {
	case !ok:
		return json.RawMessage(`{}`)
	case len(c.schemaJSON) > 0:
		return c.schemaJSON
	case c.shape != nil && c.shape.kind != "any":
		return json.RawMessage(fmt.Sprintf(`{"type":%q}`, c.shape.kind))
	}
	return json.RawMessage(`{}`)
}
