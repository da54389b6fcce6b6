package window_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/window"
)

// plan returns n completed steps, oldest first.
func plan(n int) []window.Step {
	steps := make([]window.Step, n)
	for i := range steps {
		id := fmt.Sprintf("s%02d", i+1)
		steps[i] = window.Step{
			ID:         id,
			Title:      "Investigate topic " + id,
			Agent:      "researcher",
			Result:     fmt.Sprintf("Full result of %s.\nIt spans several lines with details, figures and sources.\n%s", id, words(40)),
			Summary:    "Summary of " + id + ": the key finding in one sentence.",
			Confidence: 0.5 + float64(i)/40,
			Ref:        "mission/run-1/outputs/steps/" + id,
		}
	}
	if n > 3 {
		steps[3].Status = window.StepFailed
	}
	return steps
}

func stepsRequest(budget window.Budget) window.Request {
	return window.Request{Agent: "planner", Budget: budget, Parts: []window.Part{
		{Name: "steps", Kind: window.KindSteps, Steps: plan(12)},
	}}
}

func TestStepsAreTieredOnlyFromTheThreshold(t *testing.T) {
	b, _ := newBuilder(t, nil, nil)
	full, err := b.Assemble(t.Context(), stepsRequest(window.Budget{}))
	require.NoError(t, err)
	require.Empty(t, full.Snapshot.Policies, "no limit, below the fallback: nothing applied")
	size := full.Snapshot.FullTokens
	require.Equal(t, size, full.Snapshot.TotalTokens)

	tests := []struct {
		name     string
		at       int // tokens at which compression starts
		compress bool
	}{
		{"below", size + 1, false},
		{"at", size, true},
		{"above", size - 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limit := limitFor(t, window.DefaultStepsThreshold, tt.at)
			res, err := b.Assemble(t.Context(), stepsRequest(window.Budget{MaxInputTokens: limit}))
			require.NoError(t, err)
			applied := res.Snapshot.PoliciesOf(window.PolicyCompressSteps)
			got := text(res.Messages[0])
			if !tt.compress {
				assert.Empty(t, applied)
				assert.Equal(t, text(full.Messages[0]), got)
				assert.Equal(t, 12, strings.Count(got, "Full result of"))
				return
			}
			require.Len(t, applied, 1)
			assert.Contains(t, applied[0].Detail, "tiered 12 steps at 30% of")
			assert.Contains(t, applied[0].Detail, "3 in full, 7 as summaries, 2 as metadata")
			assert.Less(t, applied[0].TokensAfter, applied[0].TokensBefore)
			assert.Equal(t, 3, strings.Count(got, "Full result of"))
			for _, id := range []string{"s10", "s11", "s12"} {
				assert.Contains(t, got, "Full result of "+id)
			}
			for _, id := range []string{"s03", "s04", "s09"} {
				assert.Contains(t, got, "Summary of "+id)
				assert.NotContains(t, got, "Full result of "+id)
			}
			for _, id := range []string{"s01", "s02"} {
				assert.Contains(t, got, "- "+id+` "Investigate topic `+id+`" by researcher: done`)
				assert.Contains(t, got, "full text: mission/run-1/outputs/steps/"+id)
				assert.NotContains(t, got, "Summary of "+id)
			}
		})
	}
}

func TestTieredStepsGolden(t *testing.T) {
	b, _ := newBuilder(t, nil, nil)
	req := stepsRequest(window.Budget{})
	req.Force = true
	res, err := b.Assemble(t.Context(), req)
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	golden(t, "tiered_steps.golden", text(res.Messages[0]))
}

func TestStepsFallbackThresholdWithoutALimit(t *testing.T) {
	b, _ := newBuilder(t, nil, nil)
	full, err := b.Assemble(t.Context(), stepsRequest(window.Budget{}))
	require.NoError(t, err)
	size := full.Snapshot.FullTokens
	for _, tt := range []struct {
		fallback int
		compress bool
	}{{size + 1, false}, {size, true}, {size - 1, true}} {
		b, _ := newBuilder(t, nil, func(c *window.Config) { c.Steps.FallbackTokens = tt.fallback })
		res, err := b.Assemble(t.Context(), stepsRequest(window.Budget{}))
		require.NoError(t, err)
		assert.Equal(t, tt.compress, len(res.Snapshot.PoliciesOf(window.PolicyCompressSteps)) == 1, "fallback %d", tt.fallback)
	}
}

func TestStepsPolicyIsConfigurable(t *testing.T) {
	tests := []struct {
		name   string
		policy window.StepsPolicy
		full   int
		summ   int
	}{
		{"defaults", window.StepsPolicy{}, 3, 7},
		{"narrower", window.StepsPolicy{Full: 1, Summarized: 2}, 1, 2},
		{"disabled", window.StepsPolicy{Disabled: true}, 12, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := newBuilder(t, nil, func(c *window.Config) { c.Steps = tt.policy })
			req := stepsRequest(window.Budget{})
			req.Force = true
			res, err := b.Assemble(t.Context(), req)
			require.NoError(t, err)
			got := text(res.Messages[0])
			assert.Equal(t, tt.full, strings.Count(got, "Full result of"))
			assert.Equal(t, tt.summ, strings.Count(got, "— summary"))
		})
	}
}

func TestFewStepsStayInFull(t *testing.T) {
	b, _ := newBuilder(t, nil, nil)
	res, err := b.Assemble(t.Context(), window.Request{Force: true, Parts: []window.Part{
		{Name: "steps", Kind: window.KindSteps, Steps: plan(3)},
	}})
	require.NoError(t, err)
	assert.Empty(t, res.Snapshot.PoliciesOf(window.PolicyCompressSteps))
	assert.Equal(t, 3, strings.Count(text(res.Messages[0]), "Full result of"))
}

func TestRenderResultsGolden(t *testing.T) {
	steps := plan(5)
	steps[1].Summary = ""
	steps[1].Result = "\n  The benchmark   ran on two machines.\nSecond line never shown."
	steps[2].Summary = strings.Repeat("A very long summary line that goes on. ", 10)
	steps[4].Status = window.StepPending
	steps[4].Result, steps[4].Summary, steps[4].Confidence = "", "", 0
	got := window.RenderResults(steps)
	golden(t, "results.golden", got)
	assert.NotContains(t, got, "Full result of", "results, not process")
	assert.Equal(t, 5, strings.Count(got, "\n"), "one line per step")
}

func TestTieredStepsStayTieredWhenTheWindowShrinks(t *testing.T) {
	b, _ := newBuilder(t, nil, func(c *window.Config) { c.Steps.FallbackTokens = 3_000 })
	req := func(history int) window.Request {
		return window.Request{Agent: "researcher-1", Parts: []window.Part{
			{Name: "steps", Kind: window.KindSteps, Steps: plan(12)},
			{Name: "history", Kind: window.KindHistory, Messages: toolTurns(1, history), Required: true},
		}}
	}
	small, err := b.Assemble(t.Context(), req(100))
	require.NoError(t, err)
	require.Empty(t, small.Snapshot.PoliciesOf(window.PolicyCompressSteps), "under the threshold on the first call")

	big, err := b.Assemble(t.Context(), req(3_000))
	require.NoError(t, err)
	require.Len(t, big.Snapshot.PoliciesOf(window.PolicyCompressSteps), 1)

	again, err := b.Assemble(t.Context(), req(100)) // the history was cleared or summarized
	require.NoError(t, err)
	applied := again.Snapshot.PoliciesOf(window.PolicyCompressSteps)
	require.Len(t, applied, 1, "once tiered, the steps stay tiered")
	assert.Contains(t, applied[0].Detail, "as on an earlier call")
	assert.Equal(t, text(big.Messages[0]), text(again.Messages[0]), "the prompt begins as it did")

	other, err := b.Assemble(t.Context(), window.Request{Agent: "researcher-2", Parts: req(100).Parts})
	require.NoError(t, err)
	assert.Empty(t, other.Snapshot.PoliciesOf(window.PolicyCompressSteps), "another agent's window is its own")
}
