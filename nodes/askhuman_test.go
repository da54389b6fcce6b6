package nodes_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/nodes"
)

// TestAskHumanTakesAnyJSONAnswer: a person may answer ask_human with an
// object, a list, a number or a boolean, not only text; the tool's result
// is the answer (text as it is, anything else as compact JSON), and the
// run goes on instead of failing.
func TestAskHumanTakesAnyJSONAnswer(t *testing.T) {
	result := graph.NewKey[string]("result")
	tool := nodes.AskHumanTool()
	g := graph.New("ask", result)
	g.AddNode("agent", func(ctx context.Context, s graph.State) (graph.Command, error) {
		out, err := tool.Call(ctx, json.RawMessage(`{"question":"Which colour?"}`))
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(result.Set(out)), nil
	})
	g.AddEdge(graph.Start, "agent")
	g.AddEdge("agent", graph.End)
	r, err := g.Compile(graph.WithSaver(memory.New()))
	require.NoError(t, err)

	for _, c := range []struct {
		name   string
		answer any
		want   string
	}{
		{"object", map[string]any{"colour": "red", "shades": 2}, `{"colour":"red","shades":2}`},
		{"array", []any{"red", "blue"}, `["red","blue"]`},
		{"number", 3.5, `3.5`},
		{"boolean", true, `true`},
		{"string", "red", `red`},
	} {
		t.Run(c.name, func(t *testing.T) {
			thread := graph.Thread(c.name)
			res, err := r.Invoke(t.Context(), graph.Input(), thread)
			require.NoError(t, err)
			require.Equal(t, graph.StatusInterrupted, res.Status)
			assert.Equal(t, "Which colour?", res.Interrupts[0].Payload.(map[string]string)["question"])

			res, err = r.Invoke(t.Context(), nil, thread, graph.Resume(c.answer))
			require.NoError(t, err, "an answer of any JSON type resumes the run")
			assert.Equal(t, graph.StatusDone, res.Status)
			assert.Equal(t, c.want, result.Get(res.State))
		})
	}
}
