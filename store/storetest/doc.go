// Package storetest is the conformance suite every context-store backend
// must pass. A backend's test calls Run with a function that opens a
// fresh, empty store for each subtest:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			return memory.New(store.Config{})
//		})
//	}
//
// The suite covers items, attributes and labels, path syntax, revisions
// and compare-and-swap, JSON merges, paged reads, listing, search, owner
// isolation, read-only and bound views, and concurrent writers.
package storetest
