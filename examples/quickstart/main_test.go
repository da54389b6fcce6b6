package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQuickstartRunsAndReportsEveryAnswerInOrder(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(t.Context(), &out, "a and b and c"))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 6, out.String())
	assert.Contains(t, lines[0], "quickstart/plan")
	for i, want := range []string{"answer[0]", "answer[1]", "answer[2]"} {
		assert.Contains(t, strings.Join(lines[1:4], "\n"), "quickstart/"+want, i)
	}
	assert.Contains(t, lines[4], "quickstart/write")
	assert.Equal(t, "report: notes on a; notes on b; notes on c", lines[5])
}
