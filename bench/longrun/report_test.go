//go:build !race

// The long run is left out of -race builds: the race detector makes its
// keep-everything baseline, 44 million prompt tokens through JSON and
// token estimates, take over ten minutes. What it drives — window,
// nodes/react, llm/openaitest — has -race tests of its own, and
// TestCoorPrefixReuse runs under -race.

package longrun_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// runs are the mechanisms measured: each alone, then added up in the
// order the window applies them.
var (
	everything = mechanisms{}
	alone      = []mechanisms{{offload: true}, {steps: true}, {clear: true}, {summarize: true}}
	cumulative = []mechanisms{
		{offload: true},
		{offload: true, steps: true},
		{offload: true, steps: true, clear: true},
		{offload: true, steps: true, clear: true, summarize: true},
	}
)

func TestLongRun(t *testing.T) {
	base := run(t.Context(), t, everything)
	require := assert.New(t)
	require.Equal(len(facts), base.found, "keeping everything, every answer is in the prompt")

	var b strings.Builder
	fmt.Fprintf(&b, "one ReAct agent, %d research turns, %d questions at the end; prompt tokens as reported over the OpenAI wire protocol\n", researchTurns, len(facts))
	fmt.Fprintf(&b, "%-36s %5s %11s %7s %10s %7s %7s %7s %5s %s\n", "mechanisms", "calls", "prompt tok", "saved", "max prompt", "reuse", "kept", "cached", "reads", "answers found")
	row := func(o outcome) {
		fmt.Fprintf(&b, "%-36s %5d %11d %6.1f%% %10d %6.1f%% %6.1f%% %6.1f%% %5d %d/%d (%d via read_context)\n", o.mech, o.calls, o.prompt,
			100*saved(base, o), o.maxPrompt, 100*o.reuse, 100*o.kept, 100*float64(o.cached)/float64(o.prompt), o.reads, o.found, len(facts), o.viaReadCtx)
	}
	row(base)
	b.WriteString("-- each mechanism alone\n")
	done := map[mechanisms]outcome{}
	for _, m := range alone {
		done[m] = run(t.Context(), t, m)
		row(done[m])
	}
	b.WriteString("-- added up\n")
	var all outcome
	for _, m := range cumulative {
		var ok bool
		if all, ok = done[m]; !ok {
			all = run(t.Context(), t, m)
		}
		row(all)
	}
	b.WriteString("reuse: share of each prompt identical to the beginning of the previous one; kept: share of the previous prompt the next one repeats;\n" +
		"cached: prompt tokens the server reported as cached (openaitest, as OpenAI: the shared beginning, from 1,024 tokens, in steps of 128)\n")
	t.Log("\n" + b.String())

	assert.GreaterOrEqual(t, saved(base, all), 0.84, "at least 84% fewer prompt tokens than keeping everything")
	assert.Equal(t, len(facts), all.found, "every answer found:\n%s", all.output)
	assert.GreaterOrEqual(t, all.reuse, 0.80, "at least 80% of each prompt is the previous one's beginning")
	assert.Zero(t, all.toolChanges, "the tools, at the head of every prompt, are sent the same each time")
}

func saved(base, o outcome) float64 { return 1 - float64(o.prompt)/float64(base.prompt) }

func BenchmarkLongRun(b *testing.B) {
	base := run(b.Context(), b, everything)
	all := cumulative[len(cumulative)-1]
	b.ReportAllocs()
	b.ResetTimer()
	var o outcome
	for b.Loop() {
		o = run(b.Context(), b, all)
	}
	b.ReportMetric(float64(o.prompt), "prompt-tokens/run")
	b.ReportMetric(float64(base.prompt), "baseline-prompt-tokens/run")
	b.ReportMetric(100*saved(base, o), "%saved")
	b.ReportMetric(100*o.reuse, "%prefix-reuse")
	b.ReportMetric(100*float64(o.cached)/float64(o.prompt), "%cached")
	b.ReportMetric(float64(o.found), "answers-found")
}
