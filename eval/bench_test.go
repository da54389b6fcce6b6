package eval_test

import (
	"testing"

	"github.com/coorflow/coorflow/eval"
	"github.com/coorflow/coorflow/llm/scripted"
)

// BenchmarkRun measures what eval adds to a run of a case: 100 cases of a
// one-call workflow on the scripted model, 16 at once, graded by a regex
// and an expression, under a total budget.
func BenchmarkRun(b *testing.B) {
	m := scripted.New(scripted.Script{Default: &scripted.Reply{Text: "ok"}})
	f, r := benchWorkflow(b, m)
	ds := benchDataset(b, f)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := eval.Run(b.Context(), eval.Config{File: f, Runnable: r, Dataset: ds, Concurrency: 16, TotalBudget: budgetOf(1 << 30)})
		if err != nil || res.Total.Passed != 100 {
			b.Fatalf("%v, %d passed", err, res.Total.Passed)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100), "ns/trial")
}
