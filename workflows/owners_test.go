package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/metaprompt"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/store"
	smem "github.com/coorflow/coorflow/store/memory"
	"github.com/coorflow/coorflow/workflows"
)

// TestOneCompiledWorkflowKeepsEachRunOwnersMetaPromptsApart holds the
// meta-prompt half of finding 8 of issue 11: the meta-prompt cache was
// written and read under the owner the workflow was compiled for, so a
// second owner served by the same process got the first owner's prompt.
// The coor file, compiled once, runs for alice and then bob: each run
// writes its own prompt under its own owner.
func TestOneCompiledWorkflowKeepsEachRunOwnersMetaPromptsApart(t *testing.T) {
	var rules []scripted.Rule
	for agent, replies := range coorScript(t).Agents {
		rules = append(rules, scripted.Rule{Agent: agent, Reply: replies[0]})
	}
	model := scripted.New(scripted.Script{Rules: rules})
	st := smem.New(store.Config{})
	f, err := workflows.Builtin("coor")
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), workflows.Env{Models: staticModels(t, model), Store: st, Owner: "default",
		Getenv: env(nil), Graph: []graph.Option{graph.WithSaver(memory.New())}})
	require.NoError(t, err)

	for _, owner := range []string{"alice", "bob"} {
		as := graph.WithRuntime(map[string]any{store.RuntimeOwner: owner})
		for _, err := range r.Stream(t.Context(), graph.Input(nodes.Input.Set("Compare two engines please")), graph.Thread(owner), as) {
			require.NoError(t, err)
		}
		res, err := r.Invoke(t.Context(), nil, graph.Thread(owner), graph.Resume("accept"), as)
		require.NoError(t, err)
		assert.Contains(t, nodes.Answer.Get(res.State), "# Report", owner)
	}

	assert.Len(t, model.CallsFor("metaprompt:perf_analyst"), 2, "bob's run does not read the prompt alice's run wrote")
	for owner, want := range map[string]int{"alice": 1, "bob": 1, "default": 0} {
		page, err := st.List(t.Context(), owner, metaprompt.CachePrefix, store.ListOptions{})
		require.NoError(t, err)
		assert.Len(t, page.Items, want, "cached prompts of %s", owner)
	}
}
