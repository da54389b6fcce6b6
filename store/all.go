package store

import (
	"context"
	"iter"
)

// All yields the metadata of owner's items under prefix, in path order,
// reading s one page of MaxListLimit at a time; it stops at the first
// error, which it yields. Stop ranging to stop reading.
func All(ctx context.Context, s Store, owner, prefix string) iter.Seq2[Meta, error] {
	return func(yield func(Meta, error) bool) {
		opts := ListOptions{Limit: MaxListLimit}
		for {
			page, err := s.List(ctx, owner, prefix, opts)
			if err != nil {
				yield(Meta{}, err)
				return
			}
			for _, m := range page.Items {
				if !yield(m, nil) {
					return
				}
			}
			if page.Next == "" {
				return
			}
			opts.After = page.Next
		}
	}
}
