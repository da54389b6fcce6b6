package sqlitedb

import (
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// DefaultBusyTimeout is how long a statement waits for the lock another
// process holds on the file when Options.BusyTimeout is 0.
const DefaultBusyTimeout = 10 * time.Second

// Modes of what Open creates: the database is its user's alone.
const (
	DirMode  os.FileMode = 0o700
	FileMode os.FileMode = 0o600
)

// ErrNeedFile is returned by Open for an empty path or a database in
// memory, which each connection of a pool would see as a database of its
// own.
var ErrNeedFile = errors.New("need a file")

// Options configure Open.
type Options struct {
	// BusyTimeout bounds the wait for the lock another process holds on
	// the file before a statement fails with SQLITE_BUSY; 0 means
	// DefaultBusyTimeout.
	BusyTimeout time.Duration
}

// Open opens the SQLite file at path, creating it (FileMode) and its
// directories (DirMode) when missing; existing ones keep their modes. The
// tables are the backends' to create. Close the returned database when
// done.
func Open(path string, o Options) (*sql.DB, error) {
	if InMemory(path) {
		return nil, fmt.Errorf("sqlite: open %q: %w", path, ErrNeedFile)
	}
	if err := create(path); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", DSN(path, o))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	// Reopening a connection costs a file open and re-preparing every
	// statement: keep as many idle as may be busy at once.
	n := runtime.GOMAXPROCS(0) + 2
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	return db, nil
}

// InMemory reports whether path names no file: empty, or a database in
// memory.
func InMemory(path string) bool {
	return path == "" || path == ":memory:" || strings.Contains(path, "mode=memory") || strings.HasPrefix(path, "file::memory:")
}

// create makes path's directory (with its parents) and the file when they
// are missing, before SQLite does it with the umask's modes.
func create(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), DirMode); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, FileMode)
	if err != nil {
		return err
	}
	return f.Close()
}

// DSN returns the modernc.org/sqlite data source name of the file at path
// with coorflow's pragmas.
func DSN(path string, o Options) string {
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", o.BusyTimeout.Milliseconds()))
	// Small pages for new files: a commit writes every page it changed to
	// the WAL, and a small checkpoint step changes four, so 1 KiB pages
	// write a quarter of the bytes 4 KiB pages would, and a quarter is
	// flushed at each WAL checkpoint. Large values (trace payloads) take
	// more overflow pages, which costs them little.
	q.Add("_pragma", "page_size(1024)")
	q.Add("_pragma", "synchronous(NORMAL)")
	// Applied after the _pragma list, so that page_size comes first.
	q.Set("_journal_mode", "WAL")
	q.Set("_foreign_keys", "1")
	// As a URI, the path escapes the characters that would end it.
	escaped := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	return "file:" + escaped + "?" + q.Encode()
}
