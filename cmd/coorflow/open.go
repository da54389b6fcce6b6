package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coorflow/coorflow/checkpoint/postgres"
	"github.com/coorflow/coorflow/checkpoint/sqlite"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/pgdb"
	"github.com/coorflow/coorflow/internal/sqlitedb"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/board"
	spostgres "github.com/coorflow/coorflow/store/postgres"
	ssqlite "github.com/coorflow/coorflow/store/sqlite"
	"github.com/coorflow/coorflow/trace"
	tpostgres "github.com/coorflow/coorflow/trace/postgres"
	tsqlite "github.com/coorflow/coorflow/trace/sqlite"
	"github.com/coorflow/coorflow/workflows"
)

// defaultDB is where the CLI keeps threads and agents.
const defaultDB = ".coorflow/coorflow.db"

// workflowRef is a workflow the CLI loaded, and how to name it again.
type workflowRef struct {
	file *workflows.File
	// arg is the argument as given; ref what a thread records: an
	// absolute path or builtin:<name>.
	arg, ref string
}

// loadWorkflow loads a workflow file, the workflow.yaml of a directory, or
// a built-in workflow by name, with opts. It accepts the tools a Go
// program must register (File.Unregistered names them).
func loadWorkflow(arg string, opts ...workflows.LoadOption) (*workflowRef, error) {
	return loadWith(arg, append(opts, workflows.WithUnregistered())...)
}

// runnable is loadWorkflow for a workflow the CLI runs: it refuses files
// that need tools or functions written in Go.
func runnable(arg string, opts ...workflows.LoadOption) (*workflowRef, error) {
	wf, err := loadWorkflow(arg, opts...)
	if err != nil {
		return nil, err
	}
	if need := wf.file.Unregistered(); len(need) > 0 {
		return nil, usagef("%s needs %s from the Go program that runs it; the coorflow command cannot run it (see examples/embed)", arg, strings.Join(need, ", "))
	}
	return wf, nil
}

func loadWith(arg string, opts ...workflows.LoadOption) (*workflowRef, error) {
	if name, ok := strings.CutPrefix(arg, "builtin:"); ok {
		f, err := workflows.Builtin(name, opts...)
		if err != nil {
			return nil, err
		}
		return &workflowRef{file: f, arg: name, ref: arg}, nil
	}
	path := arg
	fi, err := os.Stat(arg)
	switch {
	case err == nil && fi.IsDir():
		path = filepath.Join(arg, "workflow.yaml")
		if _, err := os.Stat(path); err != nil {
			return nil, usagef("%s is a directory without a workflow.yaml", arg)
		}
	case err != nil && !strings.ContainsAny(arg, "/.") && isBuiltin(arg):
		f, err := workflows.Builtin(arg, opts...)
		if err != nil {
			return nil, err
		}
		return &workflowRef{file: f, arg: arg, ref: "builtin:" + arg}, nil
	case err != nil:
		return nil, usagef("no workflow file or directory %s (built-in workflows: %s)", arg, strings.Join(workflows.Builtins(), ", "))
	}
	f, err := workflows.Load(path, opts...)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	return &workflowRef{file: f, arg: arg, ref: abs}, nil
}

func isBuiltin(name string) bool {
	for _, b := range workflows.Builtins() {
		if b == name {
			return true
		}
	}
	return false
}

// db is the CLI's database: one SQLite handle or one Postgres pool, and
// on it the checkpoint saver, the context store and, set up when a command
// needs it, the store of recorded runs.
type db struct {
	saver  graph.Saver
	store  store.Store
	traces trace.Store
	where  string
	// url is the SQLite file or the Postgres URL, unredacted.
	url string
	// newTraces returns the store of recorded runs on the handle.
	newTraces func() traceBackend
	// pool is the Postgres pool (nil on SQLite).
	pool *pgxpool.Pool
	// backends are closed in reverse order, then the handle.
	backends    []backend
	closeHandle func()
}

// backend is what the saver and the stores are besides their interfaces.
type backend interface {
	// Migrate creates or upgrades the backend's tables.
	Migrate(ctx context.Context) error
	// Close releases what the backend holds of the handle.
	Close() error
}

// traceBackend is a store of recorded runs on the handle.
type traceBackend interface {
	trace.Store
	backend
}

// Close closes the stores, then the handle.
func (d *db) Close() {
	for _, b := range slices.Backward(d.backends) {
		_ = b.Close()
	}
	d.closeHandle()
}

// traceStore sets up the store of recorded runs, in the same database: the
// SQLite file's own tables, or Postgres.
func (d *db) traceStore(ctx context.Context) (trace.Store, error) {
	if d.traces != nil {
		return d.traces, nil
	}
	t := d.newTraces()
	if err := t.Migrate(ctx); err != nil {
		_ = t.Close()
		return nil, fmt.Errorf("the recorded runs in %s: %w", d.where, err)
	}
	d.traces = t
	d.backends = append(d.backends, t)
	return t, nil
}

func isPostgres(where string) bool {
	return strings.HasPrefix(where, "postgres://") || strings.HasPrefix(where, "postgresql://")
}

// errNoDatabase: the SQLite file a command reads does not exist.
var errNoDatabase = errors.New("no database")

// openDB opens the database and sets up the saver and the store on it. A
// SQLite file is created with its directory unless mustExist; its files
// are kept from other users (see sqlitedb.Open and a.private).
func (a *app) openDB(ctx context.Context, where string, mustExist bool) (*db, error) {
	if isPostgres(where) {
		pool, err := pgdb.Open(ctx, where)
		if err != nil {
			return nil, err
		}
		saver, st := postgres.New(pool), spostgres.New(pool)
		d := &db{saver: saver, store: st, where: redact(where), url: where, closeHandle: pool.Close, pool: pool,
			newTraces: func() traceBackend { return tpostgres.New(pool) }}
		return d.setUp(ctx, saver, st)
	}
	if _, err := os.Stat(where); err != nil && mustExist {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w at %s: nothing has run here yet (or pass --db)", errNoDatabase, where)
		}
		return nil, fmt.Errorf("database %s: %w", where, err)
	}
	a.private(where)
	handle, err := sqlitedb.Open(where, sqlitedb.Options{})
	if err != nil {
		return nil, err
	}
	saver, st := sqlite.New(handle), ssqlite.New(handle)
	d := &db{saver: saver, store: st, where: where, url: where, closeHandle: func() { _ = handle.Close() },
		newTraces: func() traceBackend { return tsqlite.New(handle) }}
	return d.setUp(ctx, saver, st)
}

// setUp migrates the backends of d; after a failure, it closes d.
func (d *db) setUp(ctx context.Context, backends ...backend) (*db, error) {
	d.backends = backends
	for _, b := range backends {
		if err := b.Migrate(ctx); err != nil {
			d.Close()
			return nil, fmt.Errorf("%w (opening %s)", err, d.where)
		}
	}
	return d, nil
}

// redact hides the password of a connection URL.
func redact(u string) string {
	at := strings.LastIndex(u, "@")
	scheme := strings.Index(u, "://")
	if at < 0 || scheme < 0 {
		return u
	}
	cred := u[scheme+3 : at]
	if user, _, ok := strings.Cut(cred, ":"); ok {
		return u[:scheme+3] + user + ":***" + u[at:]
	}
	return u
}

// threadInfo is what the CLI records about a thread it started.
type threadInfo struct {
	Workflow string    `json:"workflow"`
	Name     string    `json:"name"`
	Created  time.Time `json:"created"`
}

var threadID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

func threadPath(id string) string { return "project/coorflow/threads/" + id }

// threadInfo returns the record of a thread, or false.
func (d *db) threadInfo(ctx context.Context, owner, id string) (threadInfo, bool, error) {
	it, err := d.store.Get(ctx, owner, threadPath(id))
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalidPath) {
		return threadInfo{}, false, nil
	}
	if err != nil {
		return threadInfo{}, false, err
	}
	var ti threadInfo
	if err := json.Unmarshal([]byte(it.Content), &ti); err != nil {
		return threadInfo{}, false, fmt.Errorf("thread %s: unreadable record: %w", id, err)
	}
	return ti, true, nil
}

func (d *db) recordThread(ctx context.Context, owner, id string, ti threadInfo) error {
	b, _ := json.Marshal(ti)
	_, err := d.store.Add(ctx, owner, threadPath(id), string(b), store.Attrs{ContentType: store.ContentJSON, Labels: board.Prompt{Trust: board.TrustSystem}.Labels()})
	if errors.Is(err, store.ErrExists) {
		return nil
	}
	return err
}

// offlineModels serve graphs that are drawn or read, never run: any call
// fails.
func offlineModels() *llm.Models {
	ms, _ := llm.NewStatic(map[llm.Tier]llm.TierModel{llm.TierBasic: {Model: noModel{}, Profile: llm.Profile{Model: "none"}}})
	return ms
}

type noModel struct{}

var errNoModel = errors.New("coorflow: no model in this command")

func (noModel) GenerateContent(context.Context, []llms.MessageContent, ...llms.CallOption) (*llms.ContentResponse, error) {
	return nil, errNoModel
}

func (noModel) Call(context.Context, string, ...llms.CallOption) (string, error) {
	return "", errNoModel
}

// compileOffline compiles a workflow for reading threads or drawing it.
func compileOffline(ctx context.Context, f *workflows.File, d *db, owner string) (*graph.Runnable, error) {
	env := workflows.Env{Models: offlineModels(), Owner: owner, Offline: true}
	if d != nil {
		env.Store = d.store
		env.Graph = []graph.Option{graph.WithSaver(d.saver)}
	}
	return f.Compile(ctx, env)
}
