package board_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/board"
	"github.com/coorflow/coorflow/store/memory"
	"github.com/coorflow/coorflow/store/sqlite"
)

// backends runs fn against a board over each kind of store: the board
// must behave the same over any store.Store.
func backends(t *testing.T, fn func(t *testing.T, s store.Store, b *board.Board)) {
	t.Helper()
	opens := map[string]func(t *testing.T) store.Store{
		"memory": func(t *testing.T) store.Store { return memory.New(store.Config{}) },
		"sqlite": func(t *testing.T) store.Store {
			s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "b.db"))
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, s.Close()) })
			return s
		},
	}
	for _, name := range []string{"memory", "sqlite"} {
		t.Run(name, func(t *testing.T) {
			s := opens[name](t)
			b, err := board.New(s, "alice", "run-1")
			require.NoError(t, err)
			fn(t, s, b)
		})
	}
}

type plan struct {
	Title string   `json:"title"`
	Steps []string `json:"steps"`
	Notes string   `json:"notes,omitempty"`
}

func TestNew(t *testing.T) {
	s := memory.New(store.Config{})
	for _, bad := range []string{"", "a/b", ".."} {
		_, err := board.New(s, "alice", bad)
		assert.ErrorIs(t, err, store.ErrInvalidPath, "run %q", bad)
	}
	_, err := board.New(s, "", "r")
	assert.ErrorIs(t, err, store.ErrInvalid)
	b, err := board.New(s, "alice", "r-9")
	require.NoError(t, err)
	assert.Equal(t, "mission/r-9/", b.Prefix())
	assert.Equal(t, "r-9", b.Run())
	assert.Equal(t, "alice", b.Owner())
}

func TestPlan(t *testing.T) {
	backends(t, func(t *testing.T, s store.Store, b *board.Board) {
		ctx := t.Context()
		m, err := b.SetPlan(ctx, plan{Title: "research", Steps: []string{"search"}}, 0)
		require.NoError(t, err)
		assert.Equal(t, store.ContentJSON, m.ContentType)
		assert.Equal(t, board.Prompt{Priority: board.PriorityCritical, Trust: board.TrustModel,
			Sensitivity: board.SensitivityInternal, Trigger: board.TriggerAlways}, board.PromptOf(m))

		_, err = b.SetPlan(ctx, plan{Title: "again"}, 0)
		require.ErrorIs(t, err, store.ErrExists)

		var p plan
		m, err = b.GetPlan(ctx, &p)
		require.NoError(t, err)
		assert.Equal(t, plan{Title: "research", Steps: []string{"search"}}, p)
		read := m.Revision

		// Two planners edit from the same revision: different fields merge.
		_, err = b.SetPlan(ctx, plan{Title: "research v2", Steps: []string{"search"}}, read)
		require.NoError(t, err)
		_, err = b.SetPlan(ctx, plan{Title: "research", Steps: []string{"search", "write"}}, read)
		require.NoError(t, err)
		_, err = b.GetPlan(ctx, &p)
		require.NoError(t, err)
		assert.Equal(t, plan{Title: "research v2", Steps: []string{"search", "write"}}, p)

		// The same field: a conflict.
		_, err = b.SetPlan(ctx, plan{Title: "other", Steps: []string{"search"}}, read)
		var ce *store.ConflictError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, []string{"title"}, ce.Fields)

		_, err = b.SetPlan(ctx, func() {}, 0)
		assert.ErrorContains(t, err, "encode plan")
	})
}

func TestProgressConcurrentAppends(t *testing.T) {
	backends(t, func(t *testing.T, s store.Store, b *board.Board) {
		const agents = 10
		errs := make([]error, agents)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range agents {
			wg.Go(func() {
				<-start
				_, errs[i] = b.AppendProgress(t.Context(), fmt.Sprintf("a%d", i), fmt.Sprintf("step %d done\n", i))
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "agent %d", i)
		}
		log, err := b.Progress(t.Context())
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSuffix(log, "\n"), "\n")
		assert.Len(t, lines, agents)
		for i := range agents {
			assert.Contains(t, lines, fmt.Sprintf("[a%d] step %d done", i, i))
		}
	})
}

func TestDecisions(t *testing.T) {
	backends(t, func(t *testing.T, s store.Store, b *board.Board) {
		ds, err := b.Decisions(t.Context())
		require.NoError(t, err)
		assert.Empty(t, ds)
		_, err = b.AddDecision(t.Context(), board.Decision{Author: "planner", Text: "use Go", Reason: "team knows it"})
		require.NoError(t, err)
		_, err = b.AddDecision(t.Context(), board.Decision{Text: "skip the survey"})
		require.NoError(t, err)
		_, err = b.AddDecision(t.Context(), board.Decision{})
		require.ErrorIs(t, err, store.ErrInvalid)

		ds, err = b.Decisions(t.Context())
		require.NoError(t, err)
		require.Len(t, ds, 2)
		assert.Equal(t, "use Go", ds[0].Text)
		assert.Equal(t, "team knows it", ds[0].Reason)
		assert.Equal(t, "skip the survey", ds[1].Text)
		assert.False(t, ds[1].At.IsZero())
	})
}

func TestHandoffs(t *testing.T) {
	backends(t, func(t *testing.T, s store.Store, b *board.Board) {
		ctx := t.Context()
		// Ids with hyphens: these two pairs must not collide.
		ref1, err := b.PutHandoff(ctx, "a-b", "c", "from a-b to c")
		require.NoError(t, err)
		ref2, err := b.PutHandoff(ctx, "a", "b-c", "from a to b-c")
		require.NoError(t, err)
		assert.NotEqual(t, ref1, ref2)
		assert.True(t, strings.HasPrefix(ref1, "mission/run-1/handoffs/"), ref1)
		_, err = b.PutHandoff(ctx, "coder-1", "c", "from coder-1 to c", board.WithVisibility(store.TaskScoped("step-3")))
		require.NoError(t, err)

		text, err := b.Handoff(ctx, store.Viewer{Agent: "c"}, "a-b", "c")
		require.NoError(t, err)
		assert.Equal(t, "from a-b to c", text)

		_, err = b.PutHandoff(ctx, "a-b", "c", "from a-b to c")
		require.NoError(t, err, "writing the same handoff again is fine")
		_, err = b.PutHandoff(ctx, "a-b", "c", "something else")
		require.ErrorIs(t, err, store.ErrExists)

		hs, err := b.HandoffsTo(ctx, store.Viewer{Agent: "c", Task: "step-3"}, "c")
		require.NoError(t, err)
		require.Len(t, hs, 2)
		assert.Equal(t, board.Handoff{From: "a-b", To: "c", Ref: ref1, Text: "from a-b to c"}, hs[0])
		assert.Equal(t, "coder-1", hs[1].From)

		hs, err = b.HandoffsTo(ctx, store.Viewer{Agent: "c", Task: "step-9"}, "c")
		require.NoError(t, err)
		assert.Len(t, hs, 1, "the task-scoped handoff is hidden from another task")

		_, err = b.PutHandoff(ctx, "a/b", "c", "x")
		assert.ErrorIs(t, err, store.ErrInvalidPath)
	})
}

func TestOutputsReadBackByPage(t *testing.T) {
	backends(t, func(t *testing.T, s store.Store, b *board.Board) {
		ctx := t.Context()
		text := strings.Repeat("line of the full report\n", 400) // ~9.6 KB
		ref, err := b.PutOutput(ctx, "step-2/report", text)
		require.NoError(t, err)
		assert.Equal(t, "mission/run-1/outputs/step-2/report", ref)

		var got strings.Builder
		who := store.Viewer{Task: "step-5", Agent: "reporter-1"}
		for off, pages := int64(0), 0; ; pages++ {
			require.Less(t, pages, 100)
			c, err := b.Read(ctx, who, ref, off, 1000)
			require.NoError(t, err)
			got.WriteString(c.Content)
			if c.EOF {
				break
			}
			off = c.Next
		}
		assert.Equal(t, text, got.String())

		_, err = b.Read(ctx, who, ref, int64(len(text))+1, 10)
		assert.ErrorIs(t, err, store.ErrOffset)

		_, err = b.PutOutput(ctx, "step-2/report", text)
		require.NoError(t, err, "idempotent")
		_, err = b.PutOutput(ctx, "step-2/report", "changed")
		require.ErrorIs(t, err, store.ErrExists)
		_, err = b.PutOutput(ctx, "../escape", "x")
		require.ErrorIs(t, err, store.ErrInvalidPath)

		// A reference outside this run's board is not readable through it.
		other, err := board.New(s, "alice", "run-2")
		require.NoError(t, err)
		ref2, err := other.PutOutput(ctx, "x", "run 2's output")
		require.NoError(t, err)
		_, err = b.Read(ctx, who, ref2, 0, 10)
		assert.ErrorIs(t, err, store.ErrNotFound)
	})
}

func TestPrivateBoards(t *testing.T) {
	backends(t, func(t *testing.T, s store.Store, b *board.Board) {
		ctx := t.Context()
		a1 := store.Viewer{Task: "step-1", Agent: "a1"}
		a2 := store.Viewer{Task: "step-1", Agent: "a2"} // same task, another agent

		ref, err := b.PutPrivate(ctx, "a1", "credentials", "API_KEY=s3cr3t",
			board.WithSensitivity(board.SensitivitySecret),
			board.WithVisibility(store.Public())) // cannot widen a private item
		require.NoError(t, err)
		assert.Equal(t, "mission/run-1/agents/a1/credentials", ref)

		it, err := b.Get(ctx, a1, ref)
		require.NoError(t, err)
		assert.Equal(t, "API_KEY=s3cr3t", it.Content)
		assert.Equal(t, store.AgentScoped("a1"), it.Visibility)
		assert.Equal(t, board.SensitivitySecret, board.PromptOf(it.Meta).Sensitivity)

		for name, who := range map[string]store.Viewer{"another agent": a2, "no identity": {}, "engine on the same task": {Task: "step-1"}} {
			t.Run(name, func(t *testing.T) {
				_, err := b.Get(ctx, who, ref)
				assert.ErrorIs(t, err, store.ErrNotFound, "get")
				_, err = b.Read(ctx, who, ref, 0, 100)
				assert.ErrorIs(t, err, store.ErrNotFound, "read")
				_, err = b.Read(ctx, who, ref, 1<<20, 100)
				assert.ErrorIs(t, err, store.ErrNotFound, "read beyond the end")
				metas, err := b.Visible(ctx, who)
				require.NoError(t, err)
				for _, m := range metas {
					assert.NotContains(t, m.Path, "agents/a1", "listing leaks a1's board")
				}
			})
		}

		// Overwriting one's own private item is allowed.
		_, err = b.PutPrivate(ctx, "a1", "credentials", "API_KEY=rotated")
		require.NoError(t, err)
		it, err = b.Get(ctx, a1, ref)
		require.NoError(t, err)
		assert.Equal(t, "API_KEY=rotated", it.Content)
		assert.Equal(t, int64(2), it.Revision)

		_, err = b.PutPrivate(ctx, "a/1", "x", "y")
		assert.ErrorIs(t, err, store.ErrInvalidPath)
	})
}

func TestVisible(t *testing.T) {
	backends(t, func(t *testing.T, s store.Store, b *board.Board) {
		ctx := t.Context()
		_, err := b.SetPlan(ctx, plan{Title: "p"}, 0)
		require.NoError(t, err)
		_, err = b.AppendProgress(ctx, "planner", "started")
		require.NoError(t, err)
		_, err = b.PutOutput(ctx, "public-result", "for all")
		require.NoError(t, err)
		_, err = b.PutOutput(ctx, "t1-notes", "for task t1", board.WithVisibility(store.TaskScoped("t1")))
		require.NoError(t, err)
		_, err = b.PutOutput(ctx, "t2-notes", "for task t2", board.WithVisibility(store.TaskScoped("t2")))
		require.NoError(t, err)
		_, err = b.PutPrivate(ctx, "a1", "scratch", "a1 thinking")
		require.NoError(t, err)
		_, err = b.PutPrivate(ctx, "a2", "secret", "a2's token", board.WithSensitivity(board.SensitivitySecret))
		require.NoError(t, err)
		// An item on a2's board that is (wrongly) labelled public is still
		// private: the path decides first.
		_, err = s.Add(ctx, "alice", "mission/run-1/agents/a2/mislabelled", "x", store.Attrs{})
		require.NoError(t, err)
		// Another run's board is not part of this one.
		_, err = s.Add(ctx, "alice", "mission/run-2/plan", "{}", store.Attrs{})
		require.NoError(t, err)

		tests := []struct {
			who  store.Viewer
			want []string
		}{
			{store.Viewer{Task: "t1", Agent: "a1"}, []string{"agents/a1/scratch", "outputs/public-result", "outputs/t1-notes", "plan", "progress"}},
			{store.Viewer{Task: "t2", Agent: "a2"}, []string{"agents/a2/mislabelled", "agents/a2/secret", "outputs/public-result", "outputs/t2-notes", "plan", "progress"}},
			{store.Viewer{Task: "t3", Agent: "a3"}, []string{"outputs/public-result", "plan", "progress"}},
		}
		for _, tc := range tests {
			t.Run(tc.who.Agent, func(t *testing.T) {
				metas, err := b.Visible(ctx, tc.who)
				require.NoError(t, err)
				var got []string
				for _, m := range metas {
					got = append(got, strings.TrimPrefix(m.Path, b.Prefix()))
					if board.PromptOf(m).Sensitivity == board.SensitivitySecret {
						assert.Equal(t, "a2", tc.who.Agent, "secret item shown to %s", tc.who.Agent)
					}
				}
				assert.Equal(t, tc.want, got)
			})
		}
	})
}
