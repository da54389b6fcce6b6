// Package enginetest runs the engine's durability scenarios against every
// saver: the memory, SQLite and PostgreSQL backends, a compiled graph
// resuming a thread another one started (as a new process would), and a
// process killed with SIGKILL in the middle of a run.
package enginetest_test
