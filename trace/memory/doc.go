// Package memory is a trace.Store that keeps recorded runs in the
// process's memory, for tests, examples and replays that need no
// durability. Like the other stores it keeps times to the microsecond, in
// UTC, and copies what it is given and what it returns.
package memory
