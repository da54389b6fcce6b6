package trace

import (
	"context"
	"encoding/json"

	"github.com/coorflow/coorflow/llm"
)

// maxSpendRuns caps the runs one SpendOf reads.
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

// SpendOf sums the model calls of the runs q selects (its Limit
// ignored): a thread's (Owner and Thread) or an owner's (Owner). It
// returns how many runs it summed. Pruned runs no longer count.
func SpendOf(ctx context.Context, s Store, q RunQuery) (llm.Spend, int, error) {
	q.Limit = maxSpendRuns
	runs, err := s.Runs(ctx, q)
	if err != nil {
		return llm.Spend{}, 0, err
	}
	var sp llm.Spend
	for _, r := range runs {
		rs, err := RunSpend(ctx, s, r.ID)
		if err != nil {
			return llm.Spend{}, 0, err
		}
		sp.Merge(rs)
	}
	return sp, len(runs), nil
}

// TurnSpend sums what the latest turn of a thread spent: its runs from
// the last one started with an input (StartInput) on, the runs that
// resumed or continued it included. A run budget covers a turn, so a run
// that continues a stopped one starts from what the turn spent.
func TurnSpend(ctx context.Context, s Store, owner, thread string) (llm.Spend, error) {
	runs, err := s.Runs(ctx, RunQuery{Owner: owner, Thread: thread, Limit: maxSpendRuns})
	if err != nil {
		return llm.Spend{}, err
	}
	var sp llm.Spend
	for _, r := range runs { // the most recent first
		rs, err := RunSpend(ctx, s, r.ID)
		if err != nil {
			return llm.Spend{}, err
		}
		sp.Merge(rs)
		if r.Start == StartInput {
			break
		}
	}
	return sp, nil
}
