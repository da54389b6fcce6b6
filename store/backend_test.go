package store_test

import (
	"context"
	"time"

	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/memory"
)

func memBackend() store.Backend { return memory.NewBackend() }

// staleList reports every listed item at revision 1 and a time long ago,
// as a List that ran before later writes would.
type staleList struct{ store.Backend }

func (s staleList) List(ctx context.Context, owner, prefix, after string, limit int) ([]store.Meta, error) {
	metas, err := s.Backend.List(ctx, owner, prefix, after, limit)
	for i := range metas {
		metas[i].Revision = 1
		metas[i].Updated = time.Unix(0, 0)
	}
	return metas, err
}
