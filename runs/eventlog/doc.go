// Package eventlog is the one event log of runs on PostgreSQL: the frames
// (server-sent events, recorded events) of each stream — a run's, keyed
// by the caller — numbered by their writer, stored in one table family
// (event_streams, event_frames) and read from any id on by any process.
//
// Writes are group commits: Append queues a frame and returns; one
// goroutine per Log commits the frames of every stream appended since its
// last commit in one statement, at most Config.MaxDelay after the first
// of them, sooner when Config.MaxBatch frames or Config.MaxBatchBytes are
// waiting or a writer calls Flush (at a checkpoint, at the end of a run).
// The frames waiting are bounded (Config.MaxPendingBytes): Append blocks
// beyond, so a slow database slows its writers rather than growing
// memory. Reads are paged by count and size (Read), so a reader holds at
// most a page.
//
// A stream is fenced: its writer opens it with a token (a lease's fencing
// token) and its appends are stored only while no writer opened it with a
// larger one, so a replica that lost its lease cannot add to the stream
// of the replica that took its run over (ErrFenced).
//
// Each commit notifies Config.Channel with the key of each stream it
// wrote, for readers that wait (pgdb.Listener).
package eventlog
