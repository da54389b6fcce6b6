// Package eval evaluates coorflow workflows on datasets of cases, anywhere
// (a laptop, CI, offline on a demo or recorded model), without a hosted
// service.
//
// A dataset (Load) is a YAML or JSONL file of cases — an input, an
// optional expected output, a rubric, tags, metadata and the answers to
// the questions a run may ask — and of graders: exact, contains, regex,
// JSON Schema, an expression over the final state (the expressions of
// workflow files), a budget, and an LLM judge with a rubric. Go programs
// add their own Graders. Run runs every case k times, each on a thread of
// its own, concurrently under a limit and under a per-case and a total
// budget (llm.Meter), records every run (package trace), grades it, and
// returns a Result: per case and in total, the pass rate and mean score
// with a confidence interval over the repeats, tokens, cost, latency p50
// and p95, agents built and steps run. A Store keeps eval runs in the
// database next to the recorded runs they link to, so that an eval that
// was killed resumes without running its finished cases again. Compare
// tells what got better or worse between two eval runs, and Pairwise asks
// a judge which of two outputs is better in both orders.
//
//	ds, err := eval.Load("cases.yaml", file)
//	res, err := eval.Run(ctx, eval.Config{File: file, Runnable: r, Dataset: ds, Concurrency: 8, Repeats: 3})
//	fmt.Print(res.Table())
package eval
