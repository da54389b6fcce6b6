package board_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/board"
	"github.com/coorflow/coorflow/store/memory"
)

func TestPromptOf(t *testing.T) {
	defaults := board.Prompt{Priority: board.PriorityNormal, Trust: board.TrustTool,
		Sensitivity: board.SensitivityInternal, Trigger: board.TriggerIndex}
	assert.Equal(t, defaults, board.PromptOf(store.Meta{}), "an item without labels")

	all := board.Prompt{Priority: board.PriorityCritical, Trust: board.TrustSystem,
		Sensitivity: board.SensitivitySecret, Trigger: board.TriggerAlways}
	assert.Equal(t, map[string]string{"priority": "critical", "trust": "system", "sensitivity": "secret", "trigger": "always"}, all.Labels())
	assert.Equal(t, all, board.PromptOf(store.Meta{Attrs: store.Attrs{Labels: all.Labels()}}))

	some := board.Prompt{Trigger: board.TriggerSearch}
	assert.Equal(t, map[string]string{"trigger": "search"}, some.Labels(), "zero fields are no labels")
	got := board.PromptOf(store.Meta{Attrs: store.Attrs{Labels: map[string]string{"trigger": "search", "team": "x"}}})
	assert.Equal(t, board.TriggerSearch, got.Trigger)
	assert.Equal(t, board.PriorityNormal, got.Priority, "other labels are not prompt metadata")
}

// The labels survive a round trip through each backend.
func TestPromptIsKeptByTheStore(t *testing.T) {
	backends(t, func(t *testing.T, s store.Store, b *board.Board) {
		ref, err := b.PutOutput(t.Context(), "report", "text", board.WithPriority(board.PriorityLow), board.WithSensitivity(board.SensitivityPublic))
		require.NoError(t, err)
		it, err := s.Get(t.Context(), "alice", ref)
		require.NoError(t, err)
		assert.Equal(t, board.Prompt{Priority: board.PriorityLow, Trust: board.TrustModel, Sensitivity: board.SensitivityPublic,
			Trigger: board.TriggerIndex}, board.PromptOf(it.Meta))
	})
}

func TestUnknownPromptValuesAreRefused(t *testing.T) {
	s := memory.New(store.Config{})
	b, err := board.New(s, "alice", "r1")
	require.NoError(t, err)
	ctx := t.Context()
	tests := []struct {
		name  string
		write func() error
		msg   string
	}{
		{"priority", func() error {
			_, err := b.PutOutput(ctx, "o", "x", board.WithPriority("urgent"))
			return err
		}, `board: output "o" of run "r1": store: invalid argument: unknown priority "urgent" (want critical, high, normal or low)`},
		{"trust", func() error {
			_, err := b.PutHandoff(ctx, "a", "b", "x", board.WithTrust("friend"))
			return err
		}, `board: handoff "a" to "b" in run "r1": store: invalid argument: unknown trust "friend" (want system, user, model or tool)`},
		{"sensitivity", func() error {
			_, err := b.PutPrivate(ctx, "a", "n", "x", board.WithSensitivity("top"))
			return err
		}, `board: private item "n" of agent "a" in run "r1": store: invalid argument: unknown sensitivity "top" (want public, internal or secret)`},
		{"trigger", func() error {
			_, err := b.SetPlan(ctx, map[string]any{}, 0, board.WithTrigger("never"))
			return err
		}, `board: plan of run "r1": store: invalid argument: unknown trigger "never" (want always, index or search)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.write()
			require.ErrorIs(t, err, store.ErrInvalid)
			assert.EqualError(t, err, tc.msg)
		})
	}
	p, err := s.List(ctx, "alice", "", store.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, p.Items, "nothing was written")

	t.Run("an edit of the plan", func(t *testing.T) {
		m, err := b.SetPlan(ctx, map[string]any{"a": 1}, 0)
		require.NoError(t, err)
		_, err = b.SetPlan(ctx, map[string]any{"a": 2}, m.Revision, board.WithPriority("urgent"))
		require.ErrorIs(t, err, store.ErrInvalid)
		var plan map[string]any
		got, err := b.GetPlan(ctx, &plan)
		require.NoError(t, err)
		assert.Equal(t, m.Revision, got.Revision, "the plan is unchanged")
		assert.Equal(t, board.PriorityCritical, board.PromptOf(got).Priority)
	})
}
