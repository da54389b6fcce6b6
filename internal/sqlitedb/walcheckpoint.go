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
// a slow disk, and a step of a run that stores a checkpoint each time
// pays about a sixth of its time for them.
//
// So the writer connection's automatic checkpoint is set to walHardLimit,
// far above what it reaches while this works, and a goroutine of the
// writer runs a PASSIVE checkpoint on another connection of the pool
// after each walFrames frames or so: writers go on appending to the log
// while it copies. Durability is unchanged: a commit is durable once it is
// in the log, as before, and a checkpoint interrupted by a crash is
// finished by the next one. If the log cannot be copied back (a reader
// holds an old snapshot) or this goroutine falls behind, the writer's own
// checkpoint at walHardLimit bounds the log as SQLite's default does.

const (
	// walFrames is how many frames the log holds before the background
	// checkpoint runs: SQLite's own default.
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
	kept   int64        // frames the log kept after the last checkpoint
	wake   chan struct{}
	stop   chan struct{}
	wg     sync.WaitGroup
	ran    func(error) // walCheckpointed when started
}

// walCheckpointed, when set (by tests, before a writer starts), is called
// after each background checkpoint with its error.
var walCheckpointed func(error)

// startWALCheckpointer starts the background checkpoints of db; close
// ends them.
func startWALCheckpointer(db *sql.DB) *walCheckpointer {
	c := &walCheckpointer{db: db, wake: make(chan struct{}, 1), stop: make(chan struct{}), ran: walCheckpointed}
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
		case <-c.stop:
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
	err := c.db.QueryRowContext(context.Background(), `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied)
	if err != nil {
		return err
	}
	// The log starts again at the first write after a complete
	// checkpoint; after one a reader kept from completing, it grows on.
	added := frames - c.kept
	if added <= 0 {
		added = frames
	}
	c.kept = 0
	if copied < frames {
		c.kept = frames
	}
	if writes > 0 && added > 0 {
		c.every.Store(min(max(writes*walFrames/added, 1), maxWritesPerCheckpoint))
	}
	return nil
}

// close stops the background checkpoints, after the one in progress.
func (c *walCheckpointer) close() {
	close(c.stop)
	c.wg.Wait()
}
