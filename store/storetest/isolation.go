package storetest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/store"
)

func testOwnerIsolation(t *testing.T, s store.Store) {
	ctx := t.Context()
	add(t, s, alice, "memory/diary", "alice's secret diary", store.Attrs{Labels: map[string]string{"sensitivity": "secret"}})
	add(t, s, alice, "mission/r1/plan", `{"goal":"x"}`, jsonAttrs())

	t.Run("bob sees nothing of alice's", func(t *testing.T) {
		_, err := s.Get(ctx, bob, "memory/diary")
		assert.ErrorIs(t, err, store.ErrNotFound, "get")
		_, err = s.Read(ctx, bob, "memory/diary", 0, 10)
		assert.ErrorIs(t, err, store.ErrNotFound, "read")
		_, err = s.Read(ctx, bob, "memory/diary", 1000, 10)
		assert.ErrorIs(t, err, store.ErrNotFound, "read beyond alice's end")
		_, err = s.Edit(ctx, bob, "memory/diary", store.Replace(1, "defaced"))
		assert.ErrorIs(t, err, store.ErrNotFound, "edit")
		_, err = s.Edit(ctx, bob, "mission/r1/plan", store.Replace(1, `{"goal":"y"}`))
		assert.ErrorIs(t, err, store.ErrNotFound, "json edit")
		assert.ErrorIs(t, s.Delete(ctx, bob, "memory/diary", 1), store.ErrNotFound, "delete")

		p, err := s.List(ctx, bob, "", store.ListOptions{})
		require.NoError(t, err)
		assert.Empty(t, p.Items, "list")
		hits, err := s.Search(ctx, bob, "diary secret goal", store.SearchOptions{})
		require.NoError(t, err)
		assert.Empty(t, hits, "search")
	})
	t.Run("the error names the owner", func(t *testing.T) {
		_, err := s.Get(ctx, bob, "memory/diary")
		require.Error(t, err)
		assert.Contains(t, err.Error(), `owner "bob"`)
		assert.Contains(t, err.Error(), "memory/diary")
	})
	t.Run("same path, separate items", func(t *testing.T) {
		add(t, s, bob, "memory/diary", "bob's diary", store.Attrs{})
		_, err := s.Edit(ctx, bob, "memory/diary", store.Replace(1, "bob's diary, edited"))
		require.NoError(t, err)
		assert.Equal(t, "alice's secret diary", content(t, s, alice, "memory/diary").Content)
		assert.Equal(t, int64(1), content(t, s, alice, "memory/diary").Revision)
		require.NoError(t, s.Delete(ctx, bob, "memory/diary", 2))
		assert.Equal(t, "alice's secret diary", content(t, s, alice, "memory/diary").Content)
	})
	t.Run("alice still has everything", func(t *testing.T) {
		p, err := s.List(ctx, alice, "", store.ListOptions{})
		require.NoError(t, err)
		assert.Len(t, p.Items, 2)
	})
}

func testReadOnly(t *testing.T, s store.Store) {
	ctx := t.Context()
	add(t, s, alice, "project/doc", "text", store.Attrs{})
	ro := store.ReadOnly(s)

	it, err := ro.Get(ctx, alice, "project/doc")
	require.NoError(t, err)
	assert.Equal(t, "text", it.Content)
	c, err := ro.Read(ctx, alice, "project/doc", 0, 2)
	require.NoError(t, err)
	assert.Equal(t, "te", c.Content)
	p, err := ro.List(ctx, alice, "", store.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, p.Items, 1)
	hits, err := ro.Search(ctx, alice, "text", store.SearchOptions{})
	require.NoError(t, err)
	assert.Len(t, hits, 1)

	writes := map[string]func() error{
		"add":    func() error { _, err := ro.Add(ctx, alice, "project/new", "x", store.Attrs{}); return err },
		"edit":   func() error { _, err := ro.Edit(ctx, alice, "project/doc", store.Replace(1, "x")); return err },
		"delete": func() error { return ro.Delete(ctx, alice, "project/doc", 1) },
	}
	for name, w := range writes {
		t.Run(name, func(t *testing.T) {
			err := w()
			require.ErrorIs(t, err, store.ErrReadOnly)
			assert.Contains(t, err.Error(), "read-only")
		})
	}
	assert.Equal(t, int64(1), content(t, s, alice, "project/doc").Revision, "nothing was written")
}

func testBoundView(t *testing.T, s store.Store) {
	ctx := t.Context()
	add(t, s, alice, "mission/r1/plan", "the plan", store.Attrs{})
	add(t, s, alice, "mission/r1/task-t1", "for task t1", store.Attrs{Visibility: store.TaskScoped("t1")})
	add(t, s, alice, "mission/r1/task-t2", "for task t2", store.Attrs{Visibility: store.TaskScoped("t2")})
	add(t, s, alice, "mission/r1/agents/a1/key", "a1 secret key", store.Attrs{
		Visibility: store.AgentScoped("a1"), Labels: map[string]string{"sensitivity": "secret"}})
	add(t, s, alice, "mission/r1/agents/a2/note", "a2 note", store.Attrs{Visibility: store.AgentScoped("a2")})
	add(t, s, alice, "project/readme", "readme", store.Attrs{})
	add(t, s, bob, "mission/r1/plan", "bob's plan", store.Attrs{})

	t.Run("owner is fixed", func(t *testing.T) {
		v := store.Bind(s, bob)
		assert.Equal(t, bob, v.Owner())
		it, err := v.Get(ctx, "mission/r1/plan")
		require.NoError(t, err)
		assert.Equal(t, "bob's plan", it.Content)
		_, err = v.Get(ctx, "project/readme")
		assert.ErrorIs(t, err, store.ErrNotFound)
		m, err := v.Add(ctx, "project/bob", "x", store.Attrs{})
		require.NoError(t, err)
		_, err = s.Get(ctx, bob, m.Path)
		require.NoError(t, err, "the view wrote for its owner")
		_, err = s.Get(ctx, alice, m.Path)
		assert.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("viewer a2 on task t2", func(t *testing.T) {
		v := store.Bind(s, alice, store.BindViewer(store.Viewer{Task: "t2", Agent: "a2"}))
		p, err := v.List(ctx, "mission/", store.ListOptions{})
		require.NoError(t, err)
		var got []string
		for _, m := range p.Items {
			got = append(got, m.Path)
		}
		assert.Equal(t, []string{"mission/r1/agents/a2/note", "mission/r1/plan", "mission/r1/task-t2"}, got)

		for _, hidden := range []string{"mission/r1/agents/a1/key", "mission/r1/task-t1"} {
			_, err = v.Get(ctx, hidden)
			assert.ErrorIs(t, err, store.ErrNotFound, "get %s", hidden)
			_, err = v.Read(ctx, hidden, 0, 100)
			assert.ErrorIs(t, err, store.ErrNotFound, "read %s", hidden)
			_, err = v.Read(ctx, hidden, 10_000, 100)
			assert.ErrorIs(t, err, store.ErrNotFound, "read %s beyond its end", hidden)
			_, err = v.Edit(ctx, hidden, store.Replace(1, "x"))
			assert.ErrorIs(t, err, store.ErrNotFound, "edit %s", hidden)
			assert.ErrorIs(t, v.Delete(ctx, hidden, 1), store.ErrNotFound, "delete %s", hidden)
		}
		hits, err := v.Search(ctx, "secret key task", store.SearchOptions{})
		require.NoError(t, err)
		for _, h := range hits {
			assert.NotContains(t, h.Path, "agents/a1", "search leaks a1's item")
			assert.NotEqual(t, "mission/r1/task-t1", h.Path)
		}
		assert.Len(t, hits, 1, "only task-t2 matches for this viewer")
	})

	t.Run("paged listing fills pages despite hidden items", func(t *testing.T) {
		v := store.Bind(s, alice, store.BindViewer(store.Viewer{Agent: "nobody"}))
		var got []string
		opts := store.ListOptions{Limit: 1}
		for range 10 {
			p, err := v.List(ctx, "", opts)
			require.NoError(t, err)
			for _, m := range p.Items {
				got = append(got, m.Path)
			}
			if p.Next == "" {
				break
			}
			opts.After = p.Next
		}
		assert.Equal(t, []string{"mission/r1/plan", "project/readme"}, got)
	})

	t.Run("prefixes", func(t *testing.T) {
		v := store.Bind(s, alice, store.BindPrefixes("mission/r1/agents/a2/", "project/"))
		_, err := v.Get(ctx, "project/readme")
		require.NoError(t, err)
		_, err = v.Get(ctx, "mission/r1/plan")
		require.ErrorIs(t, err, store.ErrForbidden)
		assert.Contains(t, err.Error(), "mission/r1/agents/a2/")
		_, err = v.Add(ctx, "memory/x", "x", store.Attrs{})
		assert.ErrorIs(t, err, store.ErrForbidden)
		m, err := v.Add(ctx, "mission/r1/agents/a2/scratch", "x", store.Attrs{})
		require.NoError(t, err)
		assert.Equal(t, int64(1), m.Revision)
		p, err := v.List(ctx, "", store.ListOptions{})
		require.NoError(t, err)
		assert.Len(t, p.Items, 3)
	})

	t.Run("read-only", func(t *testing.T) {
		v := store.Bind(s, alice, store.BindReadOnly(), store.BindPrefixes("project/"))
		_, err := v.Get(ctx, "project/readme")
		require.NoError(t, err)
		_, err = v.Add(ctx, "project/new", "x", store.Attrs{})
		assert.ErrorIs(t, err, store.ErrReadOnly)
		_, err = v.Edit(ctx, "project/readme", store.Replace(1, "x"))
		assert.ErrorIs(t, err, store.ErrReadOnly)
		assert.ErrorIs(t, v.Delete(ctx, "project/readme", 1), store.ErrReadOnly)
	})
}
