package factory_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/factory"
	"github.com/coorflow/coorflow/store"
	smem "github.com/coorflow/coorflow/store/memory"
)

func TestRegistryListsEditsAndRemovesAgentsPerOwner(t *testing.T) {
	s := smem.New(store.Config{})
	acme, other := factory.NewRegistry(s, "acme"), factory.NewRegistry(s, "other")
	ctx := t.Context()

	names := func(r *factory.Registry) []string {
		as, err := r.List(ctx)
		require.NoError(t, err)
		var out []string
		for _, a := range as {
			out = append(out, a.Name)
		}
		return out
	}
	assert.Equal(t, []string{"coder", "reporter", "researcher"}, names(acme), "the built-in agents are always there")

	_, err := acme.Add(ctx, factory.Agent{Name: "analyst", Description: "Analyses.", Tier: "reasoning", Prompt: "p1"})
	require.NoError(t, err)
	assert.Equal(t, []string{"analyst", "coder", "reporter", "researcher"}, names(acme))
	assert.Equal(t, []string{"coder", "reporter", "researcher"}, names(other), "owners are isolated")
	_, err = other.Get(ctx, "analyst")
	require.ErrorIs(t, err, factory.ErrAgentNotFound)

	a, err := acme.Get(ctx, "analyst")
	require.NoError(t, err)
	stale := a
	a.Prompt, a.PromptPinned = "p2", true
	_, err = acme.Update(ctx, a)
	require.NoError(t, err)
	got, err := factory.NewRegistry(s, "acme").Get(ctx, "analyst")
	require.NoError(t, err)
	assert.Equal(t, "p2", got.Prompt, "the edit persisted")
	assert.True(t, got.PromptPinned)

	stale.Prompt = "p3"
	_, err = acme.Update(ctx, stale)
	require.ErrorIs(t, err, store.ErrConflict, "a stale edit is a conflict, not an overwrite")

	// A built-in agent is stored by its first edit, and removing the edit
	// restores the original.
	r, err := acme.Get(ctx, "researcher")
	require.NoError(t, err)
	assert.Equal(t, int64(0), r.Revision)
	r.Description = "Our own researcher."
	_, err = acme.Update(ctx, r)
	require.NoError(t, err)
	r, err = acme.Get(ctx, "researcher")
	require.NoError(t, err)
	assert.Equal(t, "Our own researcher.", r.Description)
	require.NoError(t, acme.Remove(ctx, "researcher"))
	r, err = acme.Get(ctx, "researcher")
	require.NoError(t, err)
	assert.NotEqual(t, "Our own researcher.", r.Description)
	err = acme.Remove(ctx, "researcher")
	require.ErrorIs(t, err, factory.ErrBuiltin)
	assert.EqualError(t, err, `factory: built-in agent: "researcher" cannot be removed; edit it instead`)

	require.NoError(t, acme.Remove(ctx, "analyst"))
	err = acme.Remove(ctx, "analyst")
	assert.EqualError(t, err, `factory: agent not found: "analyst" (owner "acme")`)
}
