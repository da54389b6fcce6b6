// Package enginetest runs the engine's durability scenarios against every
// saver: the memory, SQLite and PostgreSQL backends, a compiled graph
// resuming a thread another one started (as a new process would), a
// process killed with SIGKILL in the middle of a run, and two writers —
// two compiled graphs, or two real processes — on one thread, of which
// exactly one may advance it.
package enginetest_test
