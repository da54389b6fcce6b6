package sqlitedb

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
)

// WAL checkpoints off the write path. A commit appends the pages it
// changed to the write-ahead log; a checkpoint copies them back into the
// database file and syncs both files, so that the log can start again
// from its beginning. SQLite runs one itself in the commit that takes the
// log past 1,000 frames (wal_autocheckpoint), holding the write lock:
// every writer of the database then waits for its fsyncs, milliseconds on
// a busy disk: a tenth to a third of the time of a run's steps, each of
// which stores a checkpoint (BenchmarkSaverChain100, sqlite/sync).
//
// So the writer connection's automatic checkpoint is set to walHardLimit,
// and a goroutine of the writer runs a PASSIVE checkpoint on another
// connection of the pool after each walFrames frames or so: writers go on
// appending to the log while it copies. Durability is unchanged: a commit
// is durable once it is in the log, as before, and a checkpoint
// interrupted by a crash is finished by the next one.
//
// The log starts again from its beginning only at a write that begins
// when every frame has been copied, which a checkpoint beside a stream of
// writes seldom leaves. So the log grows to walHardLimit frames, and there
// the writer's own checkpoint, with few frames left to copy but its
// fsyncs, lets it start again: writers wait for a checkpoint once per
// walHardLimit frames rather than once per walFrames. No checkpoint
// copies the frames after the snapshot of a reader still open: while one
// is, the log grows past walHardLimit, as it grew past 1,000 frames
// before, and starts again once the reader has ended.

const (
	// walFrames is how many frames the writes add to the log between
	// two background checkpoints: SQLite's own default.
	walFrames = 1000
	// walHardLimit is the writer connection's wal_autocheckpoint: the
	// size at which a commit checkpoints the log itself.
	walHardLimit = 10 * walFrames
	// maxWritesPerCheckpoint bounds how many writes wait for a checkpoint
	// when each writes few frames.
	maxWritesPerCheckpoint = 10_000
)

// walCheckpointer runs the background checkpoints of one database.
type walCheckpointer struct {
	db *sql.DB
	// every is how many writes go between two checkpoints, estimated from
	// how many frames the writes before the last one added.
	every  atomic.Int64
	writes atomic.Int64 // since the last checkpoint started
	frames int64        // in the log at the last checkpoint
	wake   chan struct{}
	// ctx ends at close: a checkpoint waiting for a connection of the
	// pool, which readers may hold until Close returns, gives up.
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup
	ran  func(error) // walCheckpointed when started
	// connLimit is the writer connection's wal_autocheckpoint before it
	// was set to walHardLimit, given back when the writer is released.
	connLimit int
}

// walCheckpointed, when set (by tests, before a writer starts), is called
// after each background checkpoint with its error.
var walCheckpointed func(error)

// startWALCheckpointer starts the background checkpoints of db; close
// ends them.
func startWALCheckpointer(db *sql.DB) *walCheckpointer {
	c := &walCheckpointer{db: db, wake: make(chan struct{}, 1), ran: walCheckpointed}
	c.ctx, c.stop = context.WithCancel(context.Background())
	c.every.Store(10) // soon, to learn how many frames a write adds
	c.wg.Go(c.loop)
	return c
}

// wrote counts a write of the writer connection and wakes the checkpoint
// when its turn has come. It does not wait.
func (c *walCheckpointer) wrote() {
	if c.writes.Add(1) < c.every.Load() {
		return
	}
	select {
	case c.wake <- struct{}{}:
	default: // woken already
	}
}

func (c *walCheckpointer) loop() {
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.wake:
		}
		writes := c.writes.Swap(0)
		err := c.checkpoint(writes)
		if c.ran != nil {
			c.ran(err)
		}
	}
}

// checkpoint copies what it can of the log into the database, without
// waiting for readers or writers, and sets the number of writes until the
// next one from the frames the last writes added. Failures are left to
// the next checkpoint, or to the writer's (walHardLimit).
func (c *walCheckpointer) checkpoint(writes int64) error {
	var busy, frames, copied int64
	err := c.db.QueryRowContext(c.ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied)
	if err != nil {
		return err
	}
	c.learn(writes, frames)
	return nil
}

// learn sets the number of writes until the next checkpoint from writes,
// those since the last one, and frames, the log's size now (-1 when
// another checkpoint held the log and it was not read: nothing to learn).
func (c *walCheckpointer) learn(writes, frames int64) {
	if frames < 0 {
		return
	}
	// frames counts the log from its start; it starts again only after
	// a complete checkpoint (see above).
	added := frames - c.frames
	if added < 0 {
		added = frames
	}
	c.frames = frames
	if writes > 0 && added > 0 {
		c.every.Store(min(max(writes*walFrames/added, 1), maxWritesPerCheckpoint))
	}
}

// close stops the background checkpoints, interrupting the one in
// progress.
func (c *walCheckpointer) close() {
	c.stop()
	c.wg.Wait()
}
