package temporalrun

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

// TestAFramesErrorIsBoundedToo: a node's failure whose message is larger
// than the event log takes for one event (model output quoted in an
// error) travels shortened, within MaxFrameBytes, and says so.
func TestAFramesErrorIsBoundedToo(t *testing.T) {
	g := graph.New("big-error")
	g.AddNode("n", func(ctx context.Context, s graph.State) (graph.Command, error) { return graph.Command{}, nil })
	g.AddEdge(graph.Start, "n")
	g.AddEdge("n", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	const max = 64 << 10
	w := &streamWriter{log: &EventLog{cfg: EventLogConfig{MaxFrameBytes: max}}, r: r}
	cause := errors.New("the model said: " + strings.Repeat("x", 4*max))
	ev := graph.Event{Kind: graph.EventNodeEnd, Path: "big-error/n", Node: "n",
		Err: &graph.NodeError{Node: "n", Path: "big-error/n", Attempt: 1, Err: cause}}
	data := w.encode(ev)
	assert.LessOrEqual(t, len(data), max)
	var f frame
	require.NoError(t, json.Unmarshal(data, &f))
	assert.NotEmpty(t, f.Cut)
	require.NotNil(t, f.Err)
	assert.True(t, strings.HasPrefix(f.Err.Node.Cause.Message, "the model said: xxx"), "the start of the message is kept")
}
