package temporalrun

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
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

// TestAStreamRemembersOnlyTheActivitiesThatWereRetried: a reader keeps
// the newest attempt of an activity only once it saw a retry, so a long
// run of many steps does not make it hold one entry per activity; a
// superseded attempt's frame that comes after the retry's is dropped.
func TestAStreamRemembersOnlyTheActivitiesThatWereRetried(t *testing.T) {
	g := graph.New("attempts")
	g.AddNode("n", func(ctx context.Context, s graph.State) (graph.Command, error) { return graph.Command{}, nil })
	g.AddEdge(graph.Start, "n")
	g.AddEdge("n", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	spec, err := r.Spec()
	require.NoError(t, err)
	var got []string
	s := &stream{r: &Runner{cfg: Config{Graph: r}}, spec: spec, attempts: make(map[string]int32),
		yield: func(ev graph.Event, err error) bool { got = append(got, ev.Data.(string)); return true }}
	send := func(src string, attempt int32, data string) {
		rec, err := r.EncodeEvent(graph.Event{Kind: graph.EventCustom, Path: "attempts/n", Node: "n", Data: data})
		require.NoError(t, err)
		b, err := json.Marshal(frame{Source: src, Attempt: attempt, Event: rec})
		require.NoError(t, err)
		require.True(t, s.frame(b))
	}
	for i := range 100 {
		send("run/"+strconv.Itoa(i), 1, "step")
	}
	assert.Empty(t, s.attempts, "no retry: nothing to remember")
	send("run/x", 1, "first")
	send("run/x", 2, "retry")
	send("run/x", 1, "late")
	send("run/x", 2, "retry again")
	assert.Equal(t, []string{"first", "retry", "retry again"}, got[100:])
	assert.Len(t, s.attempts, 1)
}
