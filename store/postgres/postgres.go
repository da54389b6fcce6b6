package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coorflow/coorflow/internal/pgdb"
	"github.com/coorflow/coorflow/store"
)

// DefaultSchema is the schema the tables are created in unless
// WithSchema names another.
const DefaultSchema = "public"

// Option configures Open and New.
type Option func(*options)

type options struct {
	schema string
	store  store.Config
}

// WithSchema keeps the tables in the PostgreSQL schema name, created when
// missing, instead of DefaultSchema.
func WithSchema(name string) Option {
	return func(o *options) { o.schema = name }
}

// WithConfig configures the store's behaviour (kept revisions, clock).
func WithConfig(cfg store.Config) Option {
	return func(o *options) { o.store = cfg }
}

// Store is a store.Store kept in PostgreSQL. Close it when done.
type Store struct {
	store.Store
	b *backend
}

// Open connects to the database at connString (a URL or key=value string,
// as pgxpool.ParseConfig reads it), creates the schema and tables when
// needed, and returns the store. The returned Store owns the pool; Close
// closes it.
func Open(ctx context.Context, connString string, opts ...Option) (*Store, error) {
	if connString == "" {
		return nil, fmt.Errorf("postgres: open: %w: no connection URL given", store.ErrInvalid)
	}
	pool, err := pgdb.Open(ctx, connString)
	if err != nil {
		return nil, err
	}
	s := New(pool, opts...)
	s.b.share.Own()
	if err := s.Migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// New returns a Store that uses pool, which the caller owns: Close does
// not close it. The pool may be shared with the checkpoint and trace
// backends. The tables are created on first use, or by Migrate.
func New(pool *pgxpool.Pool, opts ...Option) *Store {
	o := options{schema: DefaultSchema}
	for _, opt := range opts {
		opt(&o)
	}
	b := &backend{pool: pool, schemaName: o.schema}
	b.share = pgdb.NewShare(pool, pgdb.Backend{
		Schema:     o.schema,
		Migrations: schemaMigrations,
		Setup: func(schema string) {
			b.items, b.revisions = schema+".store_items", schema+".store_revisions"
		},
		Closed: errClosed,
	})
	return &Store{Store: store.New(b, o.store), b: b}
}

// Migrate creates the schema and tables, or brings tables of an older
// release up to date, now rather than on first use. It is what Open does
// before it returns.
func (s *Store) Migrate(ctx context.Context) error {
	return s.b.init(ctx)
}

// Close closes the pool when the Store was returned by Open. Methods
// called after Close return an error. It always returns nil; the error
// result lets Store satisfy io.Closer.
func (s *Store) Close() error {
	s.b.share.Close()
	return nil
}

// errClosed is returned by the methods of a closed Store.
var errClosed = errors.New("postgres: store is closed")

type backend struct {
	pool       *pgxpool.Pool
	share      *pgdb.Share
	schemaName string
	// quoted, schema-qualified table names, set when share is ready
	items, revisions string
}

// init sets the backend up on first use.
func (b *backend) init(ctx context.Context) error {
	_, err := b.share.Init(ctx)
	if err != nil && !errors.Is(err, errClosed) {
		return fmt.Errorf("postgres: open schema %q: %w", b.schemaName, err)
	}
	return err
}

const metaCols = `path, labels::text, vis_scope, vis_id, content_type, size, created, updated, revision`

func scanMeta(row pgx.Row, extra ...any) (store.Meta, error) {
	var m store.Meta
	var labels string
	dest := append([]any{&m.Path, &labels, &m.Visibility.Scope, &m.Visibility.ID, &m.ContentType, &m.Size,
		&m.Created, &m.Updated, &m.Revision}, extra...)
	if err := row.Scan(dest...); err != nil {
		return store.Meta{}, err
	}
	if err := json.Unmarshal([]byte(labels), &m.Labels); err != nil {
		return store.Meta{}, fmt.Errorf("labels of %q: %w", m.Path, err)
	}
	if len(m.Labels) == 0 {
		m.Labels = nil
	}
	m.Created = m.Created.UTC()
	m.Updated = m.Updated.UTC()
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
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("postgres: %q: %w", path, store.ErrNotFound)
	}
	return fmt.Errorf("postgres: %q: %w", path, err)
}

// querier is what a pool and a transaction share.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (b *backend) getItem(ctx context.Context, q querier, owner, path, lock string) (store.Item, error) {
	row := q.QueryRow(ctx, `SELECT `+metaCols+`, content FROM `+b.items+` WHERE owner = $1 AND path = $2`+lock, owner, path)
	var it store.Item
	m, err := scanMeta(row, &it.Content)
	if err != nil {
		return store.Item{}, notFound(path, err)
	}
	it.Meta = m
	return it, nil
}

func (b *backend) Get(ctx context.Context, owner, path string) (store.Item, error) {
	if err := b.init(ctx); err != nil {
		return store.Item{}, err
	}
	return b.getItem(ctx, b.pool, owner, path, "")
}

func (b *backend) ReadRange(ctx context.Context, owner, path string, offset, n int64) (store.Meta, string, error) {
	if err := b.init(ctx); err != nil {
		return store.Meta{}, "", err
	}
	row := b.pool.QueryRow(ctx, `SELECT `+metaCols+`, substring(convert_to(content, 'UTF8') from $3 for $4)
		FROM `+b.items+` WHERE owner = $1 AND path = $2`, owner, path, offset+1, n)
	var data []byte
	m, err := scanMeta(row, &data)
	if err != nil {
		return store.Meta{}, "", notFound(path, err)
	}
	return m, string(data), nil
}

// likeEscape escapes LIKE's wildcards and its escape character.
var likeEscape = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

func (b *backend) List(ctx context.Context, owner, prefix, after string, limit int) ([]store.Meta, error) {
	if err := b.init(ctx); err != nil {
		return nil, err
	}
	rows, err := b.pool.Query(ctx, `SELECT `+metaCols+` FROM `+b.items+`
		WHERE owner = $1 AND path LIKE $2 AND path > $3 ORDER BY path LIMIT $4`,
		owner, likeEscape.Replace(prefix)+"%", after, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: list %q: %w", prefix, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Meta, error) { return scanMeta(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: list %q: %w", prefix, err)
	}
	return out, nil
}

func (b *backend) Match(ctx context.Context, owner, prefix string, terms []string) ([]store.Item, error) {
	if err := b.init(ctx); err != nil {
		return nil, err
	}
	conds := make([]string, len(terms))
	args := []any{owner, likeEscape.Replace(prefix) + "%"}
	for i, t := range terms {
		args = append(args, "%"+likeEscape.Replace(t)+"%")
		n := len(args)
		conds[i] = fmt.Sprintf("path ILIKE $%d OR content ILIKE $%d", n, n)
	}
	rows, err := b.pool.Query(ctx, `SELECT `+metaCols+`, content FROM `+b.items+`
		WHERE owner = $1 AND path LIKE $2 AND (`+strings.Join(conds, " OR ")+`) ORDER BY path`, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: search: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Item, error) {
		var it store.Item
		m, err := scanMeta(r, &it.Content)
		it.Meta = m
		return it, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: search: %w", err)
	}
	return out, nil
}

func (b *backend) Update(ctx context.Context, owner string, fn func(store.Tx) error) error {
	if err := b.init(ctx); err != nil {
		return err
	}
	pgTx, err := b.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: begin: %w", err)
	}
	defer func() { _ = pgTx.Rollback(context.WithoutCancel(ctx)) }()
	if err := fn(&tx{b: b, tx: pgTx, owner: owner}); err != nil {
		return err
	}
	if err := pgTx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: commit: %w", err)
	}
	return nil
}

// tx implements store.Tx in a READ COMMITTED transaction; Get locks the
// row it reads until the transaction ends.
type tx struct {
	b     *backend
	tx    pgx.Tx
	owner string
}

func (t *tx) Get(ctx context.Context, path string) (store.Item, error) {
	return t.b.getItem(ctx, t.tx, t.owner, path, " FOR UPDATE")
}

func itemArgs(owner string, it store.Item) []any {
	return []any{owner, it.Path, it.Content, encodeLabels(it.Labels), string(it.Visibility.Scope), it.Visibility.ID,
		string(it.ContentType), it.Size, it.Created, it.Updated, it.Revision}
}

func (t *tx) Insert(ctx context.Context, it store.Item) error {
	tag, err := t.tx.Exec(ctx, `INSERT INTO `+t.b.items+` (owner, path, content, labels, vis_scope, vis_id,
		content_type, size, created, updated, revision)
		VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (owner, path) DO NOTHING`, itemArgs(t.owner, it)...)
	if err != nil {
		return fmt.Errorf("postgres: insert %q: %w", it.Path, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: insert %q: %w", it.Path, store.ErrExists)
	}
	return nil
}

func (t *tx) Replace(ctx context.Context, it store.Item) error {
	tag, err := t.tx.Exec(ctx, `UPDATE `+t.b.items+` SET content = $3, labels = $4::jsonb, vis_scope = $5,
		vis_id = $6, content_type = $7, size = $8, created = $9, updated = $10, revision = $11
		WHERE owner = $1 AND path = $2`, itemArgs(t.owner, it)...)
	if err != nil {
		return fmt.Errorf("postgres: update %q: %w", it.Path, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: update %q: %w", it.Path, store.ErrNotFound)
	}
	return nil
}

func (t *tx) Delete(ctx context.Context, path string) error {
	for _, table := range []string{t.b.items, t.b.revisions} {
		if _, err := t.tx.Exec(ctx, `DELETE FROM `+table+` WHERE owner = $1 AND path = $2`, t.owner, path); err != nil {
			return fmt.Errorf("postgres: delete %q: %w", path, err)
		}
	}
	return nil
}

func (t *tx) PutPast(ctx context.Context, path string, revision int64, content string) error {
	_, err := t.tx.Exec(ctx, `INSERT INTO `+t.b.revisions+` (owner, path, revision, content) VALUES ($1, $2, $3, $4)
		ON CONFLICT (owner, path, revision) DO UPDATE SET content = EXCLUDED.content`, t.owner, path, revision, content)
	if err != nil {
		return fmt.Errorf("postgres: keep revision %d of %q: %w", revision, path, err)
	}
	return nil
}

func (t *tx) Past(ctx context.Context, path string, revision int64) (string, error) {
	var content string
	err := t.tx.QueryRow(ctx, `SELECT content FROM `+t.b.revisions+` WHERE owner = $1 AND path = $2 AND revision = $3`,
		t.owner, path, revision).Scan(&content)
	if err != nil {
		return "", notFound(path, err)
	}
	return content, nil
}

func (t *tx) DropPast(ctx context.Context, path string, below int64) error {
	_, err := t.tx.Exec(ctx, `DELETE FROM `+t.b.revisions+` WHERE owner = $1 AND path = $2 AND revision < $3`,
		t.owner, path, below)
	if err != nil {
		return fmt.Errorf("postgres: drop revisions of %q: %w", path, err)
	}
	return nil
}
