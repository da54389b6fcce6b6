package trace

import (
	"context"
	"encoding/json"

	"github.com/coorflow/coorflow/llm"
)

// maxSpendRuns caps the runs one SpendOf or TurnSpend sums: each costs
// a reading of its model calls, so the cap bounds the work of a call (its
// memory is bounded by a page of runs, RunPage, and a page of events).
const maxSpendRuns = 100_000

// RunSpend sums the model calls recorded for run id: tokens and cost.
func RunSpend(ctx context.Context, s Store, id string) (llm.Spend, error) {
	var sp llm.Spend
	for e, err := range AllEvents(ctx, s, id, EventQuery{Kinds: []string{llm.EventModelCall}}) {
		if err != nil {
			return llm.Spend{}, err
		}
		var mc llm.ModelCall
		if json.Unmarshal(e.Payload, &mc) == nil {
			sp.Add(mc)
		}
	}
	return sp, nil
}

// SpendOf sums the model calls of the runs q selects (its Limit and
// Brief ignored): a thread's (Owner and Thread) or an owner's (Owner),
// the most recent maxSpendRuns (100,000) of them at most. It reads the
// runs a page at a time without their large fields (AllRuns), so it holds
// a page of runs and a page of events at most. It returns how many runs
// it summed. Pruned runs no longer count.
func SpendOf(ctx context.Context, s Store, q RunQuery) (llm.Spend, int, error) {
	q.Limit, q.Brief = 0, true
	var sp llm.Spend
	n := 0
	for r, err := range AllRuns(ctx, s, q) {
		if err != nil {
			return llm.Spend{}, 0, err
		}
		rs, err := RunSpend(ctx, s, r.ID)
		if err != nil {
			return llm.Spend{}, 0, err
		}
		sp.Merge(rs)
		if n++; n == maxSpendRuns {
			break
		}
	}
	return sp, n, nil
}

// TurnSpend sums what the latest turn of a thread spent: its runs from
// the last one started with an input (StartInput) on, the runs that
// resumed or continued it included (maxSpendRuns of them at most). A run
// budget covers a turn, so a run that continues a stopped one starts
// from what the turn spent. It reads the runs as SpendOf does.
func TurnSpend(ctx context.Context, s Store, owner, thread string) (llm.Spend, error) {
	var sp llm.Spend
	n := 0
	for r, err := range AllRuns(ctx, s, RunQuery{Owner: owner, Thread: thread, Brief: true}) { // the most recent first
		if err != nil {
			return llm.Spend{}, err
		}
		rs, err := RunSpend(ctx, s, r.ID)
		if err != nil {
			return llm.Spend{}, err
		}
		sp.Merge(rs)
		if n++; r.Start == StartInput || n == maxSpendRuns {
			break
		}
	}
	return sp, nil
}
