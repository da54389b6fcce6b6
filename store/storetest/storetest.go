package storetest

import (
	"testing"

	"github.com/coorflow/coorflow/store"
)

// Run runs the conformance suite against the stores open returns. open is
// called once per subtest and must return an empty store; it should
// register its own cleanup with t.Cleanup.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"AddAndGet", testAddAndGet},
		{"AddExisting", testAddExisting},
		{"LabelsAreCopied", testLabelsAreCopied},
		{"InvalidPaths", testInvalidPaths},
		{"InvalidInput", testInvalidInput},
		{"EditReplace", testEditReplace},
		{"EditSearchReplace", testEditSearchReplace},
		{"EditAttrs", testEditAttrs},
		{"StaleRevision", testStaleRevision},
		{"JSONMerge", testJSONMerge},
		{"JSONMergeBaseNoLongerKept", testJSONMergeBaseGone},
		{"Delete", testDelete},
		{"Read", testRead},
		{"ReadUTF8", testReadUTF8},
		{"List", testList},
		{"Search", testSearch},
		{"OwnerIsolation", testOwnerIsolation},
		{"ReadOnly", testReadOnly},
		{"BoundView", testBoundView},
		{"CanceledContext", testCanceledContext},
		{"ConcurrentAdds", testConcurrentAdds},
		{"ConcurrentTextEditors", testConcurrentTextEditors},
		{"ConcurrentJSONEditorsMerge", testConcurrentJSONMerge},
		{"ConcurrentJSONEditorsClash", testConcurrentJSONClash},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, open(t))
		})
	}
}
