package trace

import (
	"context"
	"fmt"
	"iter"
	"time"
)

// AllEvents yields the events of run id that q selects, by Seq, reading
// them from s a page at a time (q's Limit and MaxBytes bound a page), so
// that a reader that does not keep them holds one page at most. It stops
// at the first error, which it yields with a zero Event; an unknown run
// is ErrNotFound, and a store that gives an event not after the one
// before (it did not honour the query's After) fails the reading rather
// than giving the same pages again.
func AllEvents(ctx context.Context, s Store, id string, q EventQuery) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for {
			page, err := s.Events(ctx, id, q)
			if err != nil {
				yield(Event{}, err)
				return
			}
			if len(page) == 0 {
				return
			}
			for _, e := range page {
				if e.Seq <= q.After {
					yield(Event{}, fmt.Errorf("trace: events of run %q: the store gave event %d after event %d", id, e.Seq, q.After))
					return
				}
				q.After = e.Seq
				if !yield(e, nil) {
					return
				}
			}
			if q.Until > 0 && q.After >= q.Until {
				return
			}
		}
	}
}

// RunPage is how many runs a page of AllRuns holds when its query sets
// no Limit.
const RunPage = 500

// AllRuns yields the runs q selects, the most recently started first,
// reading them from s a page at a time (q's Limit, or RunPage when 0,
// bounds a page): each page asks for the runs after the last one of the
// page before (RunQuery's Before and BeforeID), so that runs started at
// the same time are read once each. Set q.Brief to leave their large
// fields out. It stops at the first error, which it yields with a zero
// RunInfo; a store that gives a run not after the one before fails the
// reading rather than giving the same pages again.
func AllRuns(ctx context.Context, s Store, q RunQuery) iter.Seq2[RunInfo, error] {
	if q.Limit <= 0 {
		q.Limit = RunPage
	}
	return func(yield func(RunInfo, error) bool) {
		var last *RunInfo
		for {
			page, err := s.Runs(ctx, q)
			if err != nil {
				yield(RunInfo{}, err)
				return
			}
			if len(page) == 0 {
				return
			}
			for i := range page {
				r := page[i]
				if last != nil && !(RunQuery{Before: last.StartedAt, BeforeID: last.ID}).beforeCursor(r) {
					yield(RunInfo{}, fmt.Errorf("trace: runs: the store gave run %q (started %s) after run %q (started %s)",
						r.ID, r.StartedAt.Format(time.RFC3339Nano), last.ID, last.StartedAt.Format(time.RFC3339Nano)))
					return
				}
				last = &page[i]
				if !yield(r, nil) {
					return
				}
			}
			q.Before, q.BeforeID = last.StartedAt, last.ID
		}
	}
}
