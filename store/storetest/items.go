package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/store"
)

const (
	alice = "alice"
	bob   = "bob"
)

func add(t *testing.T, s store.Store, owner, path, content string, a store.Attrs) store.Meta {
	t.Helper()
	m, err := s.Add(t.Context(), owner, path, content, a)
	require.NoError(t, err, "add %s", path)
	return m
}

func jsonAttrs() store.Attrs { return store.Attrs{ContentType: store.ContentJSON} }

func testAddAndGet(t *testing.T, s store.Store) {
	before := time.Now().Add(-time.Second)
	tests := []struct {
		name    string
		path    string
		content string
		attrs   store.Attrs
		want    store.Attrs
	}{
		{
			name: "defaults", path: "project/readme", content: "hello",
			want: store.Attrs{Visibility: store.Public(), ContentType: store.ContentText},
		},
		{
			name: "every attribute set", path: "mission/r1/agents/a1/notes", content: "secret plan",
			attrs: store.Attrs{Labels: map[string]string{"priority": "critical", "team/role": "über-planner"},
				Visibility: store.AgentScoped("a1"), ContentType: store.ContentText},
			want: store.Attrs{Labels: map[string]string{"priority": "critical", "team/role": "über-planner"},
				Visibility: store.AgentScoped("a1"), ContentType: store.ContentText},
		},
		{
			name: "json task-scoped", path: "team/roster", content: `{"a":1}`,
			attrs: store.Attrs{ContentType: store.ContentJSON, Visibility: store.TaskScoped("t7"),
				Labels: map[string]string{"trigger": "search"}},
			want: store.Attrs{ContentType: store.ContentJSON, Visibility: store.TaskScoped("t7"),
				Labels: map[string]string{"trigger": "search"}},
		},
		{
			name: "labels with empty values are no labels", path: "memory/notes/über", content: "",
			attrs: store.Attrs{Labels: map[string]string{"a": "", "b": "1"}},
			want:  store.Attrs{Labels: map[string]string{"b": "1"}, Visibility: store.Public(), ContentType: store.ContentText},
		},
		{
			name: "no label left", path: "memory/notes/empty", content: "",
			attrs: store.Attrs{Labels: map[string]string{"a": ""}},
			want:  store.Attrs{Visibility: store.Public(), ContentType: store.ContentText},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := add(t, s, alice, tc.path, tc.content, tc.attrs)
			assert.Equal(t, tc.path, m.Path)
			assert.Equal(t, tc.want, m.Attrs)
			assert.Equal(t, int64(1), m.Revision)
			assert.Equal(t, int64(len(tc.content)), m.Size)
			assert.True(t, m.Created.After(before), "created %v", m.Created)
			assert.Equal(t, m.Created, m.Updated)

			got, err := s.Get(t.Context(), alice, tc.path)
			require.NoError(t, err)
			assert.Equal(t, tc.content, got.Content)
			assert.Equal(t, m, got.Meta, "Get returns the metadata Add returned")
		})
	}
}

func testAddExisting(t *testing.T, s store.Store) {
	add(t, s, alice, "project/a", "one", store.Attrs{})
	_, err := s.Add(t.Context(), alice, "project/a", "two", store.Attrs{})
	require.ErrorIs(t, err, store.ErrExists)
	assert.Contains(t, err.Error(), "project/a")
	assert.Contains(t, err.Error(), alice)
	got, err := s.Get(t.Context(), alice, "project/a")
	require.NoError(t, err)
	assert.Equal(t, "one", got.Content, "a failed Add leaves the item as it was")
}

func testInvalidPaths(t *testing.T, s store.Store) {
	tests := []struct {
		name, path string
		msg        string // a part of the error message
	}{
		{"namespace only", "project", "names a namespace"},
		{"empty", "", "empty path (want <namespace>/<name>)"},
		{"leading slash", "/project/x", "empty segment"},
		{"trailing slash", "project/x/", "empty segment"},
		{"double slash", "project//x", "empty segment"},
		{"dot dot", "project/../memory/x", `".." segment`},
		{"control character", "project/a\nb", "control character"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			_, err := s.Add(ctx, alice, tc.path, "x", store.Attrs{})
			require.ErrorIs(t, err, store.ErrInvalidPath)
			assert.Contains(t, err.Error(), tc.msg)
			_, err = s.Get(ctx, alice, tc.path)
			assert.ErrorIs(t, err, store.ErrInvalidPath, "get")
			_, err = s.Read(ctx, alice, tc.path, 0, 10)
			assert.ErrorIs(t, err, store.ErrInvalidPath, "read")
			_, err = s.Edit(ctx, alice, tc.path, store.Replace(1, "y"))
			assert.ErrorIs(t, err, store.ErrInvalidPath, "edit")
			assert.ErrorIs(t, s.Delete(ctx, alice, tc.path, 1), store.ErrInvalidPath, "delete")
		})
	}
	t.Run("list and search prefixes", func(t *testing.T) {
		_, err := s.List(t.Context(), alice, "project//", store.ListOptions{})
		require.ErrorIs(t, err, store.ErrInvalidPath)
		assert.Contains(t, err.Error(), "empty segment")
		_, err = s.Search(t.Context(), alice, "x", store.SearchOptions{Prefix: "project/../x"})
		assert.ErrorIs(t, err, store.ErrInvalidPath)
	})
	t.Run("any namespace", func(t *testing.T) {
		for _, p := range []string{"scratch/x", "Project/x"} {
			add(t, s, alice, p, "x", store.Attrs{})
		}
		page, err := s.List(t.Context(), alice, "scratch/", store.ListOptions{})
		require.NoError(t, err)
		require.Len(t, page.Items, 1)
		assert.Equal(t, "scratch/x", page.Items[0].Path)
	})
}

func testInvalidInput(t *testing.T, s store.Store) {
	add(t, s, alice, "project/doc", "text", store.Attrs{})
	add(t, s, alice, "project/obj", `{"a":1}`, jsonAttrs())
	ctx := t.Context()
	tests := []struct {
		name string
		call func() error
		want error
		msg  string
	}{
		{"label key with a space", func() error {
			_, err := s.Add(ctx, alice, "project/x", "", store.Attrs{Labels: map[string]string{"my key": "v"}})
			return err
		}, store.ErrInvalid, `store: add "project/x" (owner "alice"): label key "my key" has a character other than ASCII letters, digits, '.', '_', '-' and '/'`},
		{"empty label key", func() error {
			_, err := s.Add(ctx, alice, "project/x", "", store.Attrs{Labels: map[string]string{"": "v"}})
			return err
		}, store.ErrInvalid, `empty label key`},
		{"label key too long", func() error {
			_, err := s.Add(ctx, alice, "project/x", "", store.Attrs{Labels: map[string]string{strings.Repeat("k", store.MaxLabelKeyLen+1): "v"}})
			return err
		}, store.ErrInvalid, "is longer than 64 bytes"},
		{"label value too long", func() error {
			_, err := s.Add(ctx, alice, "project/x", "", store.Attrs{Labels: map[string]string{"k": strings.Repeat("v", store.MaxLabelValueLen+1)}})
			return err
		}, store.ErrInvalid, `label "k" has a value of 257 bytes, longer than 256`},
		{"label value with a control character", func() error {
			_, err := s.Add(ctx, alice, "project/x", "", store.Attrs{Labels: map[string]string{"k": "a\nb"}})
			return err
		}, store.ErrInvalid, `label "k" has a value that is not UTF-8 text without control characters`},
		{"too many labels", func() error {
			labels := map[string]string{}
			for i := range store.MaxLabels + 1 {
				labels[fmt.Sprint("k", i)] = "v"
			}
			_, err := s.Add(ctx, alice, "project/x", "", store.Attrs{Labels: labels})
			return err
		}, store.ErrInvalid, "33 labels, more than 32"},
		{"unknown content type", func() error {
			_, err := s.Add(ctx, alice, "project/x", "", store.Attrs{ContentType: "yaml"})
			return err
		}, store.ErrInvalid, `unknown content type "yaml"`},
		{"task visibility without id", func() error {
			_, err := s.Add(ctx, alice, "project/x", "", store.Attrs{Visibility: store.Visibility{Scope: store.ScopeTask}})
			return err
		}, store.ErrInvalid, "task visibility needs the task id"},
		{"invalid json", func() error {
			_, err := s.Add(ctx, alice, "project/x", "{oops", jsonAttrs())
			return err
		}, store.ErrInvalid, "not valid JSON"},
		{"NUL byte", func() error {
			_, err := s.Add(ctx, alice, "project/x", "a\x00b", store.Attrs{})
			return err
		}, store.ErrInvalid, "NUL"},
		{"invalid UTF-8", func() error {
			_, err := s.Add(ctx, alice, "project/x", "a\xffb", store.Attrs{})
			return err
		}, store.ErrInvalid, "UTF-8"},
		{"empty owner", func() error {
			_, err := s.Get(ctx, "", "project/doc")
			return err
		}, store.ErrInvalid, "empty owner"},
		{"edit without revision", func() error {
			_, err := s.Edit(ctx, alice, "project/doc", store.Replace(0, "x"))
			return err
		}, store.ErrInvalid, "needs the revision"},
		{"edit without kind", func() error {
			_, err := s.Edit(ctx, alice, "project/doc", store.Edit{Revision: 1})
			return err
		}, store.ErrInvalid, "edit kind missing"},
		{"search-replace with empty search text", func() error {
			_, err := s.Edit(ctx, alice, "project/doc", store.SearchReplace(1, "", "x"))
			return err
		}, store.ErrInvalid, "empty search text"},
		{"edit making json invalid", func() error {
			_, err := s.Edit(ctx, alice, "project/obj", store.SearchReplace(1, `"a":1`, `"a":`))
			return err
		}, store.ErrInvalid, "not valid JSON"},
		{"edit to an invalid attribute", func() error {
			_, err := s.Edit(ctx, alice, "project/doc", store.SetAttrs(1, store.Attrs{Labels: map[string]string{"k": "\x00"}}))
			return err
		}, store.ErrInvalid, `label "k" has a value that is not UTF-8 text`},
		{"edit to an unknown content type", func() error {
			_, err := s.Edit(ctx, alice, "project/doc", store.SetAttrs(1, store.Attrs{ContentType: "yaml"}))
			return err
		}, store.ErrInvalid, `unknown content type "yaml"`},
		{"delete without revision", func() error {
			return s.Delete(ctx, alice, "project/doc", 0)
		}, store.ErrInvalid, "needs the revision"},
		{"empty query", func() error {
			_, err := s.Search(ctx, alice, "  \t", store.SearchOptions{})
			return err
		}, store.ErrInvalid, "empty query"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			require.ErrorIs(t, err, tc.want)
			assert.Contains(t, err.Error(), tc.msg)
			assert.True(t, strings.HasPrefix(err.Error(), "store: "), "message %q has the package prefix", err)
		})
	}
	_, err := s.Get(ctx, alice, "project/x")
	assert.ErrorIs(t, err, store.ErrNotFound, "no invalid Add stored anything")
	for _, p := range []string{"project/doc", "project/obj"} {
		got, err := s.Get(ctx, alice, p)
		require.NoError(t, err)
		assert.Equal(t, int64(1), got.Revision, "no invalid Edit changed %s", p)
	}
}

// testLabelsAreCopied: the store keeps labels of its own; changing the map
// a caller passed in or got back changes nothing stored.
func testLabelsAreCopied(t *testing.T, s store.Store) {
	in := map[string]string{"k": "v"}
	m := add(t, s, alice, "project/doc", "x", store.Attrs{Labels: in})
	in["k"] = "changed after Add"
	m.Labels["k"] = "changed in Add's result"
	got := content(t, s, alice, "project/doc")
	assert.Equal(t, map[string]string{"k": "v"}, got.Labels)
	got.Labels["k"] = "changed in Get's result"

	patch := map[string]string{"n": "1"}
	m, err := s.Edit(t.Context(), alice, "project/doc", store.SetAttrs(1, store.Attrs{Labels: patch}))
	require.NoError(t, err)
	patch["n"] = "changed after Edit"
	m.Labels["n"] = "changed in Edit's result"
	p, err := s.List(t.Context(), alice, "project/", store.ListOptions{})
	require.NoError(t, err)
	require.Len(t, p.Items, 1)
	assert.Equal(t, map[string]string{"k": "v", "n": "1"}, p.Items[0].Labels)
	p.Items[0].Labels["k"] = "changed in List's result"
	assert.Equal(t, map[string]string{"k": "v", "n": "1"}, content(t, s, alice, "project/doc").Labels)
}
