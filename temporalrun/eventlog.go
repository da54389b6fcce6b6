package temporalrun

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coorflow/coorflow/internal/pgdb"
	"github.com/coorflow/coorflow/runs/eventlog"
)

// EventLogConfig configures an EventLog.
type EventLogConfig struct {
	// Schema keeps the tables in this PostgreSQL schema (the saver's,
	// usually); "" is the connection's current schema.
	Schema string
	// MaxFrames and MaxBytes bound what a thread holds unread (default
	// 100,000 events, 64 MiB): the events appended beyond them are dropped,
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
// steps to the callers that stream them, outside Temporal's history: each
// thread's events are a shared stream of the runs' event log
// (runs/eventlog, in the same schema), which numbers them in the order
// they are committed, whatever worker appends them, and notifies each
// commit. The caller deletes the frames it has read (Trim); a stream that
// starts deletes what an earlier one left (Reset); Prune deletes the
// frames of callers that went away.
type EventLog struct {
	log      *eventlog.Log
	share    *pgdb.Share // the tables of the versions before the event log
	listener *pgdb.Listener
	cfg      EventLogConfig
	started  bool
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
}, {
	// The threads' events move to the runs' event log (runs/eventlog,
	// whose tables in this schema are made first), each thread's a shared
	// stream keyed "temporal/" and the thread, numbered as before, and
	// their tables go: the event log is the one table family of the runs'
	// events.
	`INSERT INTO {schema}.event_streams AS s (stream, shared, last, held, held_bytes, dropped, updated)
		SELECT 'temporal/' || thread, true, next - 1, held, held_bytes, dropped, updated FROM {schema}.temporal_event_streams
		ON CONFLICT (stream) DO NOTHING`,
	`INSERT INTO {schema}.event_frames (stream, id, name, frame)
		SELECT 'temporal/' || thread, seq, '', frame FROM {schema}.temporal_events
		ON CONFLICT DO NOTHING`,
	`DROP TABLE {schema}.temporal_events`,
	`DROP TABLE {schema}.temporal_event_streams`,
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
	return &EventLog{cfg: cfg, listener: pgdb.NewListener(pool, time.Second),
		log: eventlog.New(pool, eventlog.Config{Schema: cfg.Schema, MaxHeld: int64(cfg.MaxFrames), MaxHeldBytes: cfg.MaxBytes}),
		share: pgdb.NewShare(pool, pgdb.Backend{Schema: cfg.Schema, Closed: errLogClosed, Migrations: pgdb.Migrations{
			Lock: "coorflow/temporalrun:", Table: "temporal_events_schema", Steps: logMigrations, TooNew: ErrEventLogTooNew,
		}})}
}

// Start creates or upgrades the tables and listens for appends, until
// Close.
func (l *EventLog) Start(ctx context.Context) error {
	err := l.log.Start(ctx)
	if err == nil {
		_, err = l.share.Init(ctx)
	}
	if err == nil {
		err = l.listener.Start(ctx, l.log.Channel())
	}
	if err != nil {
		_ = l.log.Close()
		return fmt.Errorf("temporalrun: event log: %w", err)
	}
	l.started = true
	return nil
}

// Close stores what was appended and stops listening. It does not close
// the pool.
func (l *EventLog) Close() error {
	err := l.log.Close()
	l.listener.Close()
	l.share.Close()
	return err
}

// key is the stream of thread's events in the event log.
func key(thread string) string { return "temporal/" + thread }

// errNotStarted says what is missing.
var errNotStarted = errors.New("temporalrun: the event log is not started (EventLog.Start)")

// add queues a frame of thread for the log's next commit (a group
// commit of the frames of every step of this process). It blocks while
// the log holds too many waiting; it returns the error of an earlier
// commit of the thread's frames, once (eventlog.ErrDropped: some were
// dropped over the bounds).
func (l *EventLog) add(thread string, data []byte) error {
	if !l.started {
		return errNotStarted
	}
	return l.log.AppendShared(key(thread), "", data)
}

// flush waits until the frames of thread added before are stored, and
// returns the error of their commit (see add).
func (l *EventLog) flush(thread string) error {
	if !l.started {
		return errNotStarted
	}
	return l.log.Flush(key(thread))
}

// readPage and readPageBytes bound what a stream reads from the log at
// a time, and so what it holds: a page of at most readPage events and
// readPageBytes (or one event, up to MaxFrameBytes).
const (
	readPage      = 512
	readPageBytes = 1 << 20
)

// read returns the next page of frames of thread after id after, in
// order.
func (l *EventLog) read(ctx context.Context, thread string, after int64) ([]eventlog.Frame, error) {
	if !l.started {
		return nil, errNotStarted
	}
	frames, err := l.log.Read(ctx, key(thread), after, readPage, readPageBytes)
	if err != nil {
		return nil, fmt.Errorf("temporalrun: read the events of thread %q: %w", thread, err)
	}
	return frames, nil
}

// consume deletes the frames of thread up to id upTo, read.
func (l *EventLog) consume(ctx context.Context, thread string, upTo int64) error {
	err := errNotStarted
	if l.started {
		err = l.log.Trim(ctx, key(thread), upTo)
	}
	if err != nil {
		return fmt.Errorf("temporalrun: delete the events of thread %q read: %w", thread, err)
	}
	return nil
}

// begin starts a stream of thread: it deletes what earlier runs left and
// returns the id of the last frame stored.
func (l *EventLog) begin(ctx context.Context, thread string) (int64, error) {
	var last int64
	err := errNotStarted
	if l.started {
		last, err = l.log.Reset(ctx, key(thread))
	}
	if err != nil {
		return 0, fmt.Errorf("temporalrun: start the events of thread %q: %w", thread, err)
	}
	return last, nil
}

// dropped returns how many events of thread were dropped over the bounds
// since its stream began.
func (l *EventLog) dropped(ctx context.Context, thread string) (int64, error) {
	var n int64
	err := errNotStarted
	if l.started {
		n, err = l.log.Dropped(ctx, key(thread))
	}
	if err != nil {
		return 0, fmt.Errorf("temporalrun: events of thread %q: %w", thread, err)
	}
	return n, nil
}

// changed returns a channel closed at the next commit of frames of
// thread.
func (l *EventLog) changed(thread string) <-chan struct{} { return l.listener.Changed(key(thread)) }

// Prune deletes the events of the threads nothing appended to or began
// streaming for age: those whose callers went away before reading them
// (eventlog.Log.Prune, a batch of threads at a time).
func (l *EventLog) Prune(ctx context.Context, age time.Duration) error {
	err := errNotStarted
	if l.started {
		_, err = l.log.Prune(ctx, age)
	}
	if err != nil {
		return fmt.Errorf("temporalrun: prune the event log: %w", err)
	}
	return nil
}
