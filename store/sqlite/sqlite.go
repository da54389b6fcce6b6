package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	dbmigrate "github.com/coorflow/coorflow/internal/migrate"
	"github.com/coorflow/coorflow/internal/sqlitedb"
	"github.com/coorflow/coorflow/store"
)

// DefaultBusyTimeout is how long a write waits for another process's write
// lock unless WithBusyTimeout says otherwise.
const DefaultBusyTimeout = sqlitedb.DefaultBusyTimeout

// Option configures Open and New.
type Option func(*options)

type options struct {
	busyTimeout time.Duration
	store       store.Config
}

// WithBusyTimeout bounds the wait for the write lock another process holds
// on the file; the default is DefaultBusyTimeout. It applies to the
// database Open opens; New leaves the caller's database as it is.
func WithBusyTimeout(d time.Duration) Option {
	return func(o *options) { o.busyTimeout = d }
}

// WithConfig configures the store's behaviour (kept revisions, clock).
func WithConfig(cfg store.Config) Option {
	return func(o *options) { o.store = cfg }
}

// Store is a store.Store kept in a SQLite database. Close it when done.
type Store struct {
	store.Store
	b *backend
}

// Open opens (and creates, when needed, with mode 0600 in directories of
// mode 0700) the store in the SQLite file at path. The returned Store owns
// the database; Close closes it.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	if path == "" {
		return nil, fmt.Errorf("sqlite: open: %w: no database path given", store.ErrInvalid)
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	db, err := sqlitedb.Open(path, sqlitedb.Options{BusyTimeout: o.busyTimeout})
	if errors.Is(err, sqlitedb.ErrNeedFile) {
		return nil, fmt.Errorf("%w; for a store in memory use store/memory", err)
	}
	if err != nil {
		return nil, err
	}
	s := New(db, opts...)
	s.b.share.Own()
	if err := s.Migrate(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("sqlite: open store in %s: %w", path, err), s.Close())
	}
	return s, nil
}

// New returns a Store that uses db, a database opened with the "sqlite"
// driver of modernc.org/sqlite, which must allow at least two open
// connections. The Store writes through db's writer connection, which it
// shares with the checkpoint and trace backends given the same db; the
// caller's data source name should set journal_mode(WAL) and busy_timeout,
// as Open does. The caller owns db: Close does not close it. The tables
// are created on first use, or by Migrate.
func New(db *sql.DB, opts ...Option) *Store {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	b := &backend{db: db}
	b.share = sqlitedb.NewShare(db, sqlitedb.Backend{Setup: migrate, Closed: errClosed})
	return &Store{Store: store.New(b, o.store), b: b}
}

// Migrate creates the tables, or brings tables of an older release up to
// date, now rather than on first use. It is what Open does before it
// returns.
func (s *Store) Migrate(ctx context.Context) error {
	return s.b.share.Init(ctx)
}

// Close waits for a write in progress, releases the Store's part of the
// writer connection and, when the Store was returned by Open, closes the
// database. Methods called after Close return an error.
func (s *Store) Close() error {
	if err := s.b.share.Close(); err != nil {
		return fmt.Errorf("sqlite: close: %w", err)
	}
	return nil
}

// errClosed is returned by the methods of a closed Store.
var errClosed = errors.New("sqlite: store is closed")

// migrate applies the migrations the file lacks, in one transaction on the
// writer connection (see migrate.SQLite).
func migrate(ctx context.Context, conn *sql.Conn) error {
	return dbmigrate.SQLite(ctx, conn, "store_schema", migrations, ErrSchemaTooNew)
}

// backend implements store.Backend on database/sql. Reads use the pool;
// writes run on the writer connection, in turns with the other backends
// on the database.
type backend struct {
	db    *sql.DB
	share *sqlitedb.Share
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
	if err := b.share.Init(ctx); err != nil {
		return store.Item{}, err
	}
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
	if err := b.share.Init(ctx); err != nil {
		return store.Meta{}, "", err
	}
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
	if err := b.share.Init(ctx); err != nil {
		return nil, err
	}
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
	if err := b.share.Init(ctx); err != nil {
		return nil, err
	}
	var rows *sql.Rows
	var err error
	if q, ok := ftsQuery(terms); ok {
		rows, err = b.db.QueryContext(ctx, `SELECT `+metaCols+`, content FROM store_items
			WHERE id IN (SELECT rowid FROM store_fts WHERE store_fts MATCH ?) AND owner = ? AND path GLOB ? ORDER BY path`,
			q, owner, globPrefix(prefix))
	} else {
		conds := make([]string, len(terms))
		args := []any{owner, globPrefix(prefix)}
		for i, t := range terms {
			conds[i] = "instr(folded, ?) > 0"
			args = append(args, t)
		}
		rows, err = b.db.QueryContext(ctx, `SELECT `+metaCols+`, content FROM store_items
			WHERE owner = ? AND path GLOB ? AND (`+strings.Join(conds, " OR ")+`) ORDER BY path`, args...)
	}
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

// ftsQuery is the FTS5 query that finds the items containing any of
// terms: each term a quoted phrase, which the trigram tokenizer matches
// as a substring. A term shorter than three characters has no trigram,
// so the index cannot find it: then ok is false and Match reads the
// items instead.
func ftsQuery(terms []string) (q string, ok bool) {
	if len(terms) == 0 {
		return "", false
	}
	parts := make([]string, len(terms))
	for i, t := range terms {
		if utf8.RuneCountInString(t) < 3 {
			return "", false
		}
		parts[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	return strings.Join(parts, " OR "), true
}

// Update runs fn in a BEGIN IMMEDIATE transaction on the writer
// connection.
func (b *backend) Update(ctx context.Context, owner string, fn func(store.Tx) error) (err error) {
	conn, err := b.share.Lock(ctx)
	if err != nil {
		return err
	}
	defer b.share.Unlock()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	defer func() {
		if err != nil {
			// A failed statement may have ended the transaction already.
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	if err := fn(&tx{q: conn, owner: owner}); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("sqlite: commit: %w", err)
	}
	return nil
}

// tx implements store.Tx in a transaction on the writer connection. The
// transaction holds the database's write lock from its start, so reads in
// it see the latest committed state and nothing changes under it.
type tx struct {
	q     querier
	owner string
}

func (t *tx) Get(ctx context.Context, path string) (store.Item, error) {
	return getItem(ctx, t.q, t.owner, path)
}

func itemArgs(owner string, it store.Item) []any {
	folded := strings.ToLower(it.Path) + "\n" + strings.ToLower(it.Content)
	return []any{it.Content, folded, encodeLabels(it.Labels), string(it.Visibility.Scope), it.Visibility.ID,
		string(it.ContentType), it.Size, it.Created.UnixMicro(), it.Updated.UnixMicro(), it.Revision, owner, it.Path}
}

func (t *tx) Insert(ctx context.Context, it store.Item) error {
	res, err := t.q.ExecContext(ctx, `INSERT INTO store_items (content, folded, labels, vis_scope, vis_id,
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
	res, err := t.q.ExecContext(ctx, `UPDATE store_items SET content = ?, folded = ?, labels = ?, vis_scope = ?,
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
		if _, err := t.q.ExecContext(ctx, `DELETE FROM `+table+` WHERE owner = ? AND path = ?`, t.owner, path); err != nil {
			return fmt.Errorf("sqlite: delete %q: %w", path, err)
		}
	}
	return nil
}

func (t *tx) PutPast(ctx context.Context, path string, revision int64, content string) error {
	_, err := t.q.ExecContext(ctx, `INSERT OR REPLACE INTO store_revisions (owner, path, revision, content)
		VALUES (?, ?, ?, ?)`, t.owner, path, revision, content)
	if err != nil {
		return fmt.Errorf("sqlite: keep revision %d of %q: %w", revision, path, err)
	}
	return nil
}

func (t *tx) Past(ctx context.Context, path string, revision int64) (string, error) {
	var content string
	err := t.q.QueryRowContext(ctx, `SELECT content FROM store_revisions WHERE owner = ? AND path = ? AND revision = ?`,
		t.owner, path, revision).Scan(&content)
	if err != nil {
		return "", notFound(path, err)
	}
	return content, nil
}

func (t *tx) DropPast(ctx context.Context, path string, below int64) error {
	_, err := t.q.ExecContext(ctx, `DELETE FROM store_revisions WHERE owner = ? AND path = ? AND revision < ?`,
		t.owner, path, below)
	if err != nil {
		return fmt.Errorf("sqlite: drop revisions of %q: %w", path, err)
	}
	return nil
}
