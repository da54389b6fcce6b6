// Package sqlite is the embedded backend of the context store: one SQLite
// file, opened with the pure-Go driver modernc.org/sqlite (no cgo), in WAL
// mode so that reads run alongside a write.
//
//	s, err := sqlite.Open(ctx, "coorflow.db")
//	if err != nil { ... }
//	defer s.Close()
//	_, err = s.Add(ctx, "alice", "project/readme", "…", store.Attrs{})
//
// Open opens or creates the file (mode 0600, see internal/sqlitedb); New
// wraps a *sql.DB the caller opened and owns, which the checkpoint and
// trace backends can share.
//
// Writes are serialized: within a process by the database's one writer
// connection, which the backends on one *sql.DB take in turns; across
// processes by SQLite's write lock, taken at the start of each transaction
// (BEGIN IMMEDIATE) and waited for up to the busy timeout
// (WithBusyTimeout), so concurrent writers never see SQLITE_BUSY in normal
// operation.
//
// Open (or Migrate, or the first use of a Store from New) creates the
// tables when they are missing and brings tables of an older release up
// to date; it refuses a file of a newer release with ErrSchemaTooNew.
//
// Search compares terms with a lower-cased copy of each item's path and
// content, stored beside it, so case-insensitive matching covers all of
// Unicode, not only ASCII as SQLite's LIKE does.
package sqlite
