package factory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/factory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/nodes"
	"github.com/coorflow/coorflow/nodes/plan"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/board"
	smem "github.com/coorflow/coorflow/store/memory"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/window"
)

// twoSteps: s1 (researcher) and s2 (coder), independent.
func twoSteps() *plan.Plan {
	return &plan.Plan{Title: "Two", Steps: []plan.Step{
		{ID: "s1", AgentName: "researcher", Title: "One", Description: "Do one.", StepType: plan.StepResearch},
		{ID: "s2", AgentName: "coder", Title: "Two", Description: "Do two.", StepType: plan.StepProcessing},
	}}
}

func TestAnAgentSeesOnlyTheBoardItemsItsLabelAllows(t *testing.T) {
	s := smem.New(store.Config{})
	b, err := board.New(s, "acme", "local")
	require.NoError(t, err)
	ctx := t.Context()
	always := board.WithTrigger(board.TriggerAlways)
	_, err = b.PutPrivate(ctx, "researcher.s1", "credentials", "SECRET-RESEARCHER-ONLY", always)
	require.NoError(t, err)
	_, err = b.PutOutput(ctx, "brief-s2", "TASK-S2-NOTE", always, board.WithVisibility(store.TaskScoped("s2")))
	require.NoError(t, err)
	_, err = b.PutOutput(ctx, "style", "PUBLIC-STYLE-GUIDE", always)
	require.NoError(t, err)
	// Shared notes are any always-loaded item outside outputs/, handoffs/
	// and the progress log; write two through the store.
	_, err = s.Add(ctx, "acme", b.Prefix()+"notes/public", "PUBLIC-NOTE", store.Attrs{Labels: board.Prompt{Trigger: board.TriggerAlways}.Labels()})
	require.NoError(t, err)
	_, err = s.Add(ctx, "acme", b.Prefix()+"notes/s2-only", "TASK-S2-ONLY", store.Attrs{Labels: board.Prompt{Trigger: board.TriggerAlways}.Labels(), Visibility: store.TaskScoped("s2")})
	require.NoError(t, err)

	e := newEnv(t, s, scripted.Script{Agents: map[string][]scripted.Reply{
		"researcher": {answer("R", 0.9)}, "coder": {answer("C", 0.9)},
	}})
	_, err = e.team(t, factory.TeamConfig{}).Invoke(ctx, graph.Input(nodes.PlanKey.Set(twoSteps())))
	require.NoError(t, err)

	researcher := e.model.CallsFor("researcher")[0].Prompt()
	coder := e.model.CallsFor("coder")[0].Prompt()
	assert.Contains(t, researcher, "SECRET-RESEARCHER-ONLY", "its own private board")
	assert.NotContains(t, coder, "SECRET-RESEARCHER-ONLY", "another agent's private board")
	assert.Contains(t, coder, "TASK-S2-ONLY")
	assert.NotContains(t, researcher, "TASK-S2-ONLY", "an item of another task")
	assert.Contains(t, researcher, "PUBLIC-NOTE")
	assert.Contains(t, coder, "PUBLIC-NOTE")
	assert.NotContains(t, researcher+coder, "PUBLIC-STYLE-GUIDE", "outputs reach a step only as handoffs")
}

func TestRuntimeSecretsReachToolsButNeverAPrompt(t *testing.T) {
	const secret = "sk-live-0123456789"
	var seen []string
	deploy := tools.Func("deploy", "Deploys with the caller's key.", nil, func(ctx context.Context, args json.RawMessage) (string, error) {
		key := graph.RuntimeString(ctx, "api_key")
		seen = append(seen, key)
		if key == "" {
			return "", fmt.Errorf("no key")
		}
		return "deployed with the caller's key", nil
	})
	s := smem.New(store.Config{})
	e := newEnv(t, s, scripted.Script{Agents: map[string][]scripted.Reply{
		"deployer": {{ToolCalls: []scripted.ToolCall{{Name: "deploy"}}}, answer("DEPLOYED", 0.9)},
	}})
	require.NoError(t, e.tools.Register(deploy))
	_, err := e.reg.Add(t.Context(), factory.Agent{Name: "deployer", Description: "Deploys.", Tier: "basic", Tools: []string{"deploy"},
		Prompt: "You deploy."})
	require.NoError(t, err)
	pl := &plan.Plan{Title: "Ship", Steps: []plan.Step{{ID: "s1", AgentName: "deployer", Title: "Deploy", Description: "Deploy it.", StepType: plan.StepProcessing}}}
	res, err := e.team(t, factory.TeamConfig{}).Invoke(t.Context(), graph.Input(nodes.PlanKey.Set(pl)),
		graph.WithRuntime(map[string]any{"api_key": secret, "user_id": "u-42"}))
	require.NoError(t, err)
	assert.Equal(t, []string{secret}, seen, "the tool of the sub-agent read the key")
	assert.Equal(t, plan.StepDone, nodes.PlanKey.Get(res.State).Step("s1").Result.Status)
	for _, c := range e.model.Calls() {
		all, err := json.Marshal(c.Messages)
		require.NoError(t, err)
		assert.NotContains(t, string(all), secret, "call %s #%d", c.Agent, c.Turn)
	}
	state, err := json.Marshal(res.State)
	require.NoError(t, err)
	assert.NotContains(t, string(state), secret)
}

func TestEveryAgentCallLeavesASnapshotOfWhatItSaw(t *testing.T) {
	e := newEnv(t, smem.New(store.Config{}), fullScript())
	var snaps []window.Snapshot
	var paths []string
	for ev, err := range e.team(t, factory.TeamConfig{}).Stream(t.Context(), graph.Input(nodes.PlanKey.Set(twoBranches())), graph.Events(graph.EventCustom), graph.CustomEvents(agentevent.EventSnapshot)) {
		require.NoError(t, err)
		snaps = append(snaps, ev.Data.(window.Snapshot))
		paths = append(paths, ev.Path)
	}
	// One per model call: the builders', the meta-prompt stage's and the
	// step agents', each labelled with its caller.
	calls := e.model.Calls()
	require.Len(t, snaps, len(calls), "one snapshot per model call")
	var steps int
	for i := range snaps {
		if strings.Contains(paths[i], "/step:") {
			steps++
		}
	}
	assert.Equal(t, 6, steps, "one per step agent call")
	for _, c := range calls {
		assert.True(t, slices.ContainsFunc(snaps, func(s window.Snapshot) bool { return s.Agent == c.Agent }), "a snapshot of %s", c.Agent)
	}
	var a2 *window.Snapshot
	for i := range snaps {
		if strings.Contains(paths[i], "step:a2") {
			a2 = &snaps[i]
		}
	}
	require.NotNil(t, a2)
	h, ok := a2.Part("handoff:a1")
	require.True(t, ok, "a2's snapshot shows a1's handoff as a part of its own")
	assert.True(t, h.Included)
	assert.Positive(t, h.Tokens)
	for _, name := range []string{"system", "task"} {
		_, ok := a2.Part(name)
		assert.True(t, ok, name)
	}
	_, ok = a2.Part("handoff:b1")
	assert.False(t, ok)
}

func TestARunForAnOwnerUsesThatOwnersAgentsAndBoard(t *testing.T) {
	s := smem.New(store.Config{})
	e := newEnv(t, s, fullScript())
	r := e.team(t, factory.TeamConfig{}, graph.WithSaver(memory.New()))
	res, err := r.Invoke(t.Context(), graph.Input(nodes.PlanKey.Set(twoBranches())), graph.Thread("alice/web-1"),
		graph.WithRuntime(map[string]any{store.RuntimeOwner: "alice"}))
	require.NoError(t, err, "a thread id with a slash is one board segment")
	pl := nodes.PlanKey.Get(res.State)
	assert.True(t, strings.HasPrefix(pl.Step("a1").Result.Ref, "mission/alice%2Fweb-1/"), pl.Step("a1").Result.Ref)
	_, err = s.Get(t.Context(), "alice", pl.Step("a1").Result.Ref)
	require.NoError(t, err, "the output is alice's")

	_, err = factory.NewRegistry(s, "alice").Get(t.Context(), "market_analyst")
	require.NoError(t, err, "the agents built for alice are hers")
	_, err = e.reg.Get(t.Context(), "market_analyst")
	require.ErrorIs(t, err, factory.ErrAgentNotFound, "and not the default owner's")
	read := factory.OutputReader(s, "acme")
	_, err = read(t.Context(), pl.Step("a1").Result.Ref)
	require.Error(t, err, "outside alice's run the default owner is used")
}

func TestTheTeamAppliesItsWindowPolicies(t *testing.T) {
	e := newEnv(t, smem.New(store.Config{}), fullScript())
	r := e.team(t, factory.TeamConfig{Window: window.Config{Offload: window.OffloadPolicy{OutputBytes: 8}}})
	var a2 *window.Snapshot
	for ev, err := range r.Stream(t.Context(), graph.Input(nodes.PlanKey.Set(twoBranches())), graph.Events(graph.EventCustom), graph.CustomEvents(agentevent.EventSnapshot)) {
		require.NoError(t, err)
		if strings.Contains(ev.Path, "step:a2") {
			s := ev.Data.(window.Snapshot)
			a2 = &s
		}
	}
	require.NotNil(t, a2)
	compacted := a2.PoliciesOf(window.PolicyCompactOutput)
	require.NotEmpty(t, compacted, "an 8-byte output limit compacts a1's handoff")
	assert.Equal(t, "handoff:a1", compacted[0].Part)
	assert.Contains(t, e.model.CallsFor("market_analyst")[1].Prompt(), "the full output is at "+compacted[0].Ref+" — read it with read_context")
}
