package workflows_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/workflows"
)

// laughs returns a "billion laughs" file: levels lines, each a list of
// width aliases of the line before, so that it expands to width^levels
// entries.
func laughs(levels, width int) []byte {
	var b strings.Builder
	b.WriteString("l0: &l0 [lol]\n")
	for i := 1; i <= levels; i++ {
		items := make([]string, width)
		for j := range items {
			items[j] = fmt.Sprintf("*l%d", i-1)
		}
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.Join(items, ","))
	}
	return []byte(b.String())
}

// parseProblems parses data as the file path and returns the problems a
// user sees.
func parseProblems(t *testing.T, path string, data []byte, opts ...workflows.LoadOption) []string {
	t.Helper()
	_, err := workflows.Parse(path, data, opts...)
	require.ErrorIs(t, err, workflows.ErrInvalidFile)
	var fe *workflows.FileError
	require.True(t, errors.As(err, &fe), "%v", err)
	var out []string
	for _, p := range fe.Problems {
		out = append(out, p.String())
	}
	return out
}

// TestYAMLAliasCyclesAndAliasBombsAreProblemsAtTheAlias holds finding 2
// of issue 11: an alias cycle of 11 bytes ran out of memory and a
// "billion laughs" of a few hundred bytes took seconds to minutes; both
// are now a problem at the alias's line, found within the limits.
func TestYAMLAliasCyclesAndAliasBombsAreProblemsAtTheAlias(t *testing.T) {
	bomb444 := laughs(9, 9)
	bomb600 := laughs(9, 13)
	require.Less(t, len(bomb444), 450)
	require.Less(t, len(bomb600), 610)
	deep := []byte(strings.Repeat("[", 150) + strings.Repeat("]", 150) + "\n")
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"alias cycle", []byte("a: &a [*a]"),
			"w.yaml:1:8: a[0]: alias *a is inside the entry anchored &a (line 1) that it repeats, so it never ends: an alias can only repeat an entry that does not contain it"},
		{"alias cycle through a mapping", []byte("a: &m\n  b: {c: *m}\n"),
			"w.yaml:2:10: a.b.c: alias *m is inside the entry anchored &m (line 1) that it repeats, so it never ends: an alias can only repeat an entry that does not contain it"},
		{"billion laughs, 444 bytes", bomb444,
			"w.yaml:5:30: l4[5][3][0]: aliases expand the file by more than 10000 entries (this alias *l3 is where the limit was reached): anchors and aliases may repeat entries, not multiply them; write the entries out or use fewer aliases"},
		{"billion laughs, 600 bytes", bomb600,
			"w.yaml:5:14: l4[1][1][4][3][0]: aliases expand the file by more than 10000 entries (this alias *l3 is where the limit was reached): anchors and aliases may repeat entries, not multiply them; write the entries out or use fewer aliases"},
		{"deep nesting", deep,
			"w.yaml:1:102: [0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]: entries nest more than 100 levels deep: a workflow file does not need that many; flatten this entry"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, []string{c.want}, parseProblems(t, "w.yaml", c.data))
		})
	}
}

// TestAnAliasThatRepeatsAnEntryStillLoads shows that the limits leave
// ordinary anchors alone: a prompt written once and used twice.
func TestAnAliasThatRepeatsAnEntryStillLoads(t *testing.T) {
	src := `apiVersion: coorflow/v1
name: wf
state: {input: {type: string}, a: {type: string}, b: {type: string}}
nodes:
  first: {type: llm, prompt: &p "Summarize {{ state.input }}", output: a}
  second: {type: llm, prompt: *p, output: b}
edges:
  - {from: start, to: first}
  - {from: first, to: second}
  - {from: second, to: end}
`
	f, err := workflows.Parse("w.yaml", []byte(src))
	require.NoError(t, err)
	assert.Equal(t, []string{"first", "second"}, f.Nodes())
}

// BenchmarkLoadAliasBomb measures how long the 600-byte billion laughs,
// which never finished before, takes to be refused.
func BenchmarkLoadAliasBomb(b *testing.B) {
	data := laughs(9, 13)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := workflows.Parse("w.yaml", data); !errors.Is(err, workflows.ErrInvalidFile) {
			b.Fatalf("want ErrInvalidFile, got %v", err)
		}
	}
}
