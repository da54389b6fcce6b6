// Package eventlog is the one event log of runs on PostgreSQL: the frames
// (server-sent events, recorded events) of each stream — a run's, keyed
// by the caller — stored in one table family (event_streams,
// event_frames) and read from any id on by any process. The replicas'
// run streams (server/replicas), Temporal's (temporalrun, keyed
// "temporal/" and the thread) and recordings' events (trace/postgres,
// keyed "trace/" and the run) are its streams.
//
// A stream is of one of two kinds, by how it is written:
//
//   - Owned: one writer at a time, fenced by a lease's token (Open,
//     Append), which numbers the frames itself, from 1. The replicas'.
//   - Shared: any number of writers in any processes (AppendShared); the
//     log numbers the frames in the order they are committed, under the
//     stream's row lock, so that a reader following the stream never
//     skips a frame committed late. A shared stream holds at most
//     Config.MaxHeld frames and MaxHeldBytes stored and not yet read:
//     the frames of a commit beyond them (each stream's first frames of
//     the commit are kept, up to the first that does not fit) are
//     dropped and counted (Dropped; their writers get ErrDropped once).
//     Its reader deletes what it read (Trim), Reset empties it for a new
//     reader with its numbering going on, and Prune deletes the shared
//     streams nothing was written to for an age. Temporal's.
//
// Writes are group commits: Append queues a frame and returns; one
// goroutine per Log commits the frames of every stream appended since its
// last commit in one round trip, at most Config.MaxDelay after the first
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
// A commit stores the frames of both kinds in one transaction and one
// round trip (one statement when it has no shared stream). A frame of an
// owned stream whose id is stored already is left as it is: a writer
// that retries stores its frames once. AppendAll queues frames that are
// committed together, all or none.
//
// The frames of an owned stream may be described (Frame.Meta, Path,
// Body: a recorded event's fields, node path and model call bodies).
// Select finds them by name and path, through an index of described
// frames alone, a page at a time (Query.Limit and MaxBytes: the database
// ends the page where the frames' bytes pass MaxBytes), and reads their
// bodies only when asked; Read, the page
// of a stream's reader, reads no bodies. A stream's owner deletes it
// with what it belongs to (a run; Tables), the stream's row before its
// frames, so that a commit under way is waited for and a later one
// stores nothing.
//
// Each commit notifies Config.Channel with the key of each stream it
// wrote, for readers that wait (pgdb.Listener).
package eventlog
