package mcp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coorflow/coorflow/tools"
)

// Config configures a Toolset.
type Config struct {
	// Servers are the MCP servers whose tools the toolset offers; their
	// names must differ.
	Servers []Server
	// Getenv reads the variables stdio servers inherit (os.Getenv when
	// nil).
	Getenv func(string) string
}

// Toolset offers the tools of MCP servers as tools.Tools. Each server gets
// one session, started on first use (Tools, Register or a call), shared by
// every caller, and started again after the connection drops or the server
// restarts. Close ends the sessions and stops the stdio servers.
//
// A Toolset is safe for concurrent use.
type Toolset struct {
	conns []*conn
	mu    sync.Mutex
	tools map[string][]*Tool // by server, once listed
}

// NewToolset checks the servers and returns a toolset; nothing is started
// until its tools are asked for.
func NewToolset(cfg Config) (*Toolset, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	ts := &Toolset{tools: map[string][]*Tool{}}
	seen := map[string]bool{}
	var errs []error
	for _, s := range cfg.Servers {
		if err := s.Check(); err != nil {
			errs = append(errs, err)
			continue
		}
		if seen[s.Name] {
			errs = append(errs, fmt.Errorf("%w %q: two servers have this name", ErrInvalidServer, s.Name))
			continue
		}
		seen[s.Name] = true
		s.defaults()
		ts.conns = append(ts.conns, newConn(s, getenv))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return ts, nil
}

// Servers returns the names of the toolset's servers, in the order given.
func (ts *Toolset) Servers() []string {
	out := make([]string, len(ts.conns))
	for i, c := range ts.conns {
		out[i] = c.srv.Name
	}
	return out
}

// Tools connects to every server that has no session yet and returns the
// tools of all of them, server by server, each server's sorted by name.
// Servers that cannot be reached are reported, joined into one error, after
// the tools of the others.
func (ts *Toolset) Tools(ctx context.Context) ([]*Tool, error) {
	var out []*Tool
	var errs []error
	for _, c := range ts.conns {
		got, err := ts.ServerTools(ctx, c.srv.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, got...)
	}
	return out, errors.Join(errs...)
}

// ServerTools returns the tools of one server, connecting to it first if
// it has no session yet.
func (ts *Toolset) ServerTools(ctx context.Context, server string) ([]*Tool, error) {
	for _, c := range ts.conns {
		if c.srv.Name != server {
			continue
		}
		listed, err := c.toolsOf(ctx)
		if err != nil {
			return nil, err
		}
		ts.mu.Lock()
		defer ts.mu.Unlock()
		if cached, ok := ts.tools[server]; ok && sameTools(cached, listed) {
			return cached, nil
		}
		made := newTools(c, listed)
		ts.tools[server] = made
		return made, nil
	}
	return nil, fmt.Errorf("mcp: no server %q in the toolset (it has %v)", server, ts.Servers())
}

// Register adds the tools of every server to reg. It reports the servers
// that could not be reached and the tools reg refused, joined into one
// error; the other tools are registered.
func (ts *Toolset) Register(ctx context.Context, reg *tools.Registry) error {
	got, err := ts.Tools(ctx)
	errs := []error{err}
	for _, t := range got {
		if err := reg.Register(t); err != nil {
			errs = append(errs, fmt.Errorf("mcp: server %q, tool %q: %w", t.Server(), t.Remote(), err))
		}
	}
	return errors.Join(errs...)
}

// Close ends every session and stops the stdio servers; calls made after
// it fail with ErrClosed.
func (ts *Toolset) Close() error {
	var wg sync.WaitGroup
	for _, c := range ts.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.close()
		}()
	}
	wg.Wait()
	return nil
}

// sameTools reports whether made are the tools listed, by remote name.
func sameTools(made []*Tool, listed []*sdk.Tool) bool {
	if len(made) != len(listed) {
		return false
	}
	names := map[string]bool{}
	for _, t := range made {
		names[t.remote] = true
	}
	for _, t := range listed {
		if !names[t.Name] {
			return false
		}
	}
	return true
}

// A Hub owns the toolsets of a program, so that one Close ends all their
// sessions: a host (the CLI, a server) makes one, gives it to what builds
// toolsets (workflows.Env.MCP), and closes it when it stops.
type Hub struct {
	mu     sync.Mutex
	sets   []*Toolset
	closed bool
}

// Toolset makes a toolset that the hub closes.
func (h *Hub) Toolset(cfg Config) (*Toolset, error) {
	ts, err := NewToolset(cfg)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	h.sets = append(h.sets, ts)
	return ts, nil
}

// Close closes every toolset the hub made.
func (h *Hub) Close() error {
	h.mu.Lock()
	sets := h.sets
	h.sets, h.closed = nil, true
	h.mu.Unlock()
	var errs []error
	for _, ts := range sets {
		errs = append(errs, ts.Close())
	}
	return errors.Join(errs...)
}
