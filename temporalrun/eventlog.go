package temporalrun

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coorflow/coorflow/internal/pgdb"
)

// EventLogConfig configures an EventLog.
type EventLogConfig struct {
	// Schema keeps the tables in this PostgreSQL schema (the saver's,
	// usually); "" is the connection's current schema.
	Schema string
	// MaxFrames and MaxBytes bound what a thread holds unread (default
	// 100,000 events, 64 MiB): beyond them a step's events are dropped,
	// counted, and the stream says how many at its end. MaxFrameBytes
	// bounds one event (default 1 MiB): a larger one travels without its
	// payload (writes, state, data), its error's messages shortened if it
	// is still larger.
	MaxFrames     int
	MaxBytes      int64
	MaxFrameBytes int
}

// Defaults of EventLogConfig.
const (
	DefaultMaxFrames     = 100_000
	DefaultMaxBytes      = 64 << 20
	DefaultMaxFrameBytes = 1 << 20
)

// EventLog carries the events of runs from the workers that run their
// steps to the callers that stream them, outside Temporal's history: a
// table of frames in PostgreSQL, per thread, numbered in the order they
// were stored, and a notification on each append. The caller deletes the
// frames it has read; a stream that starts deletes what an earlier one
// left; Prune deletes the frames of callers that went away.
type EventLog struct {
	pool     *pgxpool.Pool
	share    *pgdb.Share
	listener *pgdb.Listener
	cfg      EventLogConfig
	q        *logQueries
}

var errLogClosed = errors.New("temporalrun: event log closed")

// logMigrations[v-1] brings the tables from version v-1 to v. Append;
// never edit a released one.
var logMigrations = [][]string{{
	// One row per thread streamed: the number of its next frame, what it
	// holds unread, and what was dropped over the bounds.
	`CREATE TABLE {schema}.temporal_event_streams (
		thread     text COLLATE "C" PRIMARY KEY,
		next       bigint NOT NULL DEFAULT 1,
		held       bigint NOT NULL DEFAULT 0,
		held_bytes bigint NOT NULL DEFAULT 0,
		dropped    bigint NOT NULL DEFAULT 0,
		updated    timestamptz NOT NULL DEFAULT clock_timestamp()
	)`,
	`CREATE INDEX temporal_event_streams_updated ON {schema}.temporal_event_streams (updated)`,
	`CREATE TABLE {schema}.temporal_events (
		thread text COLLATE "C" NOT NULL,
		seq    bigint NOT NULL,
		frame  bytea NOT NULL,
		PRIMARY KEY (thread, seq)
	)`,
}, {
	// A thread's numbering starts at the microseconds since the epoch
	// when its row is made, not at 1: Prune may delete the row of a
	// stream whose reader is still waiting (a step quiet for longer than
	// the age), and the row the next append makes must number after what
	// that reader read (no thread stores a million frames a second).
	`ALTER TABLE {schema}.temporal_event_streams
		ALTER COLUMN next SET DEFAULT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint`,
}}

// ErrEventLogTooNew: the tables were made by a newer version.
var ErrEventLogTooNew = errors.New("temporalrun: event log schema is newer than this version supports")

// NewEventLog returns the event log on pool, which the caller owns. Start
// it before use; Close it after.
func NewEventLog(pool *pgxpool.Pool, cfg EventLogConfig) *EventLog {
	if cfg.MaxFrames <= 0 {
		cfg.MaxFrames = DefaultMaxFrames
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.MaxFrameBytes <= 0 {
		cfg.MaxFrameBytes = DefaultMaxFrameBytes
	}
	return &EventLog{pool: pool, cfg: cfg, listener: pgdb.NewListener(pool, time.Second),
		share: pgdb.NewShare(pool, pgdb.Backend{Schema: cfg.Schema, Closed: errLogClosed, Migrations: pgdb.Migrations{
			Lock: "coorflow/temporalrun:", Table: "temporal_events_schema", Steps: logMigrations, TooNew: ErrEventLogTooNew,
		}})}
}

// logQueries are the statements, with their tables qualified.
type logQueries struct {
	channel, fast, lock, insert, count, read, consume, begin, dropped, prune string
}

func newLogQueries(schema string) *logQueries {
	rep := strings.NewReplacer("{streams}", schema+".temporal_event_streams", "{events}", schema+".temporal_events")
	return &logQueries{
		channel: "coorflow_temporal_events:" + strings.Trim(schema, `"`),
		// The row lock orders the appends of a thread: a frame is
		// numbered after every frame committed before it, so a reader
		// never skips one committed late. fast appends a batch that fits
		// the bounds in one statement (no row: it does not fit, or the
		// thread has no stream yet); lock begins the general case.
		fast: rep.Replace(`WITH s AS (
				UPDATE {streams} SET next = next + $3, held = held + $3, held_bytes = held_bytes + $4, updated = clock_timestamp()
				WHERE thread = $1 AND held + $3 <= $5 AND held_bytes + $4 <= $6
				RETURNING next - $3 AS first
			), ins AS (
				INSERT INTO {events} (thread, seq, frame)
				SELECT $1, s.first + u.o - 1, u.f FROM s, unnest($2::bytea[]) WITH ORDINALITY AS u(f, o)
			)
			SELECT count(*) FROM (SELECT pg_notify($7, $1) FROM s) x`),
		lock: rep.Replace(`INSERT INTO {streams} AS s (thread) VALUES ($1)
			ON CONFLICT (thread) DO UPDATE SET updated = clock_timestamp()
			RETURNING s.next, s.held, s.held_bytes`),
		insert: rep.Replace(`INSERT INTO {events} (thread, seq, frame)
			SELECT $1, $2 + u.o - 1, u.f FROM unnest($3::bytea[]) WITH ORDINALITY AS u(f, o)`),
		count: rep.Replace(`UPDATE {streams} SET next = next + $2, held = held + $2, held_bytes = held_bytes + $3,
			dropped = dropped + $4 WHERE thread = $1`),
		read: rep.Replace(`SELECT seq, frame FROM {events} WHERE thread = $1 AND seq > $2 ORDER BY seq LIMIT $3`),
		consume: rep.Replace(`WITH d AS (DELETE FROM {events} WHERE thread = $1 AND seq <= $2 RETURNING length(frame) AS n)
			UPDATE {streams} SET held = held - (SELECT count(*) FROM d), held_bytes = held_bytes - (SELECT coalesce(sum(n), 0) FROM d)
			WHERE thread = $1`),
		begin: rep.Replace(`WITH d AS (DELETE FROM {events} WHERE thread = $1)
			INSERT INTO {streams} AS s (thread) VALUES ($1)
			ON CONFLICT (thread) DO UPDATE SET held = 0, held_bytes = 0, dropped = 0, updated = clock_timestamp()
			RETURNING s.next - 1`),
		dropped: rep.Replace(`SELECT dropped FROM {streams} WHERE thread = $1`),
		prune: rep.Replace(`WITH old AS (
				DELETE FROM {streams} WHERE thread IN (
					SELECT thread FROM {streams} WHERE updated < clock_timestamp() - $1 * interval '1 microsecond'
					LIMIT $2 FOR UPDATE SKIP LOCKED)
				RETURNING thread
			), ev AS (DELETE FROM {events} e USING old WHERE e.thread = old.thread)
			SELECT count(*) FROM old`),
	}
}

// Start creates or upgrades the tables and listens for appends, until
// Close.
func (l *EventLog) Start(ctx context.Context) error {
	schema, err := l.share.Init(ctx)
	if err != nil {
		return fmt.Errorf("temporalrun: event log: %w", err)
	}
	l.q = newLogQueries(schema)
	if err := l.listener.Start(ctx, l.q.channel); err != nil {
		return fmt.Errorf("temporalrun: event log: %w", err)
	}
	return nil
}

// Close stops listening. It does not close the pool.
func (l *EventLog) Close() error {
	l.listener.Close()
	l.share.Close()
	return nil
}

func (l *EventLog) queries() (*logQueries, error) {
	if l.q == nil {
		return nil, errors.New("temporalrun: the event log is not started (EventLog.Start)")
	}
	return l.q, nil
}

// append stores frames of thread after those stored before, within the
// bounds, and wakes its readers. It returns how many it dropped.
func (l *EventLog) append(ctx context.Context, thread string, frames [][]byte) (int, error) {
	q, err := l.queries()
	if err != nil {
		return 0, err
	}
	size := 0
	for _, f := range frames {
		size += len(f)
	}
	var fit int
	err = l.pool.QueryRow(ctx, q.fast, thread, frames, len(frames), size, l.cfg.MaxFrames, l.cfg.MaxBytes, q.channel).Scan(&fit)
	if err == nil && fit == 1 {
		return 0, nil
	}
	dropped := 0
	err = pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		var next, held, bytes int64
		if err := tx.QueryRow(ctx, q.lock, thread).Scan(&next, &held, &bytes); err != nil {
			return err
		}
		keep := frames[:0:0]
		var size int64
		for _, f := range frames {
			if held+int64(len(keep)) >= int64(l.cfg.MaxFrames) || bytes+size+int64(len(f)) > l.cfg.MaxBytes {
				dropped++
				continue
			}
			keep = append(keep, f)
			size += int64(len(f))
		}
		b := &pgx.Batch{}
		if len(keep) > 0 {
			b.Queue(q.insert, thread, next, keep)
		}
		b.Queue(q.count, thread, len(keep), size, dropped)
		b.Queue(`SELECT pg_notify($1, $2)`, q.channel, thread)
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return 0, fmt.Errorf("temporalrun: store %d events of thread %q: %w", len(frames), thread, err)
	}
	return dropped, nil
}

// logFrame is one stored frame.
type logFrame struct {
	seq  int64
	data []byte
}

// read returns up to limit frames of thread after seq after, in order.
func (l *EventLog) read(ctx context.Context, thread string, after int64, limit int) ([]logFrame, error) {
	q, err := l.queries()
	if err != nil {
		return nil, err
	}
	rows, err := l.pool.Query(ctx, q.read, thread, after, limit)
	if err == nil {
		var out []logFrame
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (logFrame, error) {
			var f logFrame
			return f, row.Scan(&f.seq, &f.data)
		})
		if err == nil {
			return out, nil
		}
	}
	return nil, fmt.Errorf("temporalrun: read the events of thread %q: %w", thread, err)
}

// consume deletes the frames of thread up to seq upTo, read.
func (l *EventLog) consume(ctx context.Context, thread string, upTo int64) error {
	q, err := l.queries()
	if err == nil {
		_, err = l.pool.Exec(ctx, q.consume, thread, upTo)
	}
	if err != nil {
		return fmt.Errorf("temporalrun: delete the events of thread %q read: %w", thread, err)
	}
	return nil
}

// begin starts a stream of thread: it deletes what earlier runs left and
// returns the number of the last frame stored.
func (l *EventLog) begin(ctx context.Context, thread string) (int64, error) {
	q, err := l.queries()
	var last int64
	if err == nil {
		err = l.pool.QueryRow(ctx, q.begin, thread).Scan(&last)
	}
	if err != nil {
		return 0, fmt.Errorf("temporalrun: start the events of thread %q: %w", thread, err)
	}
	return last, nil
}

// dropped returns how many events of thread were dropped over the bounds
// since its stream began.
func (l *EventLog) dropped(ctx context.Context, thread string) (int64, error) {
	q, err := l.queries()
	var n int64
	if err == nil {
		err = l.pool.QueryRow(ctx, q.dropped, thread).Scan(&n)
	}
	if err != nil {
		return 0, fmt.Errorf("temporalrun: events of thread %q: %w", thread, err)
	}
	return n, nil
}

// changed returns a channel closed at the next append to thread.
func (l *EventLog) changed(thread string) <-chan struct{} { return l.listener.Changed(thread) }

// pruneBatch is how many threads one statement of Prune deletes the
// events of (each holds at most MaxFrames).
const pruneBatch = 100

// Prune deletes the events of the threads nothing appended to or began
// streaming for age: those whose callers went away before reading them.
func (l *EventLog) Prune(ctx context.Context, age time.Duration) error {
	q, err := l.queries()
	for n := pruneBatch; err == nil && n == pruneBatch; {
		err = l.pool.QueryRow(ctx, q.prune, age.Microseconds(), pruneBatch).Scan(&n)
	}
	if err != nil {
		return fmt.Errorf("temporalrun: prune the event log: %w", err)
	}
	return nil
}
