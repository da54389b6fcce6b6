// Package tracetest is the conformance suite of trace.Store: every backend
// (trace/memory, trace/sqlite, trace/postgres) runs it from its own tests.
//
//	func TestStore(t *testing.T) {
//		tracetest.Run(t, func(t *testing.T) trace.Store { return newStore(t) })
//	}
package tracetest
