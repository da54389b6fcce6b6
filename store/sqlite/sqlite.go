package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	dbmigrate "github.com/coorflow/coorflow/internal/migrate"
	"github.com/coorflow/coorflow/store"
)

// DefaultBusyTimeout is how long a write waits for another process's write
// lock when Config.BusyTimeout is 0.
const DefaultBusyTimeout = 10 * time.Second

// Config says where and how to open the store.
type Config struct {
	// Path is the database file; it is created when missing. Required.
	Path string
	// BusyTimeout bounds the wait for the write lock held by another
	// connection; 0 means DefaultBusyTimeout.
	BusyTimeout time.Duration
	// Store configures the store's behaviour (warnings, kept revisions).
	Store store.Config
}

// Store is a store.Store kept in a SQLite file. Close it when done.
type Store struct {
	store.Store
	db *sql.DB
}

// Open opens (and creates, when needed) the store in cfg.Path.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Path == "" {
		return nil, fmt.Errorf("sqlite: open: %w: no database path given", store.ErrInvalid)
	}
	if cfg.BusyTimeout <= 0 {
		cfg.BusyTimeout = DefaultBusyTimeout
	}
	db, err := sql.Open("sqlite", dsn(cfg))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", cfg.Path, err)
	}
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open store in %s: %w", cfg.Path, err)
	}
	b := &backend{db: db, writer: make(chan struct{}, 1)}
	return &Store{Store: store.New(b, cfg.Store), db: db}, nil
}

// Close closes the database.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("sqlite: close: %w", err)
	}
	return nil
}

func dsn(cfg Config) string {
	path := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(cfg.Path)
	q := url.Values{}
	q.Set("_busy_timeout", strconv.FormatInt(cfg.BusyTimeout.Milliseconds(), 10))
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", "NORMAL")
	q.Set("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode()
}

// migrate applies the migrations the file lacks, in one transaction on one
// connection (see migrate.SQLite).
func migrate(ctx context.Context, db *sql.DB) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Close()
	return dbmigrate.SQLite(ctx, conn, "store_schema", migrations, ErrSchemaTooNew)
}

// backend implements store.Backend on database/sql.
type backend struct {
	db *sql.DB
	// writer holds a token while a write transaction runs, so that this
	// process's writers queue here (honouring their contexts) instead of
	// in SQLite's busy handler.
	writer chan struct{}
}

const metaCols = `path, labels, vis_scope, vis_id, content_type, size, created, updated, revision`

type scanner interface{ Scan(dest ...any) error }

// scanMeta reads metaCols and then extra columns.
func scanMeta(row scanner, extra ...any) (store.Meta, error) {
	var m store.Meta
	var labels string
	var created, updated int64
	dest := append([]any{&m.Path, &labels, &m.Visibility.Scope, &m.Visibility.ID, &m.ContentType, &m.Size,
		&created, &updated, &m.Revision}, extra...)
	if err := row.Scan(dest...); err != nil {
		return store.Meta{}, err
	}
	if err := json.Unmarshal([]byte(labels), &m.Labels); err != nil {
		return store.Meta{}, fmt.Errorf("labels of %q: %w", m.Path, err)
	}
	if len(m.Labels) == 0 {
		m.Labels = nil
	}
	m.Created = time.UnixMicro(created).UTC()
	m.Updated = time.UnixMicro(updated).UTC()
	return m, nil
}

// encodeLabels returns labels as a JSON object, "{}" when there are none.
func encodeLabels(labels map[string]string) string {
	if len(labels) == 0 {
		return "{}"
	}
	b, _ := json.Marshal(labels) // a map of strings always encodes
	return string(b)
}

func notFound(path string, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sqlite: %q: %w", path, store.ErrNotFound)
	}
	return fmt.Errorf("sqlite: %q: %w", path, err)
}

func (b *backend) Get(ctx context.Context, owner, path string) (store.Item, error) {
	return getItem(ctx, b.db, owner, path)
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func getItem(ctx context.Context, q querier, owner, path string) (store.Item, error) {
	row := q.QueryRowContext(ctx, `SELECT `+metaCols+`, content FROM store_items WHERE owner = ? AND path = ?`, owner, path)
	var it store.Item
	m, err := scanMeta(row, &it.Content)
	if err != nil {
		return store.Item{}, notFound(path, err)
	}
	it.Meta = m
	return it, nil
}

func (b *backend) ReadRange(ctx context.Context, owner, path string, offset, n int64) (store.Meta, string, error) {
	row := b.db.QueryRowContext(ctx, `SELECT `+metaCols+`, substr(CAST(content AS BLOB), ?, ?)
		FROM store_items WHERE owner = ? AND path = ?`, offset+1, n, owner, path)
	var data []byte
	m, err := scanMeta(row, &data)
	if err != nil {
		return store.Meta{}, "", notFound(path, err)
	}
	return m, string(data), nil
}

// globPrefix returns a GLOB pattern matching every string that starts with
// prefix. SQLite turns it into a range scan of the primary key.
func globPrefix(prefix string) string {
	return strings.NewReplacer("[", "[[]", "*", "[*]", "?", "[?]").Replace(prefix) + "*"
}

func (b *backend) List(ctx context.Context, owner, prefix, after string, limit int) ([]store.Meta, error) {
	rows, err := b.db.QueryContext(ctx, `SELECT `+metaCols+` FROM store_items
		WHERE owner = ? AND path GLOB ? AND path > ? ORDER BY path LIMIT ?`,
		owner, globPrefix(prefix), after, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list %q: %w", prefix, err)
	}
	defer rows.Close()
	var out []store.Meta
	for rows.Next() {
		m, err := scanMeta(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list %q: %w", prefix, err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list %q: %w", prefix, err)
	}
	return out, nil
}

func (b *backend) Match(ctx context.Context, owner, prefix string, terms []string) ([]store.Item, error) {
	conds := make([]string, len(terms))
	args := []any{owner, globPrefix(prefix)}
	for i, t := range terms {
		conds[i] = "instr(folded, ?) > 0"
		args = append(args, t)
	}
	rows, err := b.db.QueryContext(ctx, `SELECT `+metaCols+`, content FROM store_items
		WHERE owner = ? AND path GLOB ? AND (`+strings.Join(conds, " OR ")+`) ORDER BY path`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: search: %w", err)
	}
	defer rows.Close()
	var out []store.Item
	for rows.Next() {
		var it store.Item
		m, err := scanMeta(rows, &it.Content)
		if err != nil {
			return nil, fmt.Errorf("sqlite: search: %w", err)
		}
		it.Meta = m
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: search: %w", err)
	}
	return out, nil
}

func (b *backend) Update(ctx context.Context, owner string, fn func(store.Tx) error) error {
	select {
	case b.writer <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-b.writer }()
	sqlTx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	if err := fn(&tx{tx: sqlTx, owner: owner}); err != nil {
		_ = sqlTx.Rollback()
		return err
	}
	if err := sqlTx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit: %w", err)
	}
	return nil
}

// tx implements store.Tx in a SQL transaction. The transaction holds the
// database's write lock from its start, so reads in it see the latest
// committed state and nothing changes under it.
type tx struct {
	tx    *sql.Tx
	owner string
}

func (t *tx) Get(ctx context.Context, path string) (store.Item, error) {
	return getItem(ctx, t.tx, t.owner, path)
}

func itemArgs(owner string, it store.Item) []any {
	folded := strings.ToLower(it.Path) + "\n" + strings.ToLower(it.Content)
	return []any{it.Content, folded, encodeLabels(it.Labels), string(it.Visibility.Scope), it.Visibility.ID,
		string(it.ContentType), it.Size, it.Created.UnixMicro(), it.Updated.UnixMicro(), it.Revision, owner, it.Path}
}

func (t *tx) Insert(ctx context.Context, it store.Item) error {
	res, err := t.tx.ExecContext(ctx, `INSERT INTO store_items (content, folded, labels, vis_scope, vis_id,
		content_type, size, created, updated, revision, owner, path)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, itemArgs(t.owner, it)...)
	if err != nil {
		return fmt.Errorf("sqlite: insert %q: %w", it.Path, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("sqlite: insert %q: %w", it.Path, store.ErrExists)
	}
	return nil
}

func (t *tx) Replace(ctx context.Context, it store.Item) error {
	res, err := t.tx.ExecContext(ctx, `UPDATE store_items SET content = ?, folded = ?, labels = ?, vis_scope = ?,
		vis_id = ?, content_type = ?, size = ?, created = ?, updated = ?, revision = ? WHERE owner = ? AND path = ?`,
		itemArgs(t.owner, it)...)
	if err != nil {
		return fmt.Errorf("sqlite: update %q: %w", it.Path, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("sqlite: update %q: %w", it.Path, store.ErrNotFound)
	}
	return nil
}

func (t *tx) Delete(ctx context.Context, path string) error {
	for _, table := range []string{"store_items", "store_revisions"} {
		if _, err := t.tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE owner = ? AND path = ?`, t.owner, path); err != nil {
			return fmt.Errorf("sqlite: delete %q: %w", path, err)
		}
	}
	return nil
}

func (t *tx) PutPast(ctx context.Context, path string, revision int64, content string) error {
	_, err := t.tx.ExecContext(ctx, `INSERT OR REPLACE INTO store_revisions (owner, path, revision, content)
		VALUES (?, ?, ?, ?)`, t.owner, path, revision, content)
	if err != nil {
		return fmt.Errorf("sqlite: keep revision %d of %q: %w", revision, path, err)
	}
	return nil
}

func (t *tx) Past(ctx context.Context, path string, revision int64) (string, error) {
	var content string
	err := t.tx.QueryRowContext(ctx, `SELECT content FROM store_revisions WHERE owner = ? AND path = ? AND revision = ?`,
		t.owner, path, revision).Scan(&content)
	if err != nil {
		return "", notFound(path, err)
	}
	return content, nil
}

func (t *tx) DropPast(ctx context.Context, path string, below int64) error {
	_, err := t.tx.ExecContext(ctx, `DELETE FROM store_revisions WHERE owner = ? AND path = ? AND revision < ?`,
		t.owner, path, below)
	if err != nil {
		return fmt.Errorf("sqlite: drop revisions of %q: %w", path, err)
	}
	return nil
}
