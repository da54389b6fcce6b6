package workflows

import (
	"fmt"
	"slices"
	"strings"
)

// The kinds of Effect.
const (
	// EffectCommand is a command the program starts: an MCP server's.
	EffectCommand = "command"
	// EffectCode is code the program runs: the python tool's.
	EffectCode = "code"
	// EffectURL is a URL the program calls: a model's or a search
	// provider's base URL, an MCP server's, or those the model asks
	// http_fetch for.
	EffectURL = "url"
)

// Effect is something a file makes the program that runs it do outside
// its own process: start a command, run code, call a URL. A file from
// elsewhere is code its user may not have written; Effects says what it
// will do before anything does it.
type Effect struct {
	Kind string `json:"kind"` // EffectCommand, EffectCode or EffectURL
	// What is the command line, the code or the URL, as the file writes
	// it (${VAR} unexpanded).
	What string `json:"what"`
	// File, Line and Path locate the entry that asks for it.
	File string `json:"file"`
	Line int    `json:"line"`
	Path string `json:"path"`
}

// String is "command sh -c 'x' (tools.mcp.s, f.yaml:8)".
func (e Effect) String() string {
	return fmt.Sprintf("%s %s  (%s, %s:%d)", e.Kind, e.What, e.Path, e.File, e.Line)
}

// MCPServer is a server of a file's tools.mcp section: the command line
// of a stdio server, or the URL of a remote one.
type MCPServer struct {
	Name    string
	Command []string
	URL     string
}

// CommandLine is the command of a stdio server as a shell would read
// it, "" for a remote server.
func (s MCPServer) CommandLine() string {
	if len(s.Command) == 0 {
		return ""
	}
	return shellLine(s.Command)
}

// MCPServers returns the servers of the file's tools.mcp section, in
// file order. Listing them starts nothing.
func (f *File) MCPServers() []MCPServer {
	var out []MCPServer
	for _, s := range f.mcpServers() {
		srv := MCPServer{Name: s.Name, URL: s.Spec.URL}
		if s.Spec.Command != "" {
			srv.Command = append([]string{s.Spec.Command}, s.Spec.Args...)
		}
		out = append(out, srv)
	}
	return out
}

// Effects returns what the file, and the subgraph files it includes,
// will make the program do outside its process when it runs: the
// commands it starts, the code it runs and the URLs it calls, in file
// order. Loading, validating, drawing and listing tools do none of it.
func (f *File) Effects() []Effect {
	var out []Effect
	seen := map[string]bool{}
	f.effects(&out, seen)
	return out
}

func (f *File) effects(out *[]Effect, seen map[string]bool) {
	if seen[f.path] {
		return
	}
	seen[f.path] = true
	add := func(kind, what, ptr string) {
		l := f.doc.loc(ptr)
		*out = append(*out, Effect{Kind: kind, What: what, File: f.path, Line: l.val.line, Path: l.path})
	}
	for _, tier := range sortedKeys(f.spec.Models) {
		if m := f.spec.Models[tier]; m.BaseURL != "" {
			add(EffectURL, m.BaseURL, "/models/"+escapePointer(tier)+"/base_url")
		}
	}
	for _, t := range f.spec.tools {
		if b, ok := lookupBuiltinTool(t.Name); ok && b.effects != nil {
			b.effects(f, t, add)
		}
	}
	for _, n := range f.nodes {
		if n.sub != nil {
			n.sub.effects(out, seen)
		}
	}
}

// shellLine writes a command line as a shell would read it.
func shellLine(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && !strings.ContainsFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || slices.Contains([]rune("-_./:=@+,%"), r))
		}) {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
