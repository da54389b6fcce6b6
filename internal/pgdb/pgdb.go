package pgdb

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coorflow/coorflow/internal/migrate"
)

// MaxConns is the most connections a pool from Open holds when its URL
// does not say (pool_max_conns): room for a checkpoint saver, a store and
// a trace recorder of a busy server sharing it, as the three pools of
// pgx's default size they used to have.
func MaxConns() int32 {
	return int32(3 * max(4, runtime.NumCPU()))
}

// Open returns a pool on the database at url (a URL or key=value string,
// as pgxpool.ParseConfig reads it). It connects lazily; close the pool
// when done.
func Open(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = MaxConns()
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	return pool, nil
}

// Migrations are the schema changes of one backend (see migrate.Postgres).
type Migrations struct {
	// Lock names the advisory lock taken while migrating, followed by the
	// schema name ("coorflow/checkpoint:").
	Lock string
	// Table records the versions applied ("checkpoint_schema").
	Table string
	// Steps[v-1] brings the tables from version v-1 to v; "{schema}"
	// stands for the quoted schema name.
	Steps [][]string
	// TooNew is wrapped by the error for tables of a newer version.
	TooNew error
}

// Backend says where a backend keeps its tables and how it sets itself up.
type Backend struct {
	// Schema holds the tables, created when missing; "" means the
	// connection's current schema (the first existing one of its
	// search_path).
	Schema string
	// Migrations create or upgrade the tables.
	Migrations Migrations
	// Setup, if set, runs once after the migrations with the quoted
	// schema name, before Init returns it.
	Setup func(schema string)
	// Closed is what Init returns after Close.
	Closed error
}

// Share is one backend's use of a pool: the pool, whether the backend owns
// it, and its schema, chosen and migrated once on first use (Init). It is
// safe for concurrent use.
type Share struct {
	pool *pgxpool.Pool
	owns bool
	b    Backend

	mu     sync.Mutex
	ready  atomic.Bool // schema is set
	closed bool        // guarded by mu
	schema string      // quoted
}

// NewShare returns the Share of a backend b on pool. It does no I/O.
func NewShare(pool *pgxpool.Pool, b Backend) *Share {
	return &Share{pool: pool, b: b}
}

// Own makes Close close the pool too: for a backend that opened it.
func (s *Share) Own() { s.owns = true }

// Pool returns the pool.
func (s *Share) Pool() *pgxpool.Pool { return s.pool }

// Init chooses the schema and creates or upgrades the tables in it, once,
// and returns the quoted schema name; after a failure the next call tries
// again. It returns Backend.Closed after Close.
func (s *Share) Init(ctx context.Context) (string, error) {
	if s.ready.Load() {
		return s.schema, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", s.b.Closed
	}
	if s.ready.Load() {
		return s.schema, nil
	}
	schema, err := s.choose(ctx)
	if err != nil {
		return "", err
	}
	m := s.b.Migrations
	if err := migrate.Postgres(ctx, s.pool, schema, m.Lock, m.Table, m.Steps, m.TooNew); err != nil {
		return "", err
	}
	s.schema = pgx.Identifier{schema}.Sanitize()
	if s.b.Setup != nil {
		s.b.Setup(s.schema)
	}
	s.ready.Store(true)
	return s.schema, nil
}

// choose returns the schema the backend names, or the current one.
func (s *Share) choose(ctx context.Context) (string, error) {
	if s.b.Schema != "" {
		return s.b.Schema, nil
	}
	var current *string
	if err := s.pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&current); err != nil {
		return "", fmt.Errorf("postgres: current schema: %w", err)
	}
	if current == nil {
		return "", errors.New("postgres: the connection has no current schema (search_path); name one with WithSchema")
	}
	return *current, nil
}

// Close closes the pool when the Share owns it. Init returns
// Backend.Closed afterwards; a second Close does nothing.
func (s *Share) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	s.ready.Store(false)
	if s.owns {
		s.pool.Close()
	}
}
