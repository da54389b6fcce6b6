package eventlog

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coorflow/coorflow/internal/pgdb"
)

// Config configures New.
type Config struct {
	// Schema keeps the tables in this PostgreSQL schema; "" is the
	// connection's current schema.
	Schema string
	// Channel is notified after each commit, once per stream written,
	// with the stream's key ("" is "coorflow_events:" and the schema).
	Channel string
	// MaxDelay bounds how long an appended frame waits for its commit
	// (default 2ms); MaxBatch and MaxBatchBytes bound one commit
	// (default 512 frames, 1 MiB; a larger frame is committed alone).
	MaxDelay      time.Duration
	MaxBatch      int
	MaxBatchBytes int
	// MaxPendingBytes bounds the frames waiting for a commit (default
	// 8 MiB): Append blocks beyond it until a commit makes room.
	MaxPendingBytes int
	// MaxHeld and MaxHeldBytes bound what a shared stream holds, stored
	// and not trimmed (default 100,000 frames, 64 MiB): the frames this
	// log commits beyond them are dropped and counted (Dropped). They are
	// the writer's bounds: each Log applies its own to what it appends.
	MaxHeld      int64
	MaxHeldBytes int64
	// Quiet: commits notify no one (a log whose streams nobody follows as
	// they are written: recordings).
	Quiet bool
}

// Defaults of Config.
const (
	DefaultMaxDelay        = 2 * time.Millisecond
	DefaultMaxBatch        = 512
	DefaultMaxBatchBytes   = 1 << 20
	DefaultMaxPendingBytes = 8 << 20
	DefaultMaxHeld         = 100_000
	DefaultMaxHeldBytes    = 64 << 20
)

// Frame is one event of a stream: its id (increasing; numbered by the
// writer of an owned stream, by the log in a shared one), its name and
// its bytes.
//
// A frame of an owned stream may be described: Meta (a JSON object) is
// what its writer knows of it, Path where in its run it comes from (a
// recorded event's node path), Body a large part of it. Described frames
// are found by name and path (Select), through an index that the other
// frames do not enter, and their bodies are read only when asked: Read
// returns no Path, Meta or Body, Select a Body when asked. Recordings'
// frames are described (trace/postgres); the streams' are not.
type Frame struct {
	ID   int64
	Name string
	Data []byte
	Path string
	Meta []byte
	Body []byte
}

// ErrFenced is the error of an append to a stream that another writer
// opened with a larger token since: the writer lost its lease.
var ErrFenced = errors.New("eventlog: the stream was opened by a writer with a newer token")

// ErrDropped is the error of appends to a shared stream that were dropped
// over its bounds (Config.MaxHeld, MaxHeldBytes): the other frames of
// their commit were stored.
var ErrDropped = errors.New("eventlog: frames dropped over the stream's bounds")

// ErrClosed is returned after Close.
var ErrClosed = errors.New("eventlog: closed")

// ErrSchemaTooNew: the tables were made by a newer version.
var ErrSchemaTooNew = errors.New("eventlog: schema is newer than this version supports")

// migrations[v-1] brings the tables from version v-1 to v. Append; never
// edit a released one.
var migrations = [][]string{{
	// One row per stream: the token of its writer, the id of its last
	// frame stored.
	`CREATE TABLE {schema}.event_streams (
		stream  text COLLATE "C" PRIMARY KEY,
		fence   bigint NOT NULL DEFAULT 0,
		last    bigint NOT NULL DEFAULT 0,
		updated timestamptz NOT NULL DEFAULT clock_timestamp()
	)`,
	`CREATE TABLE {schema}.event_frames (
		stream text COLLATE "C" NOT NULL,
		id     bigint NOT NULL,
		name   text NOT NULL,
		frame  bytea NOT NULL,
		PRIMARY KEY (stream, id)
	)`,
}, {
	// Shared streams: numbered by the log, bounded in what they hold
	// unread (held, held_bytes: stored and not trimmed), counting what
	// was dropped over the bounds, pruned by age.
	`ALTER TABLE {schema}.event_streams
		ADD COLUMN shared     boolean NOT NULL DEFAULT false,
		ADD COLUMN held       bigint NOT NULL DEFAULT 0,
		ADD COLUMN held_bytes bigint NOT NULL DEFAULT 0,
		ADD COLUMN dropped    bigint NOT NULL DEFAULT 0`,
	`CREATE INDEX event_streams_shared_updated ON {schema}.event_streams (updated) WHERE shared`,
}, {
	// Described frames (recordings' events): where in the run they come
	// from, what their writer knows of them, their large part apart from
	// what a page reads; found by name through an index of their own.
	`ALTER TABLE {schema}.event_frames
		ADD COLUMN path text COLLATE "C",
		ADD COLUMN meta jsonb,
		ADD COLUMN body bytea`,
	`CREATE INDEX event_frames_described ON {schema}.event_frames (stream, name, id) WHERE meta IS NOT NULL`,
}}

// Log is the event log on a pool. Create it with New, Start it, Close it.
type Log struct {
	pool  *pgxpool.Pool
	share *pgdb.Share
	cfg   Config
	q     *queries

	mu      sync.Mutex
	cond    *sync.Cond // a commit ended, or Close
	pending []pend     // appended, not committed, oldest first
	bytes   int        // of pending
	seq     uint64     // frames appended
	settled uint64     // frames committed or failed, in order
	errs    map[string]error
	closed  bool // Close was called: no more appends
	stopped bool // the commit loop ended: every append is settled

	kick, urgent chan struct{}
	stop         context.CancelFunc
	done         chan struct{}
}

// pend is one appended frame.
type pend struct {
	stream string
	shared bool // numbered by the log
	fence  int64
	frame  Frame
	seq    uint64
	group  uint64 // the seq of the first frame of its AppendAll; 0: none
}

// New returns the log on pool, which the caller owns. It does no I/O.
func New(pool *pgxpool.Pool, cfg Config) *Log {
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = DefaultMaxDelay
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	if cfg.MaxBatchBytes <= 0 {
		cfg.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if cfg.MaxPendingBytes <= 0 {
		cfg.MaxPendingBytes = DefaultMaxPendingBytes
	}
	if cfg.MaxHeld <= 0 {
		cfg.MaxHeld = DefaultMaxHeld
	}
	if cfg.MaxHeldBytes <= 0 {
		cfg.MaxHeldBytes = DefaultMaxHeldBytes
	}
	l := &Log{pool: pool, cfg: cfg, errs: map[string]error{},
		kick: make(chan struct{}, 1), urgent: make(chan struct{}, 1),
		share: pgdb.NewShare(pool, pgdb.Backend{Schema: cfg.Schema, Closed: ErrClosed, Migrations: pgdb.Migrations{
			Lock: "coorflow/eventlog:", Table: "event_log_schema", Steps: migrations, TooNew: ErrSchemaTooNew,
		}})}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// queries are the statements, with their tables qualified.
type queries struct {
	streams, frames                                   string
	channel, open, write, notify, read, last, deleted string
	// shared streams
	lockShared, writeShared, trim, reset, dropped, prune string
}

func newQueries(schema, channel string) *queries {
	streams, frames := schema+".event_streams", schema+".event_frames"
	if channel == "" {
		channel = "coorflow_events:" + strings.Trim(schema, `"`)
	}
	rep := strings.NewReplacer("{streams}", streams, "{frames}", frames)
	return &queries{
		streams: streams, frames: frames, channel: channel,
		// The row lock orders an open after the appends committed before
		// it; the appends after it with a smaller token find no row.
		open: rep.Replace(`INSERT INTO {streams} AS s (stream, fence) VALUES ($1, $2)
			ON CONFLICT (stream) DO UPDATE SET fence = greatest(s.fence, $2), updated = clock_timestamp()
			RETURNING s.last`),
		// One statement per commit, whatever the streams: each stream's
		// frames go in when its writer's token is still the newest.
		// A frame whose id its stream stored already is left as it is: an
		// append written again (a writer that retries) is stored once.
		write: rep.Replace(`WITH b AS (
				SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::bytea[], $6::text[], $7::jsonb[], $8::bytea[])
					AS b(stream, fence, id, name, frame, path, meta, body)
			), ok AS (
				UPDATE {streams} s SET last = greatest(s.last, m.last), updated = clock_timestamp()
				FROM (SELECT stream, max(fence) AS fence, max(id) AS last FROM b GROUP BY stream) m
				WHERE s.stream = m.stream AND s.fence <= m.fence
				RETURNING s.stream
			), ins AS (
				INSERT INTO {frames} (stream, id, name, frame, path, meta, body)
				SELECT b.stream, b.id, b.name, b.frame, b.path, b.meta, b.body FROM b JOIN ok USING (stream)
				ON CONFLICT (stream, id) DO NOTHING
			)
			SELECT stream FROM ok`),
		// The readers are told in a transaction of its own, after the
		// frames' commit: a NOTIFY holds a lock of the whole database
		// from before its commit to after, so a write that notified made
		// every other notifying commit wait for its WAL flush (no group
		// commit; about 12 ms a write under load, most of a run's time).
		// This one stores nothing, so it needs no flush: if PostgreSQL
		// crashes, its listeners reconnect and look again anyway.
		notify: `SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, s) FROM unnest($2::text[]) s`,
		// A page: at most $3 frames, and no more than $4 bytes but its
		// first frame.
		read: rep.Replace(`SELECT id, name, frame FROM (
				SELECT id, name, frame, sum(length(frame)) OVER (ORDER BY id) AS total, row_number() OVER (ORDER BY id) AS n
				FROM {frames} WHERE stream = $1 AND id > $2 ORDER BY id LIMIT $3
			) p WHERE total <= $4 OR n = 1 ORDER BY id`),
		last:    rep.Replace(`SELECT coalesce((SELECT last FROM {streams} WHERE stream = $1), 0)`),
		deleted: rep.Replace(`WITH f AS (DELETE FROM {frames} WHERE stream = ANY($1::text[])) DELETE FROM {streams} WHERE stream = ANY($1::text[])`),

		// A commit's shared streams are locked first (and made, numbered
		// from the microseconds since the epoch: see Reset), in the order
		// of their keys, so that logs committing at once wait for each
		// other instead of deadlocking; then writeShared, in the same
		// transaction, numbers each stream's frames after its last and
		// keeps those that fit its bounds: each stream's first frames,
		// up to the first that does not fit.
		lockShared: rep.Replace(`INSERT INTO {streams} AS s (stream, shared, last)
			SELECT k, true, ` + epochMicros + ` FROM unnest($1::text[]) k ORDER BY k
			ON CONFLICT (stream) DO UPDATE SET updated = clock_timestamp()`),
		writeShared: rep.Replace(`WITH b AS (
				SELECT b.stream, b.name, b.frame, s.last, s.held, s.held_bytes,
					row_number() OVER w AS n, sum(length(b.frame)) OVER w AS bytes
				FROM unnest($1::text[], $2::text[], $3::bytea[]) WITH ORDINALITY AS b(stream, name, frame, o)
				JOIN {streams} s USING (stream)
				WINDOW w AS (PARTITION BY b.stream ORDER BY b.o)
			), k AS (
				SELECT * FROM b WHERE held + n <= $4 AND held_bytes + bytes <= $5
			), ins AS (
				INSERT INTO {frames} (stream, id, name, frame) SELECT stream, last + n, name, frame FROM k
			), m AS (
				SELECT b.stream, count(*) AS total, count(k.n) AS kept, coalesce(sum(length(k.frame)), 0) AS kept_bytes
				FROM b LEFT JOIN k USING (stream, n) GROUP BY b.stream
			), upd AS (
				UPDATE {streams} s SET last = s.last + m.kept, held = s.held + m.kept, held_bytes = s.held_bytes + m.kept_bytes,
					dropped = s.dropped + m.total - m.kept, updated = clock_timestamp()
				FROM m WHERE s.stream = m.stream
			)
			SELECT stream, kept, total - kept FROM m`),
		trim: rep.Replace(`WITH d AS (DELETE FROM {frames} WHERE stream = $1 AND id <= $2 RETURNING length(frame) AS n)
			UPDATE {streams} SET held = held - (SELECT count(*) FROM d), held_bytes = held_bytes - (SELECT coalesce(sum(n), 0) FROM d)
			WHERE stream = $1 AND shared`),
		reset: rep.Replace(`WITH d AS (DELETE FROM {frames} WHERE stream = $1)
			INSERT INTO {streams} AS s (stream, shared, last) VALUES ($1, true, ` + epochMicros + `)
			ON CONFLICT (stream) DO UPDATE SET held = 0, held_bytes = 0, dropped = 0, updated = clock_timestamp()
			RETURNING s.last`),
		dropped: rep.Replace(`SELECT coalesce((SELECT dropped FROM {streams} WHERE stream = $1), 0)`),
		prune: rep.Replace(`WITH old AS (
				DELETE FROM {streams} WHERE stream IN (
					SELECT stream FROM {streams} WHERE shared AND updated < clock_timestamp() - $1 * interval '1 microsecond'
					LIMIT $2 FOR UPDATE SKIP LOCKED)
				RETURNING stream
			), f AS (DELETE FROM {frames} f USING old WHERE f.stream = old.stream)
			SELECT count(*) FROM old`),
	}
}

// epochMicros is where a shared stream's numbering starts: the
// microseconds since the epoch when its row is made.
const epochMicros = `(extract(epoch FROM clock_timestamp()) * 1000000)::bigint`

// Start creates or upgrades the tables and starts committing, until
// Close.
func (l *Log) Start(ctx context.Context) error {
	schema, err := l.share.Init(ctx)
	if err != nil {
		return fmt.Errorf("eventlog: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.q != nil {
		return nil
	}
	l.q = newQueries(schema, l.cfg.Channel)
	wctx, cancel := context.WithCancel(context.Background())
	l.stop, l.done = cancel, make(chan struct{})
	go l.commitLoop(wctx)
	return nil
}

// Close commits what was appended and stops. It does not close the pool.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	stop, done := l.stop, l.done
	l.stopped = stop == nil
	l.cond.Broadcast()
	l.mu.Unlock()
	if stop != nil {
		signal(l.urgent)
		<-done
		stop()
	}
	l.share.Close()
	return nil
}

// Tables returns the qualified names of the streams and frames tables,
// for statements of other packages on the same database that delete
// streams with what they belong to (a run); "" before Start.
func (l *Log) Tables() (streams, frames string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.q == nil {
		return "", ""
	}
	return l.q.streams, l.q.frames
}

func (l *Log) queries() (*queries, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.q == nil {
		return nil, errors.New("eventlog: the log is not started (Log.Start)")
	}
	return l.q, nil
}

// Open makes the caller the writer of stream with token fence (a lease's
// fencing token): from then on, appends with a smaller token are refused
// (ErrFenced). It returns the id of the stream's last frame stored, after
// which the caller numbers its frames.
func (l *Log) Open(ctx context.Context, stream string, fence int64) (int64, error) {
	q, err := l.queries()
	var last int64
	if err == nil {
		err = l.pool.QueryRow(ctx, q.open, stream, fence).Scan(&last)
	}
	if err != nil {
		return 0, fmt.Errorf("eventlog: open stream %q: %w", stream, err)
	}
	l.mu.Lock()
	delete(l.errs, stream)
	l.mu.Unlock()
	return last, nil
}

// Append queues frame f of stream, written under token fence, for the
// next commit. It blocks while Config.MaxPendingBytes are waiting. It
// returns the error of an earlier commit of the stream, once (ErrFenced
// for good): the frames of that commit were not stored.
func (l *Log) Append(stream string, fence int64, f Frame) error {
	return l.add(pend{stream: stream, fence: fence, frame: f})
}

// AppendShared queues a frame of the shared stream, named name, for the
// next commit, which numbers it after every frame of the stream stored
// before (by any log) and stores it if the stream holds less than the
// bounds (Config.MaxHeld, MaxHeldBytes). It blocks while
// Config.MaxPendingBytes are waiting. It returns the error of an earlier
// commit of the stream, once: ErrDropped when frames were dropped over
// the bounds, any other when the commit stored none. Unlike Append, it
// queues the frame even then: a shared stream's writers go on.
func (l *Log) AppendShared(stream, name string, data []byte) error {
	return l.add(pend{stream: stream, shared: true, frame: Frame{Name: name, Data: data}})
}

// Entry is a frame of an owned stream for AppendAll.
type Entry struct {
	Stream string
	Fence  int64
	Frame  Frame
}

// AppendAll queues frames of owned streams (see Append) to be committed
// together: all are stored or none is, but those of a stream fenced (or
// deleted) since, which are not. It blocks while Config.MaxPendingBytes
// are waiting (unless nothing is). It returns the error of an earlier
// commit of one of the streams, once, and then queues nothing.
func (l *Log) AppendAll(entries []Entry) error {
	if len(entries) == 0 {
		return nil
	}
	size := 0
	for i := range entries {
		size += len(entries[i].Frame.Data) + len(entries[i].Frame.Meta) + len(entries[i].Frame.Body)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		for _, e := range entries {
			if err := l.takeErr(e.Stream); err != nil {
				return err
			}
		}
		if l.closed || l.q == nil {
			return ErrClosed
		}
		if l.bytes == 0 || l.bytes+size <= l.cfg.MaxPendingBytes {
			break
		}
		signal(l.urgent)
		l.cond.Wait()
	}
	group := l.seq + 1
	for _, e := range entries {
		l.seq++
		l.pending = append(l.pending, pend{stream: e.Stream, fence: e.Fence, frame: e.Frame, seq: l.seq, group: group})
	}
	l.bytes += size
	l.wake()
	return nil
}

// add queues p; a frame of an owned stream is not queued after an error.
func (l *Log) add(p pend) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var prior error // of an earlier commit of a shared stream
	for {
		if err := l.takeErr(p.stream); err != nil {
			if !p.shared {
				return err
			}
			prior = cmp.Or(prior, err)
		}
		if l.closed || l.q == nil {
			return cmp.Or(prior, ErrClosed)
		}
		if l.bytes == 0 || l.bytes+p.size() <= l.cfg.MaxPendingBytes {
			break
		}
		signal(l.urgent)
		l.cond.Wait()
	}
	l.seq++
	p.seq = l.seq
	l.pending = append(l.pending, p)
	l.bytes += p.size()
	l.wake()
	return prior
}

// size is what p counts against the bounds of pending frames and of a
// commit.
func (p *pend) size() int { return len(p.frame.Data) + len(p.frame.Meta) + len(p.frame.Body) }

// wake tells the commit loop of frames appended: now when a batch is
// full. l.mu is held.
func (l *Log) wake() {
	if len(l.pending) >= l.cfg.MaxBatch || l.bytes >= l.cfg.MaxBatchBytes {
		signal(l.urgent)
	} else {
		signal(l.kick)
	}
}

// Flush waits until every frame appended before it is committed, and
// returns the error of a commit of the stream's frames (see Append).
func (l *Log) Flush(stream string) error {
	return l.FlushContext(context.Background(), stream)
}

// FlushContext is Flush, waiting no longer than ctx: when ctx ends
// first, it returns ctx's error, and the frames are committed later or
// not (a writer that appends them again stores them once).
func (l *Log) FlushContext(ctx context.Context, stream string) error {
	stop := context.AfterFunc(ctx, func() {
		l.mu.Lock()
		l.cond.Broadcast()
		l.mu.Unlock()
	})
	defer stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	target := l.seq
	for l.settled < target && !l.stopped {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("eventlog: flush stream %q: %w", stream, err)
		}
		signal(l.urgent)
		l.cond.Wait()
	}
	return l.takeErr(stream)
}

// Forget drops what the log keeps in memory of stream (its last error):
// its writer is done with it.
func (l *Log) Forget(stream string) {
	l.mu.Lock()
	delete(l.errs, stream)
	l.mu.Unlock()
}

// takeErr returns the stream's error; any but ErrFenced once. l.mu is
// held.
func (l *Log) takeErr(stream string) error {
	err := l.errs[stream]
	if err != nil && !errors.Is(err, ErrFenced) {
		delete(l.errs, stream)
	}
	return err
}

// signal wakes the commit loop without blocking.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// commitLoop commits the pending frames: MaxDelay after the first, or at
// once when asked (urgent), until Close, after which it commits what is
// left.
func (l *Log) commitLoop(ctx context.Context) {
	defer close(l.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-l.kick:
			timer.Reset(l.cfg.MaxDelay)
			select {
			case <-timer.C:
			case <-l.urgent:
				timer.Stop()
			}
		case <-l.urgent:
		}
		l.commitAll(ctx)
		l.mu.Lock()
		stopped := l.closed && len(l.pending) == 0
		if stopped {
			l.stopped = true
			l.cond.Broadcast()
		}
		l.mu.Unlock()
		if stopped {
			return
		}
	}
}

// commitAll commits batches until nothing is pending.
func (l *Log) commitAll(ctx context.Context) {
	for {
		l.mu.Lock()
		n, size := 0, 0
		for n < len(l.pending) && n < l.cfg.MaxBatch && (n == 0 || size+l.pending[n].size() <= l.cfg.MaxBatchBytes) {
			size += l.pending[n].size()
			n++
		}
		// The frames of one AppendAll commit together.
		for n > 0 && n < len(l.pending) && l.pending[n].group != 0 && l.pending[n].group == l.pending[n-1].group {
			size += l.pending[n].size()
			n++
		}
		batch := l.pending[:n:n]
		q := l.q
		l.mu.Unlock()
		if n == 0 {
			return
		}
		stored, dropped, err := l.write(ctx, q, batch)
		l.mu.Lock()
		for _, p := range batch {
			switch {
			case err != nil && p.shared:
				l.errs[p.stream] = fmt.Errorf("eventlog: store the frames of shared stream %q: %w", p.stream, err)
			case err != nil:
				l.errs[p.stream] = fmt.Errorf("eventlog: store frame %d of stream %q: %w", p.frame.ID, p.stream, err)
			case p.shared && dropped[p.stream] > 0 && l.errs[p.stream] == nil:
				l.errs[p.stream] = fmt.Errorf("eventlog: %d frames of stream %q: %w", dropped[p.stream], p.stream, ErrDropped)
			case !p.shared && !stored[p.stream]:
				l.errs[p.stream] = fmt.Errorf("eventlog: store frame %d of stream %q: %w", p.frame.ID, p.stream, ErrFenced)
			}
		}
		l.settled = batch[n-1].seq
		clear(l.pending[:n])
		l.pending = l.pending[n:]
		if len(l.pending) == 0 {
			l.pending = nil
		}
		l.bytes -= size
		l.cond.Broadcast()
		l.mu.Unlock()
		// The readers of the streams stored look once they are told,
		// after the commit (and after the flushes waiting for it); a
		// notification that fails is not a frame lost: the stream's next
		// commit, or its run's end, tells them.
		if len(stored) > 0 && !l.cfg.Quiet {
			_, _ = l.pool.Exec(ctx, q.notify, q.channel, slices.Collect(maps.Keys(stored)))
		}
	}
}

// write stores a batch in one transaction and returns the streams
// stored (an owned stream's frames all were, or none; a shared stream's
// some) and how many frames of each shared stream were dropped. A batch
// of owned streams alone is one statement.
func (l *Log) write(ctx context.Context, q *queries, batch []pend) (map[string]bool, map[string]int64, error) {
	var owned, shared []pend
	for _, p := range batch {
		if p.shared {
			shared = append(shared, p)
		} else {
			owned = append(owned, p)
		}
	}
	stored, dropped := map[string]bool{}, map[string]int64{}
	readOwned := func(rows pgx.Rows) error {
		var stream string
		_, err := pgx.ForEachRow(rows, []any{&stream}, func() error {
			stored[stream] = true
			return nil
		})
		return err
	}
	if len(shared) == 0 {
		rows, err := l.pool.Query(ctx, q.write, ownedArgs(owned)...)
		if err == nil {
			err = readOwned(rows)
		}
		return stored, dropped, err
	}
	b := &pgx.Batch{}
	streams, names := make([]string, len(shared)), make([]string, len(shared))
	frames := make([][]byte, len(shared))
	for i, p := range shared {
		streams[i], names[i], frames[i] = p.stream, p.frame.Name, p.frame.Data
	}
	keys := slices.Compact(slices.Sorted(slices.Values(streams)))
	b.Queue(q.lockShared, keys)
	b.Queue(q.writeShared, streams, names, frames, l.cfg.MaxHeld, l.cfg.MaxHeldBytes).Query(func(rows pgx.Rows) error {
		var stream string
		var kept, lost int64
		_, err := pgx.ForEachRow(rows, []any{&stream, &kept, &lost}, func() error {
			if kept > 0 {
				stored[stream] = true
			}
			if lost > 0 {
				dropped[stream] = lost
			}
			return nil
		})
		return err
	})
	if len(owned) > 0 {
		b.Queue(q.write, ownedArgs(owned)...).Query(readOwned)
	}
	// The statements of a batch are one transaction.
	if err := l.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, nil, err
	}
	return stored, dropped, nil
}

// ownedArgs are the arguments of the write of owned frames. A frame
// without Meta has no path, meta or body (NULL).
func ownedArgs(batch []pend) []any {
	streams, names := make([]string, len(batch)), make([]string, len(batch))
	fences, ids := make([]int64, len(batch)), make([]int64, len(batch))
	frames, metas, bodies := make([][]byte, len(batch)), make([][]byte, len(batch)), make([][]byte, len(batch))
	paths := make([]*string, len(batch))
	for i, p := range batch {
		f := &batch[i].frame
		streams[i], fences[i], ids[i], names[i], frames[i] = p.stream, p.fence, f.ID, f.Name, notNil(f.Data)
		if f.Meta != nil {
			paths[i], metas[i], bodies[i] = &f.Path, f.Meta, f.Body
		}
	}
	return []any{streams, fences, ids, names, frames, paths, metas, bodies}
}

// notNil is b, or no bytes rather than NULL.
func notNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// Read returns the frames of stream after id after, in order: at most
// limit, and no more than maxBytes of them but the first.
func (l *Log) Read(ctx context.Context, stream string, after int64, limit, maxBytes int) ([]Frame, error) {
	q, err := l.queries()
	if err != nil {
		return nil, err
	}
	rows, err := l.pool.Query(ctx, q.read, stream, after, limit, maxBytes)
	if err == nil {
		var out []Frame
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Frame, error) {
			var f Frame
			return f, row.Scan(&f.ID, &f.Name, &f.Data)
		})
		if err == nil {
			return out, nil
		}
	}
	return nil, fmt.Errorf("eventlog: read stream %q: %w", stream, err)
}

// Query selects described frames of a stream (see Frame); zero fields
// select them all.
type Query struct {
	// After and Until bound the ids: After < ID <= Until (Until 0: no
	// bound).
	After, Until int64
	// Names keeps the frames of these names only.
	Names []string
	// Path keeps the frames whose path is Path or lies below it ("a/b/c"
	// lies below "a/b", "a/bc" does not).
	Path string
	// Limit caps the frames returned (0: no cap).
	Limit int
	// MaxBytes caps the bytes of the frames returned, their data and
	// the bodies read counted: no more than MaxBytes of them but the
	// first (0: no cap). With a Limit, the database reads no further
	// than Limit frames to find where the bytes end.
	MaxBytes int64
	// Bodies reads their bodies too.
	Bodies bool
}

// Select returns the described frames of stream that q selects, in
// order, with their Path and Meta, and their Body when q asks: the
// frames it does not select, and the bodies it does not ask for, are
// not read from the database.
func (l *Log) Select(ctx context.Context, stream string, q Query) ([]Frame, error) {
	qs, err := l.queries()
	if err != nil {
		return nil, err
	}
	query, args := qs.selectFrames(stream, q)
	rows, err := l.pool.Query(ctx, query, args...)
	if err == nil {
		var out []Frame
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Frame, error) {
			var f Frame
			return f, row.Scan(&f.ID, &f.Name, &f.Data, &f.Path, &f.Meta, &f.Body)
		})
		if err == nil {
			return out, nil
		}
	}
	return nil, fmt.Errorf("eventlog: select frames of stream %q: %w", stream, err)
}

// maxUnionNames is how many names a Select with a Limit reads each from
// the index of described frames, no further than the Limit each (see
// selectFrames).
const maxUnionNames = 8

// selectFrames is the statement of Select and its arguments.
func (qs *queries) selectFrames(stream string, q Query) (string, []any) {
	args := []any{stream, q.After}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	body, size := `NULL::bytea`, `length(frame)`
	if q.Bodies {
		body, size = `body`, `length(frame) + coalesce(length(body), 0)`
	}
	// "meta IS NOT NULL" lets the planner use the index of described
	// frames; the statement is built for the filters q sets, so that
	// each has its plan.
	where := ` WHERE stream = $1 AND meta IS NOT NULL AND id > $2`
	if q.Until > 0 {
		where += ` AND id <= ` + arg(q.Until)
	}
	if q.Path != "" {
		where += ` AND (path = ` + arg(q.Path) + ` OR starts_with(path, ` + arg(q.Path+"/") + `))`
	}
	limit := ""
	if q.Limit > 0 {
		limit = ` LIMIT ` + arg(q.Limit)
	}
	from := ` FROM ` + qs.frames
	switch n := len(q.Names); {
	case n == 0:
		from += where
	case n == 1:
		// One name is an equality: the index of described frames gives
		// them by id, and the page reads no further than its Limit (a
		// list, = ANY, is read whole and sorted, for every page; so for
		// many names, whose frames are most of a stream's, the primary
		// key is read in order instead).
		from += where + ` AND name = ` + arg(q.Names[0])
	case q.Limit > 0 && n <= maxUnionNames:
		// A few names: each read by id from the index, no further than
		// the Limit, and merged.
		var each []string
		for _, name := range q.Names {
			each = append(each, `(SELECT id, name, frame, path, meta, `+body+` AS body FROM `+qs.frames+where+
				` AND name = `+arg(name)+` ORDER BY id`+limit+`)`)
		}
		from = ` FROM (` + strings.Join(each, ` UNION ALL `) + `) f`
	default:
		from += where + ` AND name = ANY(` + arg(q.Names) + `)`
	}
	query := `SELECT id, name, frame, path, meta, ` + body
	if q.MaxBytes > 0 {
		// The running sum of the bytes, by id, ends the page (length
		// reads a stored value's size, not the value).
		query += `, sum(` + size + `) OVER (ORDER BY id) AS total, row_number() OVER (ORDER BY id) AS n`
	}
	query += from + ` ORDER BY id` + limit
	if q.MaxBytes > 0 {
		query = `SELECT id, name, frame, path, meta, ` + body + ` FROM (` + query + `) p WHERE total <= ` +
			arg(q.MaxBytes) + ` OR n = 1 ORDER BY id`
	}
	return query, args
}

// Last returns the id of the last frame of stream stored (0: none).
func (l *Log) Last(ctx context.Context, stream string) (int64, error) {
	q, err := l.queries()
	var last int64
	if err == nil {
		err = l.pool.QueryRow(ctx, q.last, stream).Scan(&last)
	}
	if err != nil {
		return 0, fmt.Errorf("eventlog: stream %q: %w", stream, err)
	}
	return last, nil
}

// Delete forgets streams, with their frames.
func (l *Log) Delete(ctx context.Context, streams ...string) error {
	q, err := l.queries()
	if err == nil {
		_, err = l.pool.Exec(ctx, q.deleted, streams)
	}
	if err != nil {
		return fmt.Errorf("eventlog: delete %d streams: %w", len(streams), err)
	}
	return nil
}

// Channel is the channel each commit notifies, once per stream written,
// with the stream's key; "" before Start.
func (l *Log) Channel() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.q == nil {
		return ""
	}
	return l.q.channel
}

// Trim deletes the frames of shared stream up to id upTo, which its
// reader has read: they no longer count against its bounds.
func (l *Log) Trim(ctx context.Context, stream string, upTo int64) error {
	q, err := l.queries()
	if err == nil {
		_, err = l.pool.Exec(ctx, q.trim, stream, upTo)
	}
	if err != nil {
		return fmt.Errorf("eventlog: trim stream %q: %w", stream, err)
	}
	return nil
}

// Reset empties shared stream for a new reader, making it if need be,
// and returns the id of its last frame stored, after which its frames
// are numbered: what earlier readers left is deleted, the count of
// dropped frames starts again, the numbering goes on. A stream made anew
// (first, or after Prune deleted it while its reader waited) numbers its
// frames from the microseconds since the epoch, after what that reader
// read (no stream stores a million frames a second).
func (l *Log) Reset(ctx context.Context, stream string) (int64, error) {
	q, err := l.queries()
	var last int64
	if err == nil {
		err = l.pool.QueryRow(ctx, q.reset, stream).Scan(&last)
	}
	if err != nil {
		return 0, fmt.Errorf("eventlog: reset stream %q: %w", stream, err)
	}
	return last, nil
}

// Dropped returns how many frames of shared stream were dropped over the
// bounds since its last Reset.
func (l *Log) Dropped(ctx context.Context, stream string) (int64, error) {
	q, err := l.queries()
	var n int64
	if err == nil {
		err = l.pool.QueryRow(ctx, q.dropped, stream).Scan(&n)
	}
	if err != nil {
		return 0, fmt.Errorf("eventlog: stream %q: %w", stream, err)
	}
	return n, nil
}

// PruneBatch is how many streams one statement of Prune deletes.
const PruneBatch = 100

// Prune deletes the shared streams, with their frames, that nothing was
// written to or Reset for age (their readers went away), PruneBatch at a
// time, and returns how many. Owned streams are their owners' to delete
// (Delete).
func (l *Log) Prune(ctx context.Context, age time.Duration) (int, error) {
	q, err := l.queries()
	if err != nil {
		return 0, fmt.Errorf("eventlog: prune: %w", err)
	}
	total := 0
	for {
		var n int
		if err := l.pool.QueryRow(ctx, q.prune, age.Microseconds(), PruneBatch).Scan(&n); err != nil {
			return total, fmt.Errorf("eventlog: prune: %w", err)
		}
		total += n
		if n < PruneBatch {
			return total, nil
		}
	}
}
