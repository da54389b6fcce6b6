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
// share: listing an unknown thread yields nothing rather than an error, task
// records of a checkpoint that does not exist are graph.ErrNotFound, storing
// a checkpoint id twice is an error, timestamps are kept to the microsecond.
package savertest
