package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coorflow/coorflow/graph"
)

// ErrLeaseHeld is returned by Acquire when another holder's lease on the
// thread has not expired.
var ErrLeaseHeld = errors.New("postgres: the thread is leased by another holder")

// Lease is a holder's exclusive right to write a thread until Expires. Its
// Token fences the writes: a Saver returned by Fenced stores nothing once
// another holder has taken the thread over.
type Lease struct {
	Thread string
	Holder string
	// Token grows with every new holder of the thread.
	Token int64
	// Expires is when the lease lapses unless renewed, by the database's
	// clock.
	Expires time.Time
}

// leaseQueries are the statements on the leases table.
type leaseQueries struct {
	acquire, renew, release, token string
}

func newLeaseQueries(r *strings.Replacer) leaseQueries {
	return leaseQueries{
		// A new lease, or the next token of an expired one.
		acquire: r.Replace(`INSERT INTO {schema}.thread_leases AS l (thread_id, holder, token, expires)
			VALUES ($1, $2, 1, clock_timestamp() + $3 * interval '1 microsecond')
			ON CONFLICT (thread_id) DO UPDATE SET holder = excluded.holder, token = l.token + 1, expires = excluded.expires
			WHERE l.expires < clock_timestamp()
			RETURNING token, expires`),
		renew: r.Replace(`UPDATE {schema}.thread_leases SET expires = clock_timestamp() + $3 * interval '1 microsecond'
			WHERE thread_id = $1 AND token = $2 AND expires >= clock_timestamp()
			RETURNING expires`),
		release: r.Replace(`UPDATE {schema}.thread_leases SET expires = '-infinity'
			WHERE thread_id = $1 AND token = $2`),
		// The row lock makes a takeover wait for a fenced write in flight,
		// and the write see the takeover once it is committed.
		token: r.Replace(`SELECT token FROM {schema}.thread_leases WHERE thread_id = $1 FOR SHARE`),
	}
}

// Acquire leases thread to holder for ttl, when nobody holds it or the
// holder's lease has expired; otherwise it returns ErrLeaseHeld. Each
// acquisition gets a new, greater fencing token.
func (s *Saver) Acquire(ctx context.Context, thread, holder string, ttl time.Duration) (Lease, error) {
	if err := s.checkReady(ctx); err != nil {
		return Lease{}, fmt.Errorf("postgres: lease thread %q: %w", thread, err)
	}
	l := Lease{Thread: thread, Holder: holder}
	err := s.pool.QueryRow(ctx, s.q.lease.acquire, thread, holder, ttl.Microseconds()).Scan(&l.Token, &l.Expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return Lease{}, fmt.Errorf("postgres: lease thread %q: %w", thread, ErrLeaseHeld)
	}
	if err != nil {
		return Lease{}, fmt.Errorf("postgres: lease thread %q: %w", thread, err)
	}
	return l, nil
}

// Renew extends l for ttl from now. A lease that has expired or been
// taken over cannot be renewed: the error wraps a
// *graph.CheckpointConflictError with the thread's current token.
func (s *Saver) Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	if err := s.checkReady(ctx); err != nil {
		return l, fmt.Errorf("postgres: renew the lease of thread %q: %w", l.Thread, err)
	}
	err := s.pool.QueryRow(ctx, s.q.lease.renew, l.Thread, l.Token, ttl.Microseconds()).Scan(&l.Expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return l, fmt.Errorf("postgres: renew the lease of thread %q: %w", l.Thread, s.fenced(ctx, s.pool, l))
	}
	if err != nil {
		return l, fmt.Errorf("postgres: renew the lease of thread %q: %w", l.Thread, err)
	}
	return l, nil
}

// Release ends l at once, so that another holder may acquire the thread
// without waiting for it to expire. Releasing a lease taken over does
// nothing.
func (s *Saver) Release(ctx context.Context, l Lease) error {
	if err := s.checkReady(ctx); err != nil {
		return fmt.Errorf("postgres: release the lease of thread %q: %w", l.Thread, err)
	}
	if _, err := s.pool.Exec(ctx, s.q.lease.release, l.Thread, l.Token); err != nil {
		return fmt.Errorf("postgres: release the lease of thread %q: %w", l.Thread, err)
	}
	return nil
}

// fenced returns the conflict of a write under l, which the thread's
// lease no longer has.
func (s *Saver) fenced(ctx context.Context, db dbtx, l Lease) error {
	var current int64
	err := db.QueryRow(ctx, s.q.lease.token, l.Thread).Scan(&current)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("read the thread's lease: %w", err)
	}
	if current == l.Token {
		// Same holder, but the lease lapsed before it was renewed.
		current = 0
	}
	return &graph.CheckpointConflictError{Thread: l.Thread, Token: l.Token, LeaseToken: current}
}

// Fenced returns a Saver that writes to l.Thread only while l's token is
// the thread's lease token: once another holder has acquired the thread,
// PutCheckpoint and PutTaskRecords store nothing and return an error
// wrapping a *graph.CheckpointConflictError with Token and LeaseToken set.
// A lease that has merely expired, with nobody taking it over, does not
// stop the writes. Reads and the other methods are the Saver's own.
func (s *Saver) Fenced(l Lease) graph.Saver {
	return &fencedSaver{Saver: s, lease: l}
}

// fencedSaver is a Saver whose writes check a lease's token in the same
// transaction.
type fencedSaver struct {
	*Saver
	lease Lease
}

func (f *fencedSaver) PutCheckpoint(ctx context.Context, cp graph.CheckpointRecord, blobs []graph.Blob) error {
	err := f.inFence(ctx, cp.Thread, func(tx pgx.Tx) error { return f.putCheckpoint(ctx, tx, cp, blobs) })
	if err != nil {
		return fmt.Errorf("postgres: put checkpoint %q of thread %q: %w", cp.ID, cp.Thread, err)
	}
	return nil
}

func (f *fencedSaver) PutTaskRecords(ctx context.Context, ref graph.CheckpointRef, recs []graph.TaskRecord) error {
	err := f.inFence(ctx, ref.Thread, func(tx pgx.Tx) error { return f.putTaskRecords(ctx, tx, ref, recs) })
	if err != nil {
		return fmt.Errorf("postgres: put task records of checkpoint %q of thread %q namespace %q: %w", ref.ID, ref.Thread, ref.NS, err)
	}
	return nil
}

// inFence runs write in a transaction that first checks, under the lease
// row's lock, that the lease still has f's token.
func (f *fencedSaver) inFence(ctx context.Context, thread string, write func(pgx.Tx) error) error {
	if thread != f.lease.Thread {
		return fmt.Errorf("the lease is on thread %q, not on this one", f.lease.Thread)
	}
	if err := f.checkReady(ctx); err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		var current int64
		err := tx.QueryRow(ctx, f.q.lease.token, thread).Scan(&current)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("read the thread's lease: %w", err)
		}
		if current != f.lease.Token {
			return &graph.CheckpointConflictError{Thread: thread, Token: f.lease.Token, LeaseToken: current}
		}
		return write(tx)
	})
}

// LeasesTable returns the quoted, schema-qualified name of the leases
// table (thread_id, holder, token, expires), for queries that join it,
// creating the schema if needed.
func (s *Saver) LeasesTable(ctx context.Context) (string, error) {
	schema, err := s.share.Init(ctx)
	if err != nil {
		return "", err
	}
	return schema + ".thread_leases", nil
}

// HeadsTable returns the quoted, schema-qualified name of the table of
// each thread namespace's newest checkpoint (thread_id, ns, ...: a row
// while the namespace has a checkpoint), for queries that read whether a
// thread has one, creating the schema if needed.
func (s *Saver) HeadsTable(ctx context.Context) (string, error) {
	schema, err := s.share.Init(ctx)
	if err != nil {
		return "", err
	}
	return schema + ".checkpoint_heads", nil
}
