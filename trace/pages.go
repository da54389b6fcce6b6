package trace

import (
	"context"
	"fmt"
	"iter"
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
