package workflows_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/workflows"
)

// aliasedPrompt returns a file whose nodes alias one prompt of size
// bytes: small on disk, large once aliases expand.
func aliasedPrompt(nodes, size int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: coorflow/v1\nname: wf\nstate: {a: {type: string}}\nnodes:\n")
	fmt.Fprintf(&b, "  n0: {type: llm, output: a, prompt: &p %q}\n", strings.Repeat("x", size))
	for i := 1; i < nodes; i++ {
		fmt.Fprintf(&b, "  n%d: {type: llm, output: a, prompt: *p}\n", i)
	}
	b.WriteString("edges:\n  - {from: start, to: n0}\n")
	for i := 1; i < nodes; i++ {
		fmt.Fprintf(&b, "  - {from: n%d, to: n%d}\n", i-1, i)
	}
	fmt.Fprintf(&b, "  - {from: n%d, to: end}\n", nodes-1)
	return []byte(b.String())
}

// TestAliasesOfALongTextAreBoundedByBytes holds finding 7 of issue 26: a
// 1.1 MB file whose 1,000 nodes aliased one 1 MiB prompt took 16.7 s to
// validate, under the cap on aliased entries. Aliases may now add at most
// 4 MiB of text; the problem is at the alias that passed it.
func TestAliasesOfALongTextAreBoundedByBytes(t *testing.T) {
	data := aliasedPrompt(8, 1<<20)
	assert.Equal(t, []string{
		"w.yaml:10:38: nodes.n5.prompt: aliases expand the file by more than 4 MiB of text (this alias *p is where the limit was reached): " +
			"anchors and aliases may repeat entries, not multiply them; write the entries out or use fewer aliases",
	}, parseProblems(t, "w.yaml", data))

	start := time.Now()
	parseProblems(t, "w.yaml", aliasedPrompt(1000, 1<<20))
	t.Logf("the review's file (1,000 aliases of 1 MiB) is refused in %v", time.Since(start))
}

// TestAliasesOfAShortTextStillLoad: a prompt of a few KiB shared by a
// hundred nodes is what anchors are for.
func TestAliasesOfAShortTextStillLoad(t *testing.T) {
	_, err := workflows.Parse("w.yaml", aliasedPrompt(100, 4<<10))
	require.NoError(t, err)
}
