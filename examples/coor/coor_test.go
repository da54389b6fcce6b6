// Package coor_test runs examples/coor offline, on its demo script, and
// checks what the example shows: the planner defines two agents, the
// factory builds them concurrently, independent steps run at the same
// time, and the reporter writes the report.
package coor_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/clitest"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/workflows"
)

func TestTheCoorExampleRunsOfflineFromRequestToReport(t *testing.T) {
	f, err := workflows.Load("workflow.yaml")
	require.NoError(t, err)
	ms, err := f.Resolve(t.Context(), workflows.ModelOptions{Getenv: func(string) string { return "" }})
	require.NoError(t, err)
	require.True(t, ms.Demo, "no provider: the demo script")
	r, err := f.Compile(t.Context(), workflows.Env{Models: ms.Models, Getenv: func(string) string { return "" },
		Graph: []graph.Option{graph.WithSaver(memory.New())}})
	require.NoError(t, err)

	var created []string
	var final graph.State
	for ev, err := range r.Stream(t.Context(), graph.Input(nodes.Input.Set("Compare SQLite and PostgreSQL")), graph.Thread("t1")) {
		require.NoError(t, err)
		if a, ok := ev.Data.(agentevent.Created); ok {
			created = append(created, a.Agent)
		}
		if ev.Kind == graph.EventRunEnd {
			final = ev.State
		}
	}
	assert.ElementsMatch(t, []string{"sqlite_analyst", "postgres_analyst"}, created)
	pl := nodes.PlanKey.Get(final)
	require.Len(t, pl.Steps, 3)
	for _, s := range pl.Steps {
		assert.Equal(t, plan.StepDone, s.Result.Status, s.ID)
	}
	assert.True(t, strings.HasPrefix(nodes.Answer.Get(final), "# SQLite or PostgreSQL for an embedded agent engine"))

	model := ms.Models
	require.NotNil(t, model)
	demo, err := model.Model("basic")
	require.NoError(t, err)
	script := demo.(*workflows.DemoModel).Thread("t1")
	assert.GreaterOrEqual(t, script.MaxInFlight(), 2, "builds and independent steps ran concurrently")
	assert.Empty(t, script.Remaining(), "every scripted answer was used")
	s3 := script.CallsFor("researcher")[0].Prompt()
	assert.Contains(t, s3, "SQLite fits one machine well", "s3 got s1's result")
	assert.Contains(t, s3, "PostgreSQL fits several machines", "s3 got s2's result")
	assert.NotContains(t, script.CallsFor("sqlite_analyst")[0].Prompt(), "PostgreSQL fits", "s1 does not see s2")
}

var runID = regexp.MustCompile(`(?m)^run (r-[0-9a-f]+) recorded`)

// TestTheCoorExampleAnswersTheRequestItGot runs the example from the
// command line on two requests: the README's gets the scripted report,
// any other request a report about itself (the reactive demo model), and
// so does a file exported from the README's run given a new question.
func TestTheCoorExampleAnswersTheRequestItGot(t *testing.T) {
	cli := clitest.New(t, "../..")

	code, out, stderr := cli.Run("run", "examples/coor", "--input", "Compare Redis and Memcached for a session cache")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "running offline on the scripted demo model examples/coor/demo.yaml (written for requests naming SQLite and PostgreSQL; "+
		"the reactive demo model answers any other request from what it asks)")
	assert.Contains(t, out, "\n# Compare Redis and Memcached for a session cache\n")
	assert.Contains(t, out, "**Your request:** Compare Redis and Memcached for a session cache")
	assert.NotContains(t, out, "SQLite")
	assert.NotContains(t, out, "PostgreSQL")

	code, out, stderr = cli.Run("run", "examples/coor", "--input", "Compare SQLite and PostgreSQL for an embedded agent engine")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "\n# SQLite or PostgreSQL for an embedded agent engine\n")
	assert.Contains(t, out, "**Recommendation:** use SQLite by default")
	assert.NotContains(t, out, "Redis")
	m := runID.FindStringSubmatch(out)
	require.NotNil(t, m, out)

	prod := filepath.Join(t.TempDir(), "production.yaml")
	code, _, stderr = cli.Run("export", m[1], "-o", prod)
	require.Equal(t, 0, code, stderr)
	code, out, stderr = cli.Run("run", prod, "--input", "Compare SQLite and DuckDB for embedded analytics")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "**Your request:** Compare SQLite and DuckDB for embedded analytics")
	assert.Contains(t, out, `answers "Compare SQLite and DuckDB for embedded analytics"`)
	assert.NotContains(t, out, "**Recommendation:** use SQLite by default", "not the script's report about another request")
	assert.NotContains(t, out, "Default to SQLite for a single process")
}
