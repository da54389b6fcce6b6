// Package research_test runs examples/research offline, on its demo
// script: the plan waits for its review, and the accepted plan runs one
// step at a time, the coder building on the researcher's result; feedback
// at the review gets a new plan.
package research_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/internal/clitest"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/workflows"
)

func TestTheResearchExampleRunsOfflineWithAReviewedPlan(t *testing.T) {
	f, err := workflows.Load("workflow.yaml")
	require.NoError(t, err)
	noEnv := func(string) string { return "" }
	ms, err := f.Resolve(t.Context(), workflows.ModelOptions{Getenv: noEnv})
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), workflows.Env{Models: ms.Models, Getenv: noEnv, Graph: []graph.Option{graph.WithSaver(memory.New())}})
	require.NoError(t, err)

	res, err := r.Invoke(t.Context(), graph.Input(nodes.Input.Set("How fast is SQLite?")), graph.Thread("t1"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	review := res.Interrupts[0].Payload.(nodes.ReviewRequest)
	assert.Equal(t, "Checkpoints per second with SQLite in WAL mode", review.Plan.Title)

	var order []string
	var final graph.State
	for ev, err := range r.Stream(t.Context(), nil, graph.Thread("t1"), graph.Resume("accept")) {
		require.NoError(t, err)
		if a, ok := ev.Data.(agentevent.Started); ok {
			order = append(order, a.Agent)
		}
		if ev.Kind == graph.EventRunEnd {
			final = ev.State
		}
	}
	assert.Equal(t, []string{"researcher", "coder"}, order, "one step at a time")
	assert.Contains(t, nodes.Answer.Get(final), "**Answer:** about **1,000 checkpoints per second**")
	findings := nodes.Findings.Get(final)
	require.Len(t, findings, 2)
	assert.Equal(t, "About 50,000 checkpoints/s with synchronous=NORMAL and 1,000/s with FULL.", findings[1].Summary)
}

// TestTheReviewFeedbackLoopFromTheCommandLine runs the README's feedback
// loop as a newcomer types it: the run stops at the review, feedback makes
// the planner plan again with it, and "y" accepts the new plan.
func TestTheReviewFeedbackLoopFromTheCommandLine(t *testing.T) {
	cli := clitest.New(t, "../..")
	code, out, stderr := cli.Run("run", "examples/research", "--thread", "fb", "--input", "How many checkpoints per second can SQLite store on a laptop?")
	require.Equal(t, 3, code, "the run waits for the review: %s", stderr)
	assert.Contains(t, out, `✓ planner  plan "Checkpoints per second with SQLite in WAL mode": 2 steps`)
	assert.Contains(t, out, "coorflow run examples/research --thread fb --resume '<answer>'")

	code, out, stderr = cli.Run("run", "examples/research", "--thread", "fb", "--resume", "also look at fsync cost on macOS")
	require.Equal(t, 3, code, "the new plan waits for its review: %s", stderr)
	assert.Contains(t, out, `✓ human_feedback  feedback: "also look at fsync cost on macOS"`)
	assert.Contains(t, out, `✓ planner  plan "Checkpoints per second with SQLite in WAL mode, on Linux and macOS": 3 steps`)
	assert.Contains(t, out, "s2 researcher  Find the fsync cost on macOS")

	code, out, stderr = cli.Run("run", "examples/research", "--thread", "fb", "--resume", "y")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "✓ s2 researcher  (0.85) A durable commit on macOS needs F_FULLFSYNC", "y accepted the plan: its steps ran")
	assert.NotContains(t, out, "planning stopped at its limit", "every step completed: the round limit cut nothing short")
	assert.Contains(t, out, "about **100 checkpoints per second** [3][4]")
}
