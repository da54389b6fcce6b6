package mcp

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Defaults of the Server fields left zero.
const (
	// DefaultConnectTimeout bounds starting a server, the MCP handshake
	// and listing its tools.
	DefaultConnectTimeout = 30 * time.Second
	// DefaultMaxResultBytes caps the text one call returns; the rest is
	// cut with a note saying how much was left out.
	DefaultMaxResultBytes = 1 << 20
	// DefaultMaxInlineBytes caps the image, audio or blob data a result
	// carries inline, as a data: URI; larger data is described, not kept.
	DefaultMaxInlineBytes = 64 << 10
	// DefaultMaxTools caps the tools taken from one server.
	DefaultMaxTools = 256
	// maxMessageBytes caps one message from a server (a line on stdio, an
	// event or a JSON body over HTTP).
	maxMessageBytes = 8 << 20
)

// DefaultInheritEnv are the variables a stdio server gets from coorflow's
// environment besides those its Server lists: the ones the reference MCP
// client (the TypeScript SDK) passes, none of them a secret.
var DefaultInheritEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}

// validServerName is the rule for server names: they prefix tool names,
// which model providers restrict to [a-zA-Z0-9_-]{1,64}.
var validServerName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`)

var validEnvName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Server is one MCP server whose tools a Toolset offers: a program started
// as a child process and spoken to over its stdin and stdout (Command), or
// a streamable HTTP endpoint (URL).
type Server struct {
	// Name tells the server apart: its tools are registered as
	// "<Name>_<tool>". 1 to 32 letters, digits, _ or -, starting with a
	// letter or digit.
	Name string

	// Command and Args start a stdio server, in Dir (the current
	// directory when empty).
	Command string
	Args    []string
	Dir     string
	// Env is the stdio server's environment. Nothing else of coorflow's
	// environment reaches it except the variables named in InheritEnv and
	// DefaultInheritEnv, so secrets are passed only when listed.
	Env        map[string]string
	InheritEnv []string

	// URL is a streamable HTTP endpoint (http or https). Headers are sent
	// with every request; Bearer, when set, as Authorization: Bearer.
	URL     string
	Headers map[string]string
	Bearer  string

	// Tools keeps only the server's tools of these names (their names on
	// the server); empty keeps them all, up to MaxTools.
	Tools []string
	// Timeout bounds each call (tools.DefaultTimeout when zero); the call
	// is cancelled on the server when it runs out.
	Timeout time.Duration
	// ConnectTimeout bounds starting the server, the handshake and the
	// tool list (DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// MaxResultBytes caps the text of one result (DefaultMaxResultBytes);
	// MaxInlineBytes the binary data it carries inline
	// (DefaultMaxInlineBytes); MaxTools the tools taken (DefaultMaxTools).
	MaxResultBytes int
	MaxInlineBytes int
	MaxTools       int
}

// ErrInvalidServer is wrapped by the errors that describe a Server that
// cannot be used.
var ErrInvalidServer = errors.New("mcp: invalid server")

func (s *Server) defaults() {
	if s.ConnectTimeout <= 0 {
		s.ConnectTimeout = DefaultConnectTimeout
	}
	if s.MaxResultBytes <= 0 {
		s.MaxResultBytes = DefaultMaxResultBytes
	}
	if s.MaxInlineBytes <= 0 {
		s.MaxInlineBytes = DefaultMaxInlineBytes
	}
	if s.MaxTools <= 0 {
		s.MaxTools = DefaultMaxTools
	}
}

// Check reports what makes s unusable (an error wrapping
// ErrInvalidServer), or nil.
func (s *Server) Check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %q: %s", ErrInvalidServer, s.Name, fmt.Sprintf(format, args...))
	}
	switch {
	case !validServerName.MatchString(s.Name):
		return fmt.Errorf("%w: name %q: use 1 to 32 letters, digits, _ or -, starting with a letter or digit", ErrInvalidServer, s.Name)
	case s.Command == "" && s.URL == "":
		return bad("give a command (a stdio server) or a url (a streamable HTTP server)")
	case s.Command != "" && s.URL != "":
		return bad("give a command or a url, not both")
	}
	if s.URL != "" {
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("url %q is not an http or https URL", s.URL)
		}
		if len(s.Args) > 0 || len(s.Env) > 0 || len(s.InheritEnv) > 0 || s.Dir != "" {
			return bad("args, env, inherit_env and dir are for stdio servers (command), not for a url")
		}
		for k := range s.Headers {
			if strings.EqualFold(k, "Authorization") && s.Bearer != "" {
				return bad("give the Authorization header or a bearer token, not both")
			}
		}
		return nil
	}
	if len(s.Headers) > 0 || s.Bearer != "" {
		return bad("headers and bearer tokens are for HTTP servers (url), not for a command")
	}
	for _, name := range slices.Concat(mapKeys(s.Env), s.InheritEnv) {
		if !validEnvName.MatchString(name) {
			return bad("environment variable name %q is not valid", name)
		}
	}
	return nil
}

// transportName is "stdio" or "http", for messages.
func (s *Server) transportName() string {
	if s.URL != "" {
		return "http"
	}
	return "stdio"
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
