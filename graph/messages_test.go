package graph_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
)

func msg(id, role, text string) map[string]any {
	m := map[string]any{"type": role, "content": text}
	if id != "" {
		m["id"] = id
	}
	return m
}

func remove(id string) map[string]any { return map[string]any{"type": "remove", "id": id} }

// TestTheMessagesReducerHasLangGraphsAddMessagesSemantics: a message
// with a new id (or none) is appended, one with an id in the list
// replaces it in place, a remove message removes its id (all with
// RemoveAllMessages), in write order within a step.
func TestTheMessagesReducerHasLangGraphsAddMessagesSemantics(t *testing.T) {
	start := []any{msg("1", "human", "hi"), msg("2", "ai", "hello"), msg("3", "human", "bye")}
	for _, c := range []struct {
		name   string
		writes []any
		want   []any
	}{
		{"append a new id", []any{msg("4", "ai", "ok")}, append(start[:3:3], msg("4", "ai", "ok"))},
		{"replace in place", []any{msg("2", "ai", "HELLO")}, []any{start[0], msg("2", "ai", "HELLO"), start[2]}},
		{"remove", []any{remove("1")}, []any{start[1], start[2]}},
		{"remove an unknown id: nothing", []any{remove("9")}, start},
		{"remove all, then append", []any{[]any{remove(graph.RemoveAllMessages), msg("5", "human", "again")}}, []any{msg("5", "human", "again")}},
		{"a list in order: replace then remove", []any{[]any{msg("3", "human", "stay"), remove("2")}}, []any{start[0], msg("3", "human", "stay")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			key, err := graph.NewDynamicKey("messages", "messages")
			require.NoError(t, err)
			assert.Equal(t, "messages", key.Reducer())
			g := graph.New("chat", key)
			g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
				var ws []graph.Write
				for _, w := range c.writes {
					ws = append(ws, key.Set(w))
				}
				return graph.Update(ws...), nil
			})
			g.AddEdge(graph.Start, "a")
			g.AddEdge("a", graph.End)
			r, err := g.Compile()
			require.NoError(t, err)
			res, err := r.Invoke(t.Context(), graph.Input(key.Set(start)))
			require.NoError(t, err)
			v, _ := res.State.Value("messages")
			assert.Equal(t, c.want, v)
		})
	}
}

// TestAMessageWithoutAnIDGetsOne: as add_messages gives a message
// without an id a UUID, so that a client can replace or remove it later;
// the id depends on the message and its place only, so the same writes
// folded again (a resume, a recovered step, a replay) give the same ids,
// and two equal messages get two ids.
func TestAMessageWithoutAnIDGetsOne(t *testing.T) {
	key, err := graph.NewDynamicKey("messages", "messages")
	require.NoError(t, err)
	g := graph.New("chat", key)
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(key.Set([]any{msg("", "ai", "anon"), msg("", "ai", "anon")})), nil
	})
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	ids := func() []string {
		res, err := r.Invoke(t.Context(), graph.Input(key.Set(msg("", "human", "hi"))))
		require.NoError(t, err)
		v, _ := res.State.Value("messages")
		var out []string
		for _, m := range v.([]any) {
			out = append(out, m.(map[string]any)["id"].(string))
		}
		return out
	}
	first := ids()
	require.Len(t, first, 3)
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	for _, id := range first {
		assert.Regexp(t, uuid, id)
	}
	assert.NotEqual(t, first[1], first[2], "two equal messages get two ids")
	assert.Equal(t, first, ids(), "the same writes give the same ids")

	// The id a message was given replaces it.
	g2 := graph.New("chat2", key)
	g2.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(key.Set(msg("", "ai", "anon"))), nil
	})
	g2.AddNode("b", func(ctx context.Context, s graph.State) (graph.Command, error) {
		v, _ := s.Value("messages")
		id := v.([]any)[0].(map[string]any)["id"].(string)
		return graph.Update(key.Set(msg(id, "ai", "edited"))), nil
	})
	g2.AddEdge(graph.Start, "a")
	g2.AddEdge("a", "b")
	g2.AddEdge("b", graph.End)
	r2, err := g2.Compile()
	require.NoError(t, err)
	res, err := r2.Invoke(t.Context(), nil)
	require.NoError(t, err)
	v, _ := res.State.Value("messages")
	require.Len(t, v, 1)
	assert.Equal(t, "edited", v.([]any)[0].(map[string]any)["content"])
}

// TestAMessageOfAnExistingIDReplacesItAcrossCheckpoints: an update of a
// thread's state (what a client sends) replaces the stored message of
// its id, and a later run sees the list so changed.
func TestAMessageOfAnExistingIDReplacesItAcrossCheckpoints(t *testing.T) {
	key, err := graph.NewDynamicKey("messages", "messages")
	require.NoError(t, err)
	g := graph.New("chat", key)
	g.AddNode("reply", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(key.Set(msg("r", "ai", "reply"))), nil
	})
	g.AddEdge(graph.Start, "reply")
	g.AddEdge("reply", graph.End)
	r, err := g.Compile(graph.WithSaver(memory.New()))
	require.NoError(t, err)
	_, err = r.Invoke(t.Context(), graph.Input(key.Set(msg("q", "human", "question"))), graph.Thread("t"))
	require.NoError(t, err)

	_, err = r.UpdateState(t.Context(), "t", "", []graph.Write{key.Set(msg("q", "human", "edited question"))})
	require.NoError(t, err)
	snap, err := r.State(t.Context(), "t")
	require.NoError(t, err)
	v, _ := snap.State.Value("messages")
	assert.Equal(t, []any{msg("q", "human", "edited question"), msg("r", "ai", "reply")}, v)

	res, err := r.Invoke(t.Context(), graph.Input(key.Set(remove("q"))), graph.Thread("t"))
	require.NoError(t, err)
	v, _ = res.State.Value("messages")
	assert.Equal(t, []any{msg("r", "ai", "reply")}, v, "the reply replaced itself; the question was removed")
}

func TestTheMessagesReducerTakesMessageObjectsOnly(t *testing.T) {
	key, err := graph.NewDynamicKey("messages", "messages")
	require.NoError(t, err)
	g := graph.New("chat", key)
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) { return graph.Update(), nil })
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	_, err = r.Invoke(t.Context(), graph.Input(key.Set("hi")))
	assert.EqualError(t, err, `graph: invalid input: graph: channel "messages": messages channel takes message objects or lists of them, not string (item 0)`)
	_, err = r.Invoke(t.Context(), graph.Input(key.Set(map[string]any{"id": 7.0})))
	assert.EqualError(t, err, `graph: invalid input: graph: channel "messages": messages channel: a message's id must be a string, not float64 (item 0)`)
}
