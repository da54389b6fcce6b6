package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/store"
)

// parallel runs fn(i) for i in [0, n) on n goroutines that start together,
// and returns their errors in order.
func parallel(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

func testCanceledContext(t *testing.T, s store.Store) {
	add(t, s, alice, "project/a", "x", store.Attrs{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := s.Get(ctx, alice, "project/a")
	assert.ErrorIs(t, err, context.Canceled, "get")
	_, err = s.Add(ctx, alice, "project/b", "x", store.Attrs{})
	assert.ErrorIs(t, err, context.Canceled, "add")
	_, err = s.Edit(ctx, alice, "project/a", store.Replace(1, "y"))
	assert.ErrorIs(t, err, context.Canceled, "edit")
	_, err = s.List(ctx, alice, "", store.ListOptions{})
	assert.ErrorIs(t, err, context.Canceled, "list")
	assert.Equal(t, "x", content(t, s, alice, "project/a").Content)
	_, err = s.Get(t.Context(), alice, "project/b")
	assert.ErrorIs(t, err, store.ErrNotFound)
}

func testConcurrentAdds(t *testing.T, s store.Store) {
	const writers, each = 16, 10
	errs := parallel(writers, func(i int) error {
		for j := range each {
			if _, err := s.Add(t.Context(), alice, fmt.Sprintf("memory/w%02d/%02d", i, j), "x", store.Attrs{}); err != nil {
				return err
			}
		}
		return nil
	})
	for i, err := range errs {
		require.NoError(t, err, "writer %d", i)
	}
	p, err := s.List(t.Context(), alice, "memory/", store.ListOptions{Limit: store.MaxListLimit})
	require.NoError(t, err)
	assert.Len(t, p.Items, writers*each)

	// Many writers adding the same path: exactly one wins.
	errs = parallel(writers, func(i int) error {
		_, err := s.Add(t.Context(), alice, "project/contested", fmt.Sprint(i), store.Attrs{})
		return err
	})
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
			continue
		}
		assert.ErrorIs(t, err, store.ErrExists)
	}
	assert.Equal(t, 1, won)
}

func testConcurrentTextEditors(t *testing.T, s store.Store) {
	const editors = 12
	add(t, s, alice, "mission/r1/progress", "", store.Attrs{})
	conflicts := make([]int, editors)
	errs := parallel(editors, func(i int) error {
		for {
			it, err := s.Get(t.Context(), alice, "mission/r1/progress")
			if err != nil {
				return err
			}
			_, err = s.Edit(t.Context(), alice, "mission/r1/progress",
				store.Replace(it.Revision, it.Content+fmt.Sprintf("line %02d\n", i)))
			if !isConflict(err) {
				return err
			}
			conflicts[i]++
		}
	})
	for i, err := range errs {
		require.NoError(t, err, "editor %d", i)
	}
	it := content(t, s, alice, "mission/r1/progress")
	assert.Equal(t, int64(editors+1), it.Revision)
	lines := strings.Split(strings.TrimSuffix(it.Content, "\n"), "\n")
	assert.Len(t, lines, editors, "no append was lost: %q", it.Content)
	for i := range editors {
		assert.Contains(t, lines, fmt.Sprintf("line %02d", i))
	}
}

func testConcurrentJSONMerge(t *testing.T, s store.Store) {
	const editors = 12 // below store.DefaultKeepRevisions: every base is kept
	add(t, s, alice, "mission/r1/plan", `{"title":"t"}`, jsonAttrs())
	errs := parallel(editors, func(i int) error {
		// Every editor read revision 1 and sets its own field.
		_, err := s.Edit(t.Context(), alice, "mission/r1/plan",
			store.Replace(1, fmt.Sprintf(`{"title":"t","step%02d":"done by %d"}`, i, i)))
		return err
	})
	for i, err := range errs {
		require.NoError(t, err, "editor %d: edits of different fields merge", i)
	}
	it := content(t, s, alice, "mission/r1/plan")
	assert.Equal(t, int64(editors+1), it.Revision)
	fields := jsonFields(t, it.Content)
	assert.Len(t, fields, editors+1)
	for i := range editors {
		assert.Equal(t, fmt.Sprintf("done by %d", i), fields[fmt.Sprintf("step%02d", i)])
	}
}

func testConcurrentJSONClash(t *testing.T, s store.Store) {
	const editors = 12
	add(t, s, alice, "mission/r1/plan", `{"owner":"nobody","other":1}`, jsonAttrs())
	errs := parallel(editors, func(i int) error {
		_, err := s.Edit(t.Context(), alice, "mission/r1/plan",
			store.Replace(1, fmt.Sprintf(`{"owner":"agent-%d","other":1}`, i)))
		return err
	})
	winner := -1
	for i, err := range errs {
		if err == nil {
			assert.Equal(t, -1, winner, "two editors of the same field both succeeded")
			winner = i
			continue
		}
		var ce *store.ConflictError
		require.True(t, errors.As(err, &ce), "editor %d: %v", i, err)
		assert.Equal(t, []string{"owner"}, ce.Fields)
	}
	require.NotEqual(t, -1, winner, "one editor must win")
	it := content(t, s, alice, "mission/r1/plan")
	assert.Equal(t, int64(2), it.Revision)
	assert.Equal(t, fmt.Sprintf("agent-%d", winner), jsonFields(t, it.Content)["owner"])
}
