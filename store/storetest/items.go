package storetest

import (
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
			want: store.Attrs{Priority: store.PriorityNormal, Trust: store.TrustTool,
				Sensitivity: store.SensitivityInternal, Trigger: store.TriggerIndex,
				Visibility: store.Public(), ContentType: store.ContentText},
		},
		{
			name: "every attribute set", path: "mission/r1/agents/a1/notes", content: "secret plan",
			attrs: store.Attrs{Priority: store.PriorityCritical, Trust: store.TrustSystem,
				Sensitivity: store.SensitivitySecret, Trigger: store.TriggerAlways,
				Visibility: store.AgentScoped("a1"), ContentType: store.ContentText},
			want: store.Attrs{Priority: store.PriorityCritical, Trust: store.TrustSystem,
				Sensitivity: store.SensitivitySecret, Trigger: store.TriggerAlways,
				Visibility: store.AgentScoped("a1"), ContentType: store.ContentText},
		},
		{
			name: "json task-scoped", path: "team/roster", content: `{"a":1}`,
			attrs: store.Attrs{ContentType: store.ContentJSON, Visibility: store.TaskScoped("t7"),
				Trigger: store.TriggerSearch, Priority: store.PriorityLow, Trust: store.TrustUser,
				Sensitivity: store.SensitivityPublic},
			want: store.Attrs{ContentType: store.ContentJSON, Visibility: store.TaskScoped("t7"),
				Trigger: store.TriggerSearch, Priority: store.PriorityLow, Trust: store.TrustUser,
				Sensitivity: store.SensitivityPublic},
		},
		{
			name: "empty content, unicode path", path: "memory/notes/über", content: "",
			want: store.Attrs{Priority: store.PriorityNormal, Trust: store.TrustTool,
				Sensitivity: store.SensitivityInternal, Trigger: store.TriggerIndex,
				Visibility: store.Public(), ContentType: store.ContentText},
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
		{"unknown priority", func() error {
			_, err := s.Add(ctx, alice, "project/x", "", store.Attrs{Priority: "urgent"})
			return err
		}, store.ErrInvalid, `unknown priority "urgent"`},
		{"unknown trust", func() error {
			_, err := s.Add(ctx, alice, "project/x", "", store.Attrs{Trust: "friend"})
			return err
		}, store.ErrInvalid, `unknown trust "friend"`},
		{"unknown sensitivity", func() error {
			_, err := s.Add(ctx, alice, "project/x", "", store.Attrs{Sensitivity: "top"})
			return err
		}, store.ErrInvalid, `unknown sensitivity "top"`},
		{"unknown trigger", func() error {
			_, err := s.Add(ctx, alice, "project/x", "", store.Attrs{Trigger: "never"})
			return err
		}, store.ErrInvalid, `unknown trigger "never"`},
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
			_, err := s.Edit(ctx, alice, "project/doc", store.SetAttrs(1, store.Attrs{Trigger: "sometimes"}))
			return err
		}, store.ErrInvalid, `unknown trigger "sometimes"`},
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
