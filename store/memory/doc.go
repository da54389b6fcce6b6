// Package memory is an in-memory backend for the context store: nothing is
// persisted, so it suits tests, the offline demo and short-lived runs.
//
//	s := memory.New(store.Config{})
//	meta, err := s.Add(ctx, "alice", "project/readme", "…", store.Attrs{})
//
// It behaves exactly like the SQLite and Postgres backends (all three pass
// store/storetest). Writes are serialized by one lock; reads run in
// parallel with each other.
package memory
