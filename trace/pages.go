package trace

import (
	"context"
	"iter"
)

// AllEvents yields the events of run id that q selects, by Seq, reading
// them from s a page at a time (q's Limit and MaxBytes bound a page), so
// that a reader that does not keep them holds one page at most. It stops
// at the first error, which it yields with a zero Event; an unknown run
// is ErrNotFound.
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
				if !yield(e, nil) {
					return
				}
			}
			q.After = page[len(page)-1].Seq
			if q.Until > 0 && q.After >= q.Until {
				return
			}
		}
	}
}
