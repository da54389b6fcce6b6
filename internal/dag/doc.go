// Package dag runs the tasks of a dependency graph: each task once every
// task it depends on is done, the tasks ready at the same time
// concurrently, at most Options.Limit at once. The factory team runs a
// plan's steps with it; it knows nothing of plans, agents or the engine,
// so it is read and tested on its own.
//
// A task's error fails it: the tasks that depend on it, directly or not,
// are skipped and the independent ones go on; with Options.FailFast the
// first failure stops the run. Options.Classify may say instead that an
// error stops the run whatever FailFast says (Stop), or only pauses its
// task (Pause) — a task waiting on a person: its dependents wait, the
// others go on, and Run returns every pause together once nothing else
// can run.
//
// Run returns once every task it started has returned, so no goroutine
// outlives it; tasks must honour their context for a stopped or cancelled
// run to end promptly. Results come in the order of the tasks given, never
// in the order they finished.
package dag
