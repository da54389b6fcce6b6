// Package savertest is the conformance suite every graph.Saver must pass,
// and the benchmarks every backend reports.
//
// A backend's test calls Run with a function that returns a fresh, empty
// Saver for each subtest:
//
//	func TestSaver(t *testing.T) {
//		savertest.Run(t, func(t *testing.T) graph.Saver {
//			s, err := mybackend.Open(t.Context(), filepath.Join(t.TempDir(), "cp.db"))
//			require.NoError(t, err)
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// Each subtest checks one rule of the contract and is named for it. Where
// graph.Saver leaves a behaviour open, the suite fixes the one all backends
// share:
//
//   - storing a checkpoint id that exists in the thread and namespace is an
//     error, and the first checkpoint is kept;
//   - PutCheckpoint is a compare-and-swap on the newest checkpoint of each
//     (thread, namespace): of concurrent writers after the same one,
//     exactly one stores its checkpoint and the others get a
//     *graph.CheckpointConflictError, storing nothing; a fork that names
//     the newest checkpoint in Head is stored; a thread deleted meanwhile
//     is not brought back;
//   - ListCheckpoints of an unknown thread or namespace is empty, not an
//     error; ListOptions.Before naming no checkpoint there is
//     graph.ErrNotFound;
//   - PutTaskRecords and TaskRecords of a checkpoint that does not exist are
//     graph.ErrNotFound; records are ordered bytewise;
//   - Threads orders threads by their last stored checkpoint, counts the
//     checkpoints of every namespace, and reports as Created and Updated
//     the earliest and latest checkpoint timestamps;
//   - timestamps are kept to the microsecond; empty and nil byte slices
//     both read back empty.
//
// BenchPutCheckpoint and BenchPutTaskRecords are the benchmarks every
// backend runs, on the step size the engine writes most (SmallStep).
package savertest
