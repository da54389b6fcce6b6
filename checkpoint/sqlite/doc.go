// Package sqlite is a graph.Saver that keeps checkpoints in a SQLite file,
// through the pure-Go driver modernc.org/sqlite (no cgo). It is the embedded
// default: one file per machine, durable across restarts.
//
// Open opens or creates the file (mode 0600) with write-ahead logging,
// synchronous=NORMAL (a commit survives a crash of the process; the last
// commits before a power loss may not), a busy timeout, foreign keys and
// 1 KiB pages (see internal/sqlitedb). The write-ahead log is copied back
// into the file in the background, so that no write waits for the fsyncs
// of a WAL checkpoint; a commit is as durable as before. New wraps a
// *sql.DB the caller opened and owns; the store and trace backends can
// share it.
//
// The tables (checkpoints, checkpoint_heads, checkpoint_blobs,
// checkpoint_tasks) are created on first use. A checkpoint's own small
// blobs (those whose version is its id: the engine's deltas) are kept in
// its row, so that a step of a run is one INSERT that writes three
// B-trees. checkpoint_schema records
// which migrations have been applied, and a file written by a newer version
// of this package is refused with ErrSchemaTooNew rather than misread. A
// row whose values are not of the types the schema declares (the file was
// edited by hand, or damaged) is reported as a corrupt row, never read as
// data.
//
// Writes are serialized: the backends on one *sql.DB write through one
// connection, and their writers take turns on it, in Go rather than by
// contending for SQLite's lock. Each write is one statement or one BEGIN
// IMMEDIATE transaction on it, so writers in other processes are waited
// for under the busy timeout and never fail a transaction half way with
// SQLITE_BUSY. PutCheckpoint checks, under that lock, that the namespace's
// newest checkpoint is the one its writer expects, so two processes on one
// file cannot both advance a thread from the same checkpoint. Reads use
// the other connections and proceed in parallel with the writer (WAL).
// Timestamps are kept to the microsecond, in UTC.
//
//	s, err := sqlite.Open(ctx, "coorflow.db")
//	if err != nil {
//		return err
//	}
//	defer s.Close()
package sqlite
