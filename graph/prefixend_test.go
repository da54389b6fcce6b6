package graph_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/coorflow/coorflow/graph"
)

func TestPrefixEndBoundsTheStringsOfAPrefix(t *testing.T) {
	for prefix, want := range map[string]string{
		"alice/": "alice0", "a": "b", "a\xff": "b", "\xff\xff": "", "": "", "al%2Fice/": "al%2Fice0",
	} {
		assert.Equal(t, want, graph.PrefixEnd(prefix), "%q", prefix)
	}
	end := graph.PrefixEnd("alice/")
	for _, id := range []string{"alice/", "alice/t", "alice/\xff\xff"} {
		assert.Less(t, id, end, id)
	}
	assert.GreaterOrEqual(t, "alicex/t", end)
}
