// Package sqlitedb is what the SQLite backends (checkpoint/sqlite,
// store/sqlite, trace/sqlite) share: opening a file with coorflow's
// pragmas, and the one writer connection every backend on a database
// writes through, in turns.
//
// Open creates the file and its directory when they are missing (the file
// 0600, the directory 0700: SQLite gives its -wal and -shm files the mode
// of the database file) and returns a *sql.DB whose connections use
// write-ahead logging, synchronous=NORMAL, a busy timeout, foreign keys
// and, for new files, 1 KiB pages.
//
// A backend keeps a Share of the database. The Shares of one *sql.DB use
// one writer: one connection, taken by one goroutine at a time, through a
// lock that honours contexts. So a checkpoint saver, a store and a trace
// store on one handle queue for each other in Go rather than in SQLite's
// busy handler; processes, each with its own handle, still meet in
// SQLite's lock, waited for under the busy timeout. The writer's WAL
// checkpoints run in the background, off its lock (walcheckpoint.go).
package sqlitedb
