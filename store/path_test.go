package store_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/coorflow/coorflow/store"
)

func TestCheckPath(t *testing.T) {
	tests := []struct {
		path string
		ok   bool
	}{
		{"project/a", true},
		{"memory/transcripts/r1/part-1", true},
		{"mission/r1/handoffs/a-b", true},
		{"team/x.y", true},
		{"scratch/a", true},
		{"Project/a", true},
		{"project", false},
		{"/project/a", false},
		{"project/", false},
		{"project/./a", false},
		{"", false},
		{"project/a\x00", false},
		{"project/\xff", false},
	}
	for _, tc := range tests {
		err := store.CheckPath(tc.path)
		if tc.ok {
			assert.NoError(t, err, tc.path)
		} else {
			assert.ErrorIs(t, err, store.ErrInvalidPath, tc.path)
		}
	}
}

func TestCheckSegment(t *testing.T) {
	for _, ok := range []string{"r1", "agent-7", "über"} {
		assert.NoError(t, store.CheckSegment(ok), ok)
	}
	for _, bad := range []string{"", ".", "..", "a/b", "a\nb"} {
		assert.ErrorIs(t, store.CheckSegment(bad), store.ErrInvalidPath, bad)
	}
}

func TestVisibility(t *testing.T) {
	a1t1 := store.Viewer{Task: "t1", Agent: "a1"}
	tests := []struct {
		v     store.Visibility
		w     store.Viewer
		allow bool
	}{
		{store.Public(), store.Viewer{}, true},
		{store.TaskScoped("t1"), a1t1, true},
		{store.TaskScoped("t2"), a1t1, false},
		{store.AgentScoped("a1"), a1t1, true},
		{store.AgentScoped("a2"), a1t1, false},
		{store.AgentScoped("a1"), store.Viewer{Task: "a1"}, false},
		{store.Visibility{Scope: store.ScopeAgent}, store.Viewer{}, false},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.allow, tc.v.Allows(tc.w), "%s allows %+v", tc.v, tc.w)
	}
	for _, s := range []string{"public", "task:t1", "agent:a-1"} {
		v, err := store.ParseVisibility(s)
		assert.NoError(t, err)
		assert.Equal(t, s, v.String())
	}
	for _, s := range []string{"task", "agent:", "secret", "public:x"} {
		_, err := store.ParseVisibility(s)
		assert.ErrorIs(t, err, store.ErrInvalid, s)
	}
}
