package graph_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
)

type approval struct {
	OK     bool   `json:"ok"`
	Reason string `json:"reason"`
}

func TestInterruptPausesAndResumeContinuesWithTheAnswer(t *testing.T) {
	var sideEffects, runs atomic.Int32
	g := graph.New("review", textKey, logKey)
	g.AddNode("draft", func(ctx context.Context, s graph.State) (graph.Command, error) {
		runs.Add(1)
		plan, err := graph.Do(ctx, "write plan", func(ctx context.Context) (string, error) {
			sideEffects.Add(1)
			return "plan v1", nil
		})
		if err != nil {
			return graph.Command{}, err
		}
		verdict, err := graph.InterruptAs[approval](ctx, map[string]string{"question": "approve " + plan + "?"})
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(textKey.Set(fmt.Sprintf("%s ok=%v (%s)", plan, verdict.OK, verdict.Reason))), nil
	})
	g.AddNode("after", logger(&counter{}, "after"))
	g.AddEdge(graph.Start, "draft")
	g.AddEdge("draft", "after")
	g.AddEdge("after", graph.End)
	r, err := g.Compile(graph.WithSaver(memory.New()))
	require.NoError(t, err)

	res, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	in := res.Interrupts[0]
	assert.Equal(t, "draft", in.Node)
	assert.Equal(t, "review/draft", in.Path)
	assert.Equal(t, map[string]string{"question": "approve plan v1?"}, in.Payload)
	assert.Len(t, in.ID, 16)

	snap, err := r.State(t.Context(), "t")
	require.NoError(t, err)
	require.Len(t, snap.Interrupts, 1)
	assert.Equal(t, in.ID, snap.Interrupts[0].ID, "the id is stable")
	assert.Equal(t, map[string]any{"question": "approve plan v1?"}, snap.Interrupts[0].Payload, "read back through JSON")
	assert.Equal(t, []string{"draft"}, snap.Next)

	res, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.Resume(approval{OK: true, Reason: "looks good"}))
	require.NoError(t, err)
	assert.Equal(t, graph.StatusDone, res.Status)
	assert.Equal(t, "plan v1 ok=true (looks good)", textKey.Get(res.State))
	assert.Equal(t, []string{"after"}, logKey.Get(res.State))
	assert.Equal(t, int32(2), runs.Load(), "the node ran again from its start")
	assert.Equal(t, int32(1), sideEffects.Load(), "the journaled call did not")

	_, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.Resume(true))
	assert.ErrorIs(t, err, graph.ErrNotInterrupted, "a finished run cannot be resumed")
}

func TestInterruptWithoutASaverFailsClearly(t *testing.T) {
	g := graph.New("no-saver")
	g.AddNode("ask", func(ctx context.Context, s graph.State) (graph.Command, error) {
		_, err := graph.Interrupt(ctx, "?")
		return graph.Command{}, err
	})
	g.AddEdge(graph.Start, "ask")
	g.AddEdge("ask", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)
	_, err = r.Invoke(t.Context(), nil)
	assert.EqualError(t, err, `graph: node "ask" (step 0, attempt 1): graph.Interrupt needs a saver to pause the run: compile or run with graph.WithSaver and graph.Thread`)
}

// parallelAsks builds a graph whose three branches each ask a question.
func parallelAsks(t *testing.T, runs *counter) *graph.Runnable {
	t.Helper()
	answers := graph.NewKey("answers", graph.Merge[string, string]())
	g := graph.New("asks", answers, logKey)
	for _, n := range []string{"x", "y", "z"} {
		g.AddNode(n, func(ctx context.Context, s graph.State) (graph.Command, error) {
			runs.inc(n)
			a, err := graph.InterruptAs[string](ctx, "question from "+n)
			if err != nil {
				return graph.Command{}, err
			}
			return graph.Update(answers.Set(map[string]string{n: a})), nil
		})
		g.AddEdge(graph.Start, n)
		g.AddEdge(n, "summary")
	}
	g.AddNode("summary", func(ctx context.Context, s graph.State) (graph.Command, error) {
		m := answers.Get(s)
		return graph.Update(graph.AppendTo(logKey, m["x"]+","+m["y"]+","+m["z"])), nil
	})
	g.AddEdge("summary", graph.End)
	r, err := g.Compile(graph.WithSaver(memory.New()))
	require.NoError(t, err)
	return r
}

func idsByNode(ins []graph.InterruptInfo) map[string]string {
	m := make(map[string]string)
	for _, in := range ins {
		m[in.Node] = in.ID
	}
	return m
}

func TestParallelInterruptsAnsweredTogether(t *testing.T) {
	var runs counter
	r := parallelAsks(t, &runs)
	res, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 3)
	ids := idsByNode(res.Interrupts)

	_, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.Resume("yes"))
	require.ErrorIs(t, err, graph.ErrAmbiguousResume)
	assert.EqualError(t, err, fmt.Sprintf(`graph: thread "t" has 3 pending interrupts: asks/x (%s), asks/y (%s), asks/z (%s); answer each with graph.ResumeAt(path, value) or graph.ResumeEach: graph: ambiguous resume`, ids["x"], ids["y"], ids["z"]))

	res, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.ResumeEach(map[string]any{ids["x"]: "1", ids["y"]: "2", ids["z"]: "3"}))
	require.NoError(t, err)
	assert.Equal(t, graph.StatusDone, res.Status)
	assert.Equal(t, []string{"1,2,3"}, logKey.Get(res.State))
	for _, n := range []string{"x", "y", "z"} {
		assert.Equal(t, 2, runs.get(n))
	}
}

func TestParallelInterruptsAnsweredOneAtATime(t *testing.T) {
	var runs counter
	r := parallelAsks(t, &runs)
	res, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.NoError(t, err)
	ids := idsByNode(res.Interrupts)

	res, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.ResumeEach(map[string]any{ids["y"]: "B"}))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	assert.Equal(t, map[string]string{"x": ids["x"], "z": ids["z"]}, idsByNode(res.Interrupts), "the others stay pending, with the same ids")
	assert.Equal(t, 2, runs.get("y"))
	assert.Equal(t, 1, runs.get("x"), "a task still waiting does not run again")

	_, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.ResumeEach(map[string]any{ids["y"]: "again"}))
	assert.EqualError(t, err, fmt.Sprintf(`graph: thread "t" has no pending interrupt %q (pending: %s, %s): graph: not interrupted`, ids["y"], ids["x"], ids["z"]))

	res, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.ResumeEach(map[string]any{ids["z"]: "C"}))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	res, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.Resume("A"))
	require.NoError(t, err)
	assert.Equal(t, graph.StatusDone, res.Status)
	assert.Equal(t, []string{"A,B,C"}, logKey.Get(res.State))
	assert.Equal(t, 2, runs.get("y"), "y finished once and was not run again")
}

func TestTwoInterruptsInOneNodeAreAskedInTurn(t *testing.T) {
	g := graph.New("two-questions", textKey)
	g.AddNode("form", func(ctx context.Context, s graph.State) (graph.Command, error) {
		name, err := graph.InterruptAs[string](ctx, "name?")
		if err != nil {
			return graph.Command{}, err
		}
		city, err := graph.InterruptAs[string](ctx, "city?")
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(textKey.Set(name + " from " + city)), nil
	})
	g.AddEdge(graph.Start, "form")
	g.AddEdge("form", graph.End)
	s := memory.New()
	r, err := g.Compile(graph.WithSaver(s))
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.NoError(t, err)
	assert.Equal(t, "name?", res.Interrupts[0].Payload)
	res, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.Resume("Ada"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	assert.Equal(t, "city?", res.Interrupts[0].Payload)

	// A new compiled graph over the same saver stands for a new process.
	r2, err := g.Compile(graph.WithSaver(s))
	require.NoError(t, err)
	res, err = r2.Invoke(t.Context(), nil, graph.Thread("t"), graph.Resume("London"))
	require.NoError(t, err)
	assert.Equal(t, "Ada from London", textKey.Get(res.State), "the first answer was kept")
}

func TestConcurrentInterruptsFromScopesInOneNode(t *testing.T) {
	g := graph.New("team", logKey)
	g.AddNode("team", func(ctx context.Context, s graph.State) (graph.Command, error) {
		errs := make([]error, 2)
		got := make([]string, 2)
		done := make(chan int)
		for i, agent := range []string{"agent:a", "agent:b"} {
			go func() {
				got[i], errs[i] = graph.InterruptAs[string](graph.WithScope(ctx, agent), "ask "+agent)
				done <- i
			}()
		}
		<-done
		<-done
		if err := errors.Join(errs...); err != nil {
			return graph.Command{}, err
		}
		return graph.Update(graph.AppendTo(logKey, got...)), nil
	})
	g.AddEdge(graph.Start, "team")
	g.AddEdge("team", graph.End)
	r, err := g.Compile(graph.WithSaver(memory.New()))
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 2)
	answers := map[string]any{}
	for _, in := range res.Interrupts {
		answers[in.ID] = "answer to " + in.Payload.(string)
	}
	res, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.ResumeEach(answers))
	require.NoError(t, err)
	assert.Equal(t, []string{"answer to ask agent:a", "answer to ask agent:b"}, logKey.Get(res.State))
}

func TestStaticBreakpoints(t *testing.T) {
	var c counter
	r := durableChain(t, memory.New(), &c, graph.InterruptBefore("b"), graph.InterruptAfter("b"))
	res, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	assert.Equal(t, graph.Breakpoint{When: "before", Node: "b"}, res.Interrupts[0].Payload)
	assert.Equal(t, []string{"a"}, logKey.Get(res.State))
	assert.Equal(t, 0, c.get("b"))

	snap, err := r.State(t.Context(), "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"b"}, snap.Next)

	res, err = r.Invoke(t.Context(), nil, graph.Thread("t"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	assert.Equal(t, graph.Breakpoint{When: "after", Node: "b"}, res.Interrupts[0].Payload)
	assert.Equal(t, []string{"a", "b"}, logKey.Get(res.State))

	res, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.Resume(nil))
	require.NoError(t, err)
	assert.Equal(t, graph.StatusDone, res.Status)
	assert.Equal(t, []string{"a", "b", "c"}, logKey.Get(res.State))
	assert.Equal(t, 1, c.get("b"))
}

func TestInterruptInsideASubgraphPausesAndResumesTheParent(t *testing.T) {
	var innerRuns, afterRuns atomic.Int32
	inner := graph.New("inner", logKey)
	inner.AddNode("prep", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(graph.AppendTo(logKey, "prep")), nil
	})
	inner.AddNode("ask", func(ctx context.Context, s graph.State) (graph.Command, error) {
		innerRuns.Add(1)
		a, err := graph.InterruptAs[string](ctx, "inner question")
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(graph.AppendTo(logKey, "answer:"+a)), nil
	})
	inner.AddEdge(graph.Start, "prep")
	inner.AddEdge("prep", "ask")
	inner.AddEdge("ask", graph.End)
	sub, err := inner.Compile()
	require.NoError(t, err)

	outer := graph.New("outer", logKey)
	outer.AddSubgraph("sub", sub)
	outer.AddNode("after", func(ctx context.Context, s graph.State) (graph.Command, error) {
		afterRuns.Add(1)
		return graph.Update(graph.AppendTo(logKey, "after")), nil
	})
	outer.AddEdge(graph.Start, "sub")
	outer.AddEdge("sub", "after")
	outer.AddEdge("after", graph.End)
	s := memory.New()
	r, err := outer.Compile(graph.WithSaver(s))
	require.NoError(t, err)

	res, err := r.Invoke(t.Context(), graph.Input(graph.AppendTo(logKey, "in")), graph.Thread("t"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, "outer/sub/ask", res.Interrupts[0].Path)

	r2, err := outer.Compile(graph.WithSaver(s)) // as from another process
	require.NoError(t, err)
	res, err = r2.Invoke(t.Context(), nil, graph.Thread("t"), graph.Resume("42"))
	require.NoError(t, err)
	assert.Equal(t, graph.StatusDone, res.Status)
	assert.Equal(t, []string{"in", "prep", "answer:42", "after"}, logKey.Get(res.State),
		"the subgraph's write from before the interrupt reached the parent exactly once")
	assert.Equal(t, int32(2), innerRuns.Load())
	assert.Equal(t, int32(1), afterRuns.Load())
}

func TestResumeAtAnswersByPath(t *testing.T) {
	var runs counter
	r := parallelAsks(t, &runs)
	res, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 3)

	// Two answers in one call: one by full path, one by the path below
	// the root graph.
	res, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.ResumeAt("asks/x", "1"), graph.ResumeAt("y", "2"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, "asks/z", res.Interrupts[0].Path, "the question not answered stays pending")

	res, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.ResumeAt("z", "3"))
	require.NoError(t, err)
	assert.Equal(t, graph.StatusDone, res.Status)
	assert.Equal(t, []string{"1,2,3"}, logKey.Get(res.State))
	assert.Equal(t, 2, runs.get("x"), "x ran once to ask, once with its answer")
}

func TestResumeAtAnswersInsideASubgraph(t *testing.T) {
	var c counter
	r := splitGraph(t, &c, memory.New(), func(ctx context.Context, s graph.State) (graph.Command, error) {
		a, err := graph.InterruptAs[string](ctx, "which?")
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(graph.AppendTo(logKey, "answer "+a)), nil
	})
	_, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), nil, graph.Thread("t"), graph.ResumeAt("sub/inner", "deep"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "plain", "answer deep", "z"}, logKey.Get(res.State))
}

func TestResumeAtErrors(t *testing.T) {
	var runs counter
	r := parallelAsks(t, &runs)
	res, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.NoError(t, err)
	ids := idsByNode(res.Interrupts)

	twice := graph.New("twice", logKey)
	twice.AddNode("team", func(ctx context.Context, s graph.State) (graph.Command, error) {
		// Two questions at once from one scope: both wait at one path.
		_, first := graph.Interrupt(ctx, "first")
		_, second := graph.Interrupt(ctx, "second")
		return graph.Command{}, errors.Join(first, second)
	})
	twice.AddEdge(graph.Start, "team")
	twice.AddEdge("team", graph.End)
	rt, err := twice.Compile(graph.WithSaver(memory.New()))
	require.NoError(t, err)
	res, err = rt.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.NoError(t, err)
	require.Len(t, res.Interrupts, 2)
	tids := []string{res.Interrupts[0].ID, res.Interrupts[1].ID}

	cases := []struct {
		name string
		r    *graph.Runnable
		opts []graph.Option
		is   error
		want string
	}{
		{"a path nothing asked at", r, []graph.Option{graph.ResumeAt("asks/w", "?")}, graph.ErrNotInterrupted,
			fmt.Sprintf(`graph: thread "t" has no pending interrupt at "asks/w" (pending: asks/x (%s), asks/y (%s), asks/z (%s)): graph: not interrupted`, ids["x"], ids["y"], ids["z"])},
		{"two questions at one path", rt, []graph.Option{graph.ResumeAt("team", "?")}, graph.ErrAmbiguousResume,
			fmt.Sprintf(`graph: thread "t" has 2 pending interrupts at "team" (%s, %s); answer them by id with graph.ResumeEach: graph: ambiguous resume`, tids[0], tids[1])},
		{"Resume with ResumeAt", r, []graph.Option{graph.Resume("1"), graph.ResumeAt("x", "1")}, nil,
			`graph: pass either graph.Resume or graph.ResumeAt and graph.ResumeEach, not both`},
		{"one question answered twice", r, []graph.Option{graph.ResumeAt("x", "1"), graph.ResumeEach(map[string]any{ids["x"]: "2"})}, nil,
			fmt.Sprintf(`graph: interrupt %s at "x" is answered twice, by graph.ResumeEach and graph.ResumeAt`, ids["x"])},
		{"an answer that does not encode", r, []graph.Option{graph.ResumeAt("x", func() {})}, nil,
			`graph: resume value: answer to x: json: unsupported type: func()`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.r.Invoke(t.Context(), nil, append([]graph.Option{graph.Thread("t")}, c.opts...)...)
			if c.is != nil {
				require.ErrorIs(t, err, c.is)
			}
			assert.EqualError(t, err, c.want)
		})
	}
	snap, err := r.State(t.Context(), "t")
	require.NoError(t, err)
	assert.Len(t, snap.Interrupts, 3, "a refused answer changes nothing")
	assert.Equal(t, 1, runs.get("x"))
}

func TestInterruptPayloadReadsTheSameFromTheResultAndFromState(t *testing.T) {
	type question struct {
		Text    string   `json:"text"`
		Options []string `json:"options"`
		Max     int      `json:"max"`
	}
	asked := question{Text: "pick", Options: []string{"a", "b"}, Max: 2}
	g := graph.New("payload")
	g.AddNode("ask", func(ctx context.Context, s graph.State) (graph.Command, error) {
		_, err := graph.Interrupt(ctx, asked)
		return graph.Command{}, err
	})
	g.AddEdge(graph.Start, "ask")
	g.AddEdge("ask", graph.End)
	r, err := g.Compile(graph.WithSaver(memory.New()))
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.NoError(t, err)
	snap, err := r.State(t.Context(), "t")
	require.NoError(t, err)
	require.IsType(t, question{}, res.Interrupts[0].Payload, "the result holds the Go value")
	require.IsType(t, map[string]any{}, snap.Interrupts[0].Payload, "State holds JSON values")

	for name, in := range map[string]graph.InterruptInfo{"result": res.Interrupts[0], "state": snap.Interrupts[0]} {
		t.Run(name, func(t *testing.T) {
			q, err := graph.InterruptPayload[question](in)
			require.NoError(t, err)
			assert.Equal(t, asked, q)
			m, err := graph.InterruptPayload[map[string]any](in)
			require.NoError(t, err)
			assert.Equal(t, map[string]any{"text": "pick", "options": []any{"a", "b"}, "max": float64(2)}, m)
			_, err = graph.InterruptPayload[string](in)
			assert.EqualError(t, err, fmt.Sprintf(`graph: payload of interrupt %s at "payload/ask" does not decode as string: json: cannot unmarshal object into Go value of type string`, in.ID))
		})
	}
}
