package workflows_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/workflows"
)

// journalSaver keeps the task records the engine writes for journaled
// tool calls.
type journalSaver struct {
	graph.Saver
	mu   sync.Mutex
	recs []graph.TaskRecord
}

func (s *journalSaver) PutTaskRecords(ctx context.Context, ref graph.CheckpointRef, recs []graph.TaskRecord) error {
	s.mu.Lock()
	for _, r := range recs {
		if strings.Contains(r.Key, "tool:") {
			s.recs = append(s.recs, r)
		}
	}
	s.mu.Unlock()
	return s.Saver.PutTaskRecords(ctx, ref, recs)
}

func TestAToolNodeJournalsItsCallAndReportsIt(t *testing.T) {
	f, err := workflows.Load("testdata/run/review_loop.yaml", workflows.WithTools(shout(t)),
		workflows.WithFuncs(reviewFuncs(func(float64) float64 { return 0.9 })))
	require.NoError(t, err)
	saver := &journalSaver{Saver: memory.New()}
	r, err := f.Compile(t.Context(), workflows.Env{Graph: []graph.Option{graph.WithSaver(saver)}})
	require.NoError(t, err)
	in, err := f.Input(r, "topic", "graphs")
	require.NoError(t, err)

	var calls []tools.CallEvent
	var results []tools.ResultEvent
	var paths []string
	for ev, err := range r.Stream(t.Context(), in, graph.Thread("t")) {
		require.NoError(t, err)
		switch d := ev.Data.(type) {
		case tools.CallEvent:
			calls, paths = append(calls, d), append(paths, ev.Name()+" "+ev.Path)
		case tools.ResultEvent:
			results, paths = append(results, d), append(paths, ev.Name()+" "+ev.Path)
		}
	}
	assert.Equal(t, []string{"tool_call review_loop/write", "tool_result review_loop/write"}, paths)
	require.Len(t, calls, 1)
	require.Len(t, results, 1)
	assert.Equal(t, "shout", calls[0].Name)
	assert.JSONEq(t, `{"text":"draft about graphs"}`, string(calls[0].Args))
	assert.Equal(t, calls[0].ID, results[0].ID)
	assert.Equal(t, "ok", results[0].Status)
	assert.Equal(t, "DRAFT ABOUT GRAPHS", results[0].Output)

	require.Len(t, saver.recs, 1, "the call is in the node's journal")
	assert.Contains(t, saver.recs[0].Key, "tool:"+calls[0].ID)
	assert.Contains(t, string(saver.recs[0].Data), `"text":"DRAFT ABOUT GRAPHS"`)
}

// echoTool returns its text as it is.
func echoTool(t *testing.T) *tools.Registry {
	return textTool(t, "echo", "Returns its text.", func(s string) string { return s })
}

// TestAToolNodeWritesANumberOnlyWhenItsWholeOutputIsOne: a tool's text is
// converted, never searched for a number; what does not convert fails the
// node with the channel and the text.
func TestAToolNodeWritesANumberOnlyWhenItsWholeOutputIsOne(t *testing.T) {
	long := "exit code: 0 " + strings.Repeat("x", 100) + " 1"
	for _, tt := range []struct {
		kind, text string
		want       any
		err        string
	}{
		{"number", " 0.75\n", 0.75, ""},
		{"integer", "3", 3, ""},
		{"boolean", "true\n", true, ""},
		{"number", "exit code: 0 then 1", nil, `workflows: node "t": tool echo: the output for channel "out" is not a number: "exit code: 0 then 1"`},
		{"number", long, nil, `workflows: node "t": tool echo: the output for channel "out" is not a number: "exit code: 0 ` + strings.Repeat("x", 66) + `…"`},
		{"integer", "2.5", nil, `workflows: node "t": tool echo: the output for channel "out" is not a whole number: "2.5"`},
		{"boolean", "yes, it passed", nil, `workflows: node "t": tool echo: the output for channel "out" is not true or false: "yes, it passed"`},
	} {
		t.Run(tt.kind+" "+tt.text, func(t *testing.T) {
			src := fmt.Sprintf(`apiVersion: coorflow/v1
name: tool_number
input: text
state:
  text: {type: string}
  out: {type: %s}
tools: {echo: {}}
nodes:
  t: {type: tool, tool: echo, args: {text: "state.text"}, output: out}
edges:
  - {from: start, to: t}
  - {from: t, to: end}
`, tt.kind)
			f, err := workflows.Parse("tool_number.yaml", []byte(src), workflows.WithTools(echoTool(t)))
			require.NoError(t, err)
			r, err := f.Compile(t.Context(), workflows.Env{})
			require.NoError(t, err)
			in, err := f.Input(r, "text", tt.text)
			require.NoError(t, err)
			_, final, err := runPath(t, r, in)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			v, _ := final.Value("out")
			assert.EqualValues(t, tt.want, v)
		})
	}
}
