package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/memory"
)

func TestAllReadsEveryPageAndStopsWhenAsked(t *testing.T) {
	s := memory.New(store.Config{})
	n := store.MaxListLimit + 5 // more than one page
	for i := range n {
		_, err := s.Add(t.Context(), "alice", fmt.Sprintf("m/%05d", i), "x", store.Attrs{})
		require.NoError(t, err)
	}
	_, err := s.Add(t.Context(), "alice", "other/x", "x", store.Attrs{})
	require.NoError(t, err)

	var paths []string
	for m, err := range store.All(t.Context(), s, "alice", "m/") {
		require.NoError(t, err)
		paths = append(paths, m.Path)
	}
	require.Len(t, paths, n)
	assert.Equal(t, "m/00000", paths[0])
	assert.Equal(t, fmt.Sprintf("m/%05d", n-1), paths[n-1])

	seen := 0
	for range store.All(t.Context(), s, "alice", "m/") {
		seen++
		if seen == 3 {
			break
		}
	}
	assert.Equal(t, 3, seen)
}

type failingStore struct{ store.Store }

func (failingStore) List(context.Context, string, string, store.ListOptions) (store.Page, error) {
	return store.Page{}, errors.New("disk on fire")
}

func TestAllYieldsTheListError(t *testing.T) {
	var errs []error
	for _, err := range store.All(t.Context(), failingStore{}, "alice", "") {
		errs = append(errs, err)
	}
	require.Len(t, errs, 1)
	assert.EqualError(t, errs[0], "disk on fire")
}
