// Package accounts keeps budget accounts in a database (PostgreSQL or
// SQLite), shared by every process that uses it: each account keeps what
// was spent against a budget and what the model calls in flight reserved
// (llm.Account). runs keeps owners' budgets in them; temporalrun's workers
// keep runs' and owners' budgets in the accounts of their saver's
// database.
package accounts

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coorflow/coorflow/internal/migrate"
	"github.com/coorflow/coorflow/internal/pgdb"
	"github.com/coorflow/coorflow/llm"
)

// HoldTTL is how long a reservation of a model call is kept in a database
// account: a process that dies with calls in flight holds their
// reservations this long. A call that takes longer still counts what it
// spent when it ends, but its reservation no longer holds room meanwhile.
const HoldTTL = 15 * time.Minute

// Accounts are the budget accounts of a database, shared by every process
// that uses it: each account keeps what was spent against a budget and
// what the model calls in flight reserved (llm.Account). Accounts of
// PostgreSQL (Postgres) and SQLite (SQLite) reserve in one
// transaction that holds the account's row (PostgreSQL: SELECT ... FOR
// UPDATE; SQLite: BEGIN IMMEDIATE, the database's write lock).
type Accounts struct {
	db  dialect
	now func() time.Time
}

// Account returns the account key (an owner's: OwnerAccount). start says
// what was spent against the budget before the account existed: it is
// called when the account is first used and found missing in the
// database, and its spend is the account's from then on; later spending
// is counted by the calls the account settles.
func (a *Accounts) Account(key string, start func(context.Context) (llm.Spend, error)) llm.Account {
	return &account{a: a, key: key, start: start}
}

// Of returns the accounts kept in the database of db — a store or saver
// of PostgreSQL or SQLite (trace/postgres, trace/sqlite,
// checkpoint/postgres, checkpoint/sqlite), in its schema — or nil when db
// keeps nothing in a database (the memory backends).
func Of(db any) *Accounts {
	switch d := db.(type) {
	case interface {
		PostgresDatabase() (*pgxpool.Pool, string)
	}:
		return Postgres(d.PostgresDatabase())
	case interface{ SQLiteDatabase() *sql.DB }:
		return SQLite(d.SQLiteDatabase())
	}
	return nil
}

// OwnerAccount is the key of the account of an owner's budget.
func OwnerAccount(owner string) string { return "owner/" + owner }

// RunAccount is the key of the account of a run's budget, by the id of
// the turn that started it.
func RunAccount(id string) string { return "run/" + id }

// dialect runs a transaction, or a read, on one kind of database.
type dialect interface {
	// tx runs fn in a transaction; {lock} in its statements holds the
	// rows they read until it ends.
	tx(ctx context.Context, fn func(q querier) error) error
	// read runs fn outside a transaction.
	read(ctx context.Context, fn func(q querier) error) error
	// sql rewrites a statement with ? placeholders for the database.
	sql(stmt string) string
}

// querier is what the statements run on.
type querier interface {
	exec(ctx context.Context, stmt string, args ...any) error
	row(ctx context.Context, stmt string, args ...any) scanner
}

type scanner interface{ Scan(dest ...any) error }

type account struct {
	a     *Accounts
	key   string
	start func(context.Context) (llm.Spend, error)

	mu      sync.Mutex
	created bool
}

// create makes the account's row when it is missing, from start.
func (c *account) create(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.created {
		return nil
	}
	d := c.a.db
	var n int
	err := d.read(ctx, func(q querier) error {
		return q.row(ctx, d.sql(`SELECT count(*) FROM {t}budget_accounts WHERE account = ?`), c.key).Scan(&n)
	})
	if err != nil {
		return fmt.Errorf("accounts: account %q: %w", c.key, err)
	}
	if n == 0 {
		var spent llm.Spend
		if c.start != nil {
			if spent, err = c.start(ctx); err != nil {
				return fmt.Errorf("accounts: account %q: what was spent before: %w", c.key, err)
			}
		}
		data, err := json.Marshal(spent)
		if err != nil {
			return fmt.Errorf("accounts: account %q: %w", c.key, err)
		}
		err = d.tx(ctx, func(q querier) error {
			return q.exec(ctx, d.sql(`INSERT INTO {t}budget_accounts (account, spent) VALUES (?, ?) ON CONFLICT (account) DO NOTHING`), c.key, string(data))
		})
		if err != nil {
			return fmt.Errorf("accounts: create account %q: %w", c.key, err)
		}
	}
	c.created = true
	return nil
}

// state reads the account's spend, its unexpired reservations and the
// budget it keeps (nil for none), deleting the expired reservations when
// del is set (in a transaction). In a transaction the account's row is
// locked first, by a statement of its own: in PostgreSQL (read committed)
// the reservations are then read by a later statement, whose snapshot
// sees those the transaction that held the row before committed; read in
// the statement that waited for the lock, they would not be.
func (c *account) state(ctx context.Context, q querier, del bool) (llm.Spend, llm.Reserved, *llm.Budget, error) {
	d := c.a.db
	now := c.a.now().UnixMicro()
	var (
		spent  llm.Spend
		r      llm.Reserved
		raw    string
		kept   *string
		tokens int64
	)
	err := q.row(ctx, d.sql(`SELECT a.spent, a.budget FROM {t}budget_accounts a WHERE a.account = ?{lock}`), c.key).Scan(&raw, &kept)
	if err != nil {
		return spent, r, nil, fmt.Errorf("read account: %w", err)
	}
	if del {
		if err := q.exec(ctx, d.sql(`DELETE FROM {t}budget_holds WHERE account = ? AND expires < ?`), c.key, now); err != nil {
			return spent, r, nil, fmt.Errorf("expire reservations: %w", err)
		}
	}
	err = q.row(ctx, d.sql(`SELECT count(*), CAST(coalesce(sum(tokens), 0) AS BIGINT), CAST(coalesce(sum(usd), 0) AS DOUBLE PRECISION)
		FROM {t}budget_holds WHERE account = ? AND expires >= ?`), c.key, now).Scan(&r.Calls, &tokens, &r.USD)
	if err != nil {
		return spent, r, nil, fmt.Errorf("sum reservations: %w", err)
	}
	r.Tokens = int(tokens)
	if err := json.Unmarshal([]byte(raw), &spent); err != nil {
		return spent, r, nil, fmt.Errorf("decode account: %w", err)
	}
	var b *llm.Budget
	if kept != nil {
		b = new(llm.Budget)
		if err := json.Unmarshal([]byte(*kept), b); err != nil {
			return spent, r, nil, fmt.Errorf("decode the account's budget: %w", err)
		}
	}
	return spent, r, b, nil
}

// Key returns the account's key.
func (c *account) Key() string { return c.key }

// Reserve implements llm.Account. A budget the account keeps (SetBudget)
// replaces b.
func (c *account) Reserve(ctx context.Context, b llm.Budget, claim llm.Claim) (llm.Reservation, error) {
	if err := c.create(ctx); err != nil {
		return llm.Reservation{}, err
	}
	var res llm.Reservation
	d := c.a.db
	err := d.tx(ctx, func(q querier) error {
		s, r, kept, err := c.state(ctx, q, true)
		if err != nil {
			return err
		}
		if kept != nil {
			b = *kept
		}
		res.Spent, res.Budget = s, b
		var granted int
		if granted, res.Verdict = claim.Fit(b, s, r); res.Verdict != llm.Fits {
			return nil
		}
		h := llm.Hold{ID: newHoldID(), Tokens: claim.Prompt + granted, USD: claim.PromptUSD + float64(granted)*claim.OutputUSD, Completion: granted}
		res.Hold = h
		return q.exec(ctx, d.sql(`INSERT INTO {t}budget_holds (id, account, tokens, usd, expires) VALUES (?, ?, ?, ?, ?)`),
			h.ID, c.key, h.Tokens, h.USD, c.a.now().Add(HoldTTL).UnixMicro())
	})
	if err != nil {
		return llm.Reservation{}, fmt.Errorf("accounts: account %q: %w", c.key, err)
	}
	return res, nil
}

// SetBudget implements llm.BudgetKeeper: b replaces the budget the
// account's meters are given from now on.
func (c *account) SetBudget(ctx context.Context, b llm.Budget) error {
	if err := c.create(ctx); err != nil {
		return err
	}
	data, err := json.Marshal(b)
	if err != nil {
		return err
	}
	d := c.a.db
	err = d.tx(ctx, func(q querier) error {
		return q.exec(ctx, d.sql(`UPDATE {t}budget_accounts SET budget = ? WHERE account = ?`), string(data), c.key)
	})
	if err != nil {
		return fmt.Errorf("accounts: account %q: keep its budget: %w", c.key, err)
	}
	return nil
}

// Settle implements llm.Account.
func (c *account) Settle(ctx context.Context, h llm.Hold, add llm.Spend) error {
	if err := c.create(ctx); err != nil {
		return err
	}
	d := c.a.db
	err := d.tx(ctx, func(q querier) error {
		if h.ID != "" {
			if err := q.exec(ctx, d.sql(`DELETE FROM {t}budget_holds WHERE id = ?`), h.ID); err != nil {
				return fmt.Errorf("give back reservation: %w", err)
			}
		}
		if add.Calls == 0 && add.Tokens() == 0 && add.CostUSD == 0 {
			return nil
		}
		var raw string
		if err := q.row(ctx, d.sql(`SELECT a.spent FROM {t}budget_accounts a WHERE a.account = ?{lock}`), c.key).Scan(&raw); err != nil {
			return fmt.Errorf("read account: %w", err)
		}
		var spent llm.Spend
		if err := json.Unmarshal([]byte(raw), &spent); err != nil {
			return fmt.Errorf("decode account: %w", err)
		}
		spent.Merge(add)
		data, err := json.Marshal(spent)
		if err != nil {
			return err
		}
		return q.exec(ctx, d.sql(`UPDATE {t}budget_accounts SET spent = ? WHERE account = ?`), string(data), c.key)
	})
	if err != nil {
		return fmt.Errorf("accounts: account %q: %w", c.key, err)
	}
	return nil
}

// Balance implements llm.Account.
func (c *account) Balance(ctx context.Context) (llm.Spend, llm.Reserved, error) {
	if err := c.create(ctx); err != nil {
		return llm.Spend{}, llm.Reserved{}, err
	}
	var (
		s llm.Spend
		r llm.Reserved
	)
	err := c.a.db.read(ctx, func(q querier) (err error) {
		s, r, _, err = c.state(ctx, q, false)
		return err
	})
	if err != nil {
		return s, r, fmt.Errorf("accounts: account %q: %w", c.key, err)
	}
	return s, r, nil
}

func newHoldID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// errAccountsClosed is returned after the database was closed.
var errAccountsClosed = errors.New("accounts: budget accounts: closed")

// accountSteps[v-1] brings the tables from version v-1 to v; "{t}" stands
// for the schema's prefix ("" in SQLite). Append; never edit a released
// step.
var accountSteps = [][]string{{
	`CREATE TABLE {t}budget_accounts (
		account TEXT NOT NULL PRIMARY KEY,
		spent   TEXT NOT NULL,
		budget  TEXT
	)`,
	`CREATE TABLE {t}budget_holds (
		id      TEXT NOT NULL PRIMARY KEY,
		account TEXT NOT NULL,
		tokens  BIGINT NOT NULL,
		usd     DOUBLE PRECISION NOT NULL,
		expires BIGINT NOT NULL
	)`,
	`CREATE INDEX budget_holds_by_key ON {t}budget_holds (account, expires)`,
}}

// errAccountsTooNew is returned for tables written by a newer version.
var errAccountsTooNew = errors.New("accounts: the budget tables are newer than this version supports")

// Postgres returns the accounts kept in pool, in schema ("": the
// connection's current schema), their tables created on first use.
func Postgres(pool *pgxpool.Pool, schema string) *Accounts {
	steps := make([][]string, len(accountSteps))
	for i, s := range accountSteps {
		for _, stmt := range s {
			steps[i] = append(steps[i], strings.ReplaceAll(stmt, "{t}", "{schema}."))
		}
	}
	share := pgdb.NewShare(pool, pgdb.Backend{Schema: schema, Closed: errAccountsClosed, Migrations: pgdb.Migrations{
		Lock: "coorflow/budget:", Table: "budget_schema", Steps: steps, TooNew: errAccountsTooNew}})
	return &Accounts{db: &pgDialect{share: share}, now: time.Now}
}

type pgDialect struct {
	share *pgdb.Share
}

func (p *pgDialect) sql(stmt string) string {
	// The schema is filled in by tx and read, which know it.
	n := 0
	var b strings.Builder
	for _, r := range stmt {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return strings.ReplaceAll(b.String(), "{lock}", " FOR UPDATE OF a")
}

type pgQuerier struct {
	schema string
	tx     pgx.Tx        // in a transaction
	pool   *pgxpool.Pool // else
}

func (q *pgQuerier) stmt(s string) string { return strings.ReplaceAll(s, "{t}", q.schema+".") }

func (q *pgQuerier) exec(ctx context.Context, s string, args ...any) error {
	var err error
	if q.tx != nil {
		_, err = q.tx.Exec(ctx, q.stmt(s), args...)
	} else {
		_, err = q.pool.Exec(ctx, q.stmt(s), args...)
	}
	return err
}

func (q *pgQuerier) row(ctx context.Context, s string, args ...any) scanner {
	if q.tx != nil {
		return q.tx.QueryRow(ctx, q.stmt(s), args...)
	}
	return q.pool.QueryRow(ctx, q.stmt(s), args...)
}

func (p *pgDialect) tx(ctx context.Context, fn func(q querier) error) error {
	schema, err := p.share.Init(ctx)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, p.share.Pool(), func(tx pgx.Tx) error {
		return fn(&pgQuerier{schema: schema, tx: tx})
	})
}

func (p *pgDialect) read(ctx context.Context, fn func(q querier) error) error {
	schema, err := p.share.Init(ctx)
	if err != nil {
		return err
	}
	return fn(&pgQuerier{schema: schema, pool: p.share.Pool()})
}

// SQLite returns the accounts kept in db, a database opened as
// checkpoint/sqlite and trace/sqlite open theirs (with a busy timeout),
// their tables created on first use. Processes that open the same file
// share the accounts. A transaction runs on a connection of db's pool
// with SQLite's write lock from its start (BEGIN IMMEDIATE), waiting for
// the writers of other connections and processes up to the busy timeout;
// the accounts hold no connection between transactions, so they need no
// Close.
func SQLite(db *sql.DB) *Accounts {
	return &Accounts{db: &sqliteDialect{db: db}, now: time.Now}
}

type sqliteDialect struct {
	db *sql.DB

	mu    sync.Mutex
	ready bool
}

func (*sqliteDialect) sql(stmt string) string {
	return strings.NewReplacer("{t}", "", "{lock}", "").Replace(stmt)
}

// setUp creates the tables once.
func (d *sqliteDialect) setUp(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ready {
		return nil
	}
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	steps := make([][]string, len(accountSteps))
	for i, s := range accountSteps {
		for _, stmt := range s {
			steps[i] = append(steps[i], strings.ReplaceAll(stmt, "{t}", ""))
		}
	}
	if err := migrate.SQLite(ctx, conn, "budget_schema", steps, errAccountsTooNew); err != nil {
		return err
	}
	d.ready = true
	return nil
}

type sqliteQuerier struct {
	q interface {
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
		QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	}
}

func (q sqliteQuerier) exec(ctx context.Context, s string, args ...any) error {
	_, err := q.q.ExecContext(ctx, s, args...)
	return err
}

func (q sqliteQuerier) row(ctx context.Context, s string, args ...any) scanner {
	return q.q.QueryRowContext(ctx, s, args...)
}

func (d *sqliteDialect) tx(ctx context.Context, fn func(q querier) error) (err error) {
	if err := d.setUp(ctx); err != nil {
		return err
	}
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := beginImmediate(ctx, conn); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err = fn(sqliteQuerier{q: conn}); err == nil {
		if _, err = conn.ExecContext(ctx, "COMMIT"); err != nil {
			err = fmt.Errorf("commit: %w", err)
		}
	}
	if err != nil {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
	}
	return err
}

// busyWait bounds how long a transaction waits for SQLite's write lock in
// all: each BEGIN IMMEDIATE waits up to the handle's busy timeout, and is
// tried again while the lock stays busy. SQLite's busy handler is not
// fair: with many processes writing one file a writer can be passed over
// for longer than one timeout while the others take turns, and a budget
// reservation that failed then would fail the model call.
const busyWait = 2 * time.Minute

// beginImmediate starts a write transaction on conn, waiting for the
// write lock up to busyWait (or ctx).
func beginImmediate(ctx context.Context, conn *sql.Conn) error {
	deadline := time.Now().Add(busyWait)
	for {
		_, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE")
		if err == nil || !isBusy(err) || ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		if busyRetried != nil {
			busyRetried()
		}
	}
}

// busyRetried, when set (by tests), is called before each retry.
var busyRetried func()

// isBusy reports whether err is SQLite's SQLITE_BUSY (of any extended
// code): the lock another connection holds outlasted the busy timeout.
func isBusy(err error) bool {
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == 5 // SQLITE_BUSY
}

func (d *sqliteDialect) read(ctx context.Context, fn func(q querier) error) error {
	if err := d.setUp(ctx); err != nil {
		return err
	}
	return fn(sqliteQuerier{q: d.db})
}
