package metaprompt_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/metaprompt"
)

func TestExpandInsideANodeIsNotRedoneOnResume(t *testing.T) {
	b := researcher()
	model := replies(b, goodPrompt)        // a second call would find the script exhausted
	e := expander(t, model, "gpt-4o", nil) // no cache: only the journal can spare the model
	agent := graph.NewKey[string]("agent")
	system := graph.NewKey[string]("system")
	g := graph.New("build", agent, system)
	g.AddNode("factory", func(ctx context.Context, s graph.State) (graph.Command, error) {
		brief := b
		brief.Name = agent.Get(s)
		p, err := e.Expand(ctx, brief)
		if err != nil {
			return graph.Command{}, err
		}
		if _, err := graph.InterruptAs[bool](ctx, "use this prompt?"); err != nil {
			return graph.Command{}, err
		}
		return graph.Update(system.Set(p.Text)), nil
	})
	g.AddEdge(graph.Start, "factory")
	g.AddEdge("factory", graph.End)
	r, err := g.Compile(graph.WithSaver(memory.New()))
	require.NoError(t, err)

	var paths []string
	for ev, err := range r.Stream(t.Context(), graph.Input(agent.Set(b.Name)), graph.Thread("t")) {
		require.NoError(t, err)
		if mc, ok := ev.Data.(llm.ModelCall); ok {
			paths = append(paths, ev.Path)
			assert.Equal(t, "metaprompt:market_researcher", mc.Agent)
			assert.Equal(t, "gpt-4o", mc.Model)
		}
	}
	assert.Equal(t, []string{"build/factory/metaprompt:market_researcher"}, paths)
	snap, err := r.State(t.Context(), "t")
	require.NoError(t, err)
	require.Len(t, snap.Interrupts, 1)

	replayed := 0
	for ev, err := range r.Stream(t.Context(), nil, graph.Thread("t"), graph.Resume(true)) {
		require.NoError(t, err)
		if _, ok := ev.Data.(llm.ModelCall); ok {
			replayed++
		}
	}
	assert.Zero(t, replayed, "the whole expansion came from the journal, not even a replayed model call")
	assert.Len(t, model.Calls(), 1, "the resumed node did not call the model again")
	snap, err = r.State(t.Context(), "t")
	require.NoError(t, err)
	assert.Empty(t, snap.Interrupts)
	assert.Equal(t, goodPrompt, system.Get(snap.State))
}

func TestConcurrentExpansionsInsideANodeResumeFromTheJournal(t *testing.T) {
	const n = 3
	agents := map[string][]scripted.Reply{}
	var briefs []metaprompt.Brief
	for i := range n {
		b := researcher()
		b.Name = fmt.Sprintf("agent_%d", i)
		briefs = append(briefs, b)
		agents[agentLabel(b)] = []scripted.Reply{{Text: promptFor(b.Name)}}
	}
	model := scripted.New(scripted.Script{Agents: agents})
	e := expander(t, model, "gpt-4o", nil)
	prompts := graph.NewKey("prompts", graph.Append[string]())
	g := graph.New("build", prompts)
	g.AddNode("factory", func(ctx context.Context, s graph.State) (graph.Command, error) {
		out := make([]metaprompt.Prompt, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i, b := range briefs {
			wg.Go(func() { out[i], errs[i] = e.Expand(ctx, b) })
		}
		wg.Wait()
		var texts []string
		for i := range out {
			if errs[i] != nil {
				return graph.Command{}, errs[i]
			}
			texts = append(texts, out[i].Text)
		}
		if _, err := graph.Interrupt(ctx, "review"); err != nil {
			return graph.Command{}, err
		}
		return graph.Update(graph.AppendTo(prompts, texts...)), nil
	})
	g.AddEdge(graph.Start, "factory")
	g.AddEdge("factory", graph.End)
	r, err := g.Compile(graph.WithSaver(memory.New()))
	require.NoError(t, err)

	res, err := r.Invoke(t.Context(), graph.Input(prompts.Set(nil)), graph.Thread("t"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	res, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.Resume("ok"))
	require.NoError(t, err)
	assert.Equal(t, graph.StatusDone, res.Status)
	assert.Equal(t, []string{promptFor("agent_0"), promptFor("agent_1"), promptFor("agent_2")}, prompts.Get(res.State))
	assert.Len(t, model.Calls(), n, "each agent's prompt was written once")
}
