package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
)

// countingSaver counts what reaches the saver.
type countingSaver struct {
	graph.Saver
	mu          sync.Mutex
	checkpoints int
	blobs       int
	blobBytes   int
	failAfter   int // fail PutCheckpoint once this many have succeeded (0: never)
}

var errDiskFull = errors.New("disk full")

func (c *countingSaver) PutCheckpoint(ctx context.Context, cp graph.CheckpointRecord, blobs []graph.Blob) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failAfter > 0 && c.checkpoints >= c.failAfter {
		return errDiskFull
	}
	c.checkpoints++
	c.blobs += len(blobs)
	for _, b := range blobs {
		c.blobBytes += len(b.Data)
	}
	return c.Saver.PutCheckpoint(ctx, cp, blobs)
}

func durableChain(t *testing.T, s graph.Saver, c *counter, opts ...graph.Option) *graph.Runnable {
	t.Helper()
	g := graph.New("durable", logKey, countKey, textKey)
	for _, n := range []string{"a", "b", "c"} {
		g.AddNode(n, func(ctx context.Context, st graph.State) (graph.Command, error) {
			c.inc(n)
			return graph.Update(graph.AppendTo(logKey, n)), nil
		})
	}
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", "b")
	g.AddEdge("b", "c")
	g.AddEdge("c", graph.End)
	r, err := g.Compile(append([]graph.Option{graph.WithSaver(s)}, opts...)...)
	require.NoError(t, err)
	return r
}

func TestACheckpointFollowsTheInputAndEveryStep(t *testing.T) {
	for _, mode := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync} {
		t.Run(fmt.Sprint("durability ", mode), func(t *testing.T) {
			var c counter
			r := durableChain(t, memory.New(), &c, graph.WithDurability(mode))
			res, err := r.Invoke(t.Context(), graph.Input(textKey.Set("go")), graph.Thread("t1"))
			require.NoError(t, err)
			assert.Equal(t, "t1", res.Thread)

			hist, err := r.History(t.Context(), "t1")
			require.NoError(t, err)
			require.Len(t, hist, 4)
			assert.Equal(t, res.Checkpoint, hist[0].Checkpoint)
			var steps []int
			var sources []graph.Source
			var logs [][]string
			for _, h := range hist {
				steps = append(steps, h.Step)
				sources = append(sources, h.Source)
				logs = append(logs, logKey.Get(h.State))
			}
			assert.Equal(t, []int{2, 1, 0, -1}, steps)
			assert.Equal(t, []graph.Source{graph.SourceLoop, graph.SourceLoop, graph.SourceLoop, graph.SourceInput}, sources)
			assert.Equal(t, [][]string{{"a", "b", "c"}, {"a", "b"}, {"a"}, nil}, logs)
			assert.Equal(t, []string{"c"}, hist[0].Writers)
			assert.Equal(t, []string{"a"}, hist[3].Next)
			assert.Empty(t, hist[0].Next)
			for _, h := range hist {
				assert.Equal(t, "go", textKey.Get(h.State), "an unchanged channel is read back at every checkpoint")
			}
			assert.Equal(t, hist[1].Checkpoint, hist[0].Parent)
		})
	}
}

func TestACheckpointStoresOnlyTheChannelsThatChanged(t *testing.T) {
	s := &countingSaver{Saver: memory.New()}
	r := durableChain(t, s, &counter{})
	_, err := r.Invoke(t.Context(), graph.Input(textKey.Set("go"), countKey.Set(1)), graph.Thread("t1"))
	require.NoError(t, err)
	assert.Equal(t, 4, s.checkpoints)
	assert.Equal(t, 2+3, s.blobs, "the input stores text and count; each step only log")
}

func TestStorageGrowsLinearlyOverA200TurnConversation(t *testing.T) {
	s := &countingSaver{Saver: memory.New()}
	msgs := graph.NewKey("messages", graph.Append[string]())
	g := graph.New("chat", msgs)
	g.AddNode("reply", func(ctx context.Context, st graph.State) (graph.Command, error) {
		all := msgs.Get(st)
		return graph.Update(graph.AppendTo(msgs, fmt.Sprintf("reply %d to %q", len(all), all[len(all)-1]))), nil
	})
	g.AddEdge(graph.Start, "reply")
	g.AddEdge("reply", graph.End)
	r, err := g.Compile(graph.WithSaver(s))
	require.NoError(t, err)

	const turns = 200
	for i := range turns {
		_, err := r.Invoke(t.Context(), graph.Input(graph.AppendTo(msgs, fmt.Sprintf("user message number %d", i))), graph.Thread("chat"))
		require.NoError(t, err)
	}
	snap, err := r.State(t.Context(), "chat")
	require.NoError(t, err)
	final := msgs.Get(snap.State)
	require.Len(t, final, 2*turns)
	assert.Equal(t, `reply 399 to "user message number 199"`, final[len(final)-1])

	finalJSON, err := json.Marshal(final)
	require.NoError(t, err)
	// Storing the whole list at every checkpoint would take about
	// 2*turns/2 times the final size (~200x); deltas take about 1x plus a
	// few bytes of framing per message.
	ratio := float64(s.blobBytes) / float64(len(finalJSON))
	t.Logf("stored %d bytes of channel data for a final value of %d bytes (%.2fx)", s.blobBytes, len(finalJSON), ratio)
	assert.Less(t, ratio, 1.5)
}

func TestResumingAFailedStepRunsOnlyTheFailedTask(t *testing.T) {
	var c counter
	var fail atomic.Bool
	fail.Store(true)
	g := graph.New("partial", logKey)
	for _, n := range []string{"a", "b", "c"} {
		g.AddNode(n, func(ctx context.Context, st graph.State) (graph.Command, error) {
			c.inc(n)
			if n == "b" && fail.Load() {
				return graph.Command{}, errFlaky
			}
			return graph.Update(graph.AppendTo(logKey, n)), nil
		})
		g.AddEdge(graph.Start, n)
		g.AddEdge(n, "join")
	}
	g.AddNode("join", logger(&c, "join"))
	g.AddEdge("join", graph.End)
	r, err := g.Compile(graph.WithSaver(memory.New()))
	require.NoError(t, err)

	_, err = r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.ErrorIs(t, err, errFlaky)
	fail.Store(false)
	res, err := r.Invoke(t.Context(), nil, graph.Thread("t"))
	require.NoError(t, err)
	assert.Equal(t, 1, c.get("a"))
	assert.Equal(t, 2, c.get("b"))
	assert.Equal(t, 1, c.get("c"))
	assert.Equal(t, []string{"a", "b", "c", "join"}, logKey.Get(res.State), "writes apply in task order whatever ran when")
}

func TestATaskResultIsStoredAsSoonAsItFinishes(t *testing.T) {
	s := memory.New()
	release := make(chan struct{})
	g := graph.New("records", logKey)
	var r *graph.Runnable
	g.AddNode("fast", logger(&counter{}, "fast"))
	g.AddNode("slow", func(ctx context.Context, st graph.State) (graph.Command, error) {
		<-release
		return graph.Command{}, nil
	})
	for _, n := range []string{"fast", "slow"} {
		g.AddEdge(graph.Start, n)
		g.AddEdge(n, graph.End)
	}
	r, err := g.Compile(graph.WithSaver(s))
	require.NoError(t, err)

	var ended []graph.Event
	for ev, err := range r.Stream(t.Context(), graph.Input(), graph.Thread("t")) {
		require.NoError(t, err)
		if ev.Kind == graph.EventNodeEnd && ev.Node == "fast" {
			snap, err := r.State(t.Context(), "t")
			require.NoError(t, err)
			assert.Equal(t, []graph.StepTask{
				{Node: "fast", Path: "records/fast", Status: graph.TaskDone},
				{Node: "slow", Path: "records/slow", Status: graph.TaskPending},
			}, snap.Tasks, "fast's result is stored while slow still runs")
			close(release)
		}
		if ev.Kind == graph.EventNodeEnd {
			ended = append(ended, ev)
		}
	}
	assert.Len(t, ended, 2)
}

func TestASaverErrorStopsTheRunAndTheLastGoodCheckpointStaysUsable(t *testing.T) {
	base := memory.New()
	var c counter
	failing := &countingSaver{Saver: base, failAfter: 2} // input and step a succeed
	_, err := durableChain(t, failing, &c).Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.ErrorIs(t, err, errDiskFull)
	assert.EqualError(t, err, `graph: thread "t": save checkpoint after step 1: disk full`)
	assert.Equal(t, 0, c.get("c"), "the run stopped at the failed checkpoint")

	r := durableChain(t, base, &c)
	snap, err := r.State(t.Context(), "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, logKey.Get(snap.State))
	assert.Equal(t, []string{"b"}, snap.Next)
	res, err := r.Invoke(t.Context(), nil, graph.Thread("t"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, logKey.Get(res.State))
	assert.Equal(t, 2, c.get("b"), "b's step had not been saved, so it ran again")
	assert.Equal(t, 1, c.get("a"))
}

func TestThreadErrors(t *testing.T) {
	s := memory.New()
	r := durableChain(t, s, &counter{})
	_, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("exists"))
	require.NoError(t, err)
	_, err = r.Invoke(t.Context(), graph.Input(), graph.Thread("other"))
	require.NoError(t, err)
	other, err := r.State(t.Context(), "other")
	require.NoError(t, err)

	cases := []struct {
		name string
		do   func() error
		is   error
		want string
	}{
		{"state of a thread that does not exist", func() error {
			_, err := r.State(t.Context(), "nope")
			return err
		}, graph.ErrNotFound, `graph: thread "nope" does not exist: graph: not found`},
		{"continuing a thread that does not exist", func() error {
			_, err := r.Invoke(t.Context(), nil, graph.Thread("nope"))
			return err
		}, graph.ErrNoInput, `graph: thread "nope" does not exist; start it with an input, not nil: graph: no input: graph: not found`},
		{"streaming a thread that does not exist", func() error {
			for _, err := range r.Stream(t.Context(), nil, graph.Thread("nope")) {
				if err != nil {
					return err
				}
			}
			return nil
		}, graph.ErrNoInput, `graph: thread "nope" does not exist; start it with an input, not nil: graph: no input: graph: not found`},
		{"a checkpoint id from another thread", func() error {
			_, err := r.Invoke(t.Context(), nil, graph.Thread("exists"), graph.FromCheckpoint(other.Checkpoint))
			return err
		}, graph.ErrNotFound, fmt.Sprintf(`graph: thread "exists" has no checkpoint %q: graph: not found`, other.Checkpoint)},
		{"resuming a run that is not interrupted", func() error {
			_, err := r.Invoke(t.Context(), nil, graph.Thread("exists"), graph.Resume("yes"))
			return err
		}, graph.ErrNotInterrupted, `graph: thread "exists" is not interrupted; nothing to resume: graph: not interrupted`},
		{"resuming a thread that does not exist", func() error {
			_, err := r.Invoke(t.Context(), nil, graph.Thread("nope"), graph.Resume("yes"))
			return err
		}, graph.ErrNotFound, `graph: thread "nope" does not exist, so there is nothing to resume: graph: not found`},
		{"a saver without a thread", func() error {
			_, err := r.Invoke(t.Context(), graph.Input())
			return err
		}, nil, `graph: a run with a saver needs a thread: pass graph.Thread(id)`},
		{"a resume value that does not encode", func() error {
			_, err := r.Invoke(t.Context(), nil, graph.Thread("exists"), graph.Resume(func() {}))
			return err
		}, nil, `graph: resume value: json: unsupported type: func()`},
		{"updating as a node the graph does not have", func() error {
			_, err := r.UpdateState(t.Context(), "exists", "ghost", nil)
			return err
		}, graph.ErrUnknownNode, `graph: update thread "exists" as node "ghost": graph: unknown node: graph "durable" has no such node`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.do()
			if c.is != nil {
				require.ErrorIs(t, err, c.is)
			}
			assert.EqualError(t, err, c.want)
		})
	}
}

func TestACorruptCheckpointIsAClearError(t *testing.T) {
	s := memory.New()
	r := durableChain(t, s, &counter{})
	res, err := r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.NoError(t, err)
	rec, err := s.GetCheckpoint(t.Context(), graph.CheckpointRef{Thread: "t", ID: res.Checkpoint})
	require.NoError(t, err)

	for name, meta := range map[string]string{
		"a newer format": `{"format":99,"graph":"durable"}`,
		"garbage":        `{"format":`,
	} {
		t.Run(name, func(t *testing.T) {
			newest, err := s.GetCheckpoint(t.Context(), graph.CheckpointRef{Thread: "t"})
			require.NoError(t, err)
			bad := rec
			bad.ID, bad.ParentID, bad.Meta = "bad-"+name, newest.ID, []byte(meta)
			require.NoError(t, s.PutCheckpoint(t.Context(), bad, nil))
			_, err = r.State(t.Context(), "t")
			require.ErrorIs(t, err, graph.ErrCorruptCheckpoint)
			_, err = r.Invoke(t.Context(), nil, graph.Thread("t"))
			require.ErrorIs(t, err, graph.ErrCorruptCheckpoint)
			if name == "a newer format" {
				assert.EqualError(t, err, `graph: thread "t": load checkpoint: graph: corrupt checkpoint: thread "t" checkpoint "bad-a newer format" has format 99; this version of coorflow reads format 1`)
			}
		})
	}
}

func TestAFinishedThreadTakesNewInputAndKeepsItsState(t *testing.T) {
	var c counter
	r := durableChain(t, memory.New(), &c)
	_, err := r.Invoke(t.Context(), graph.Input(countKey.Set(1)), graph.Thread("t"))
	require.NoError(t, err)
	res, err := r.Invoke(t.Context(), graph.Input(countKey.Set(10)), graph.Thread("t"))
	require.NoError(t, err)
	assert.Equal(t, 11, countKey.Get(res.State))
	assert.Equal(t, []string{"a", "b", "c", "a", "b", "c"}, logKey.Get(res.State))
	hist, err := r.History(t.Context(), "t")
	require.NoError(t, err)
	assert.Len(t, hist, 8)
	assert.Equal(t, 3, hist[3].Step, "the second input continues the step count")
	assert.Equal(t, graph.SourceInput, hist[3].Source)
}

func TestAnAsyncSaverErrorIsReturnedAndTheLastGoodCheckpointStaysUsable(t *testing.T) {
	base := memory.New()
	var c counter
	failing := &countingSaver{Saver: base, failAfter: 2}
	_, err := durableChain(t, failing, &c, graph.WithDurability(graph.DurabilityAsync)).Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.ErrorIs(t, err, errDiskFull, "the writer's error is the run's error")
	r := durableChain(t, base, &c)
	snap, err := r.State(t.Context(), "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, logKey.Get(snap.State), "nothing after the failed write was stored")
	res, err := r.Invoke(t.Context(), nil, graph.Thread("t"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, logKey.Get(res.State))
}

func TestAnAsyncSaverErrorReachesAJournaledCallInsteadOfHangingIt(t *testing.T) {
	// The checkpoint after step 0 fails in the background; b's journaled
	// call waits for the writes before it, and gets that error.
	failing := &countingSaver{Saver: memory.New(), failAfter: 1}
	g := graph.New("durable", logKey)
	g.AddNode("a", func(ctx context.Context, st graph.State) (graph.Command, error) {
		return graph.Update(graph.AppendTo(logKey, "a")), nil
	})
	calls := 0
	g.AddNode("b", func(ctx context.Context, st graph.State) (graph.Command, error) {
		_, err := graph.Do(ctx, "call", func(context.Context) (int, error) { calls++; return 1, nil })
		return graph.Update(graph.AppendTo(logKey, "b")), err
	})
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", "b")
	g.AddEdge("b", graph.End)
	r, err := g.Compile(graph.WithSaver(failing), graph.WithDurability(graph.DurabilityAsync))
	require.NoError(t, err)

	_, err = r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.ErrorIs(t, err, errDiskFull)
	assert.Equal(t, 1, calls)
}

func TestFeaturesThatNeedASaverSaySo(t *testing.T) {
	r := chain(t, 1)
	for _, opt := range []graph.Option{graph.InterruptBefore("n000"), graph.Resume(true), graph.FromCheckpoint("x")} {
		_, err := r.Invoke(t.Context(), nil, opt)
		assert.EqualError(t, err, "graph: breakpoints, Resume and FromCheckpoint need a saver: pass graph.WithSaver")
	}
	_, err := r.State(t.Context(), "t")
	assert.EqualError(t, err, "graph: reading or updating a thread needs a saver: pass graph.WithSaver")
}

func TestStateShowsHowEachTaskOfTheStepEnded(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	var c counter
	g := graph.New("tasks", logKey)
	g.AddNode("ok", logger(&c, "ok"))
	g.AddNode("boom", func(ctx context.Context, st graph.State) (graph.Command, error) {
		c.inc("boom")
		if fail.Load() {
			return graph.Command{}, errFlaky
		}
		return graph.Update(graph.AppendTo(logKey, "boom")), nil
	})
	g.AddNode("ask", func(ctx context.Context, st graph.State) (graph.Command, error) {
		c.inc("ask")
		a, err := graph.InterruptAs[string](ctx, "go?")
		if err != nil {
			return graph.Command{}, err
		}
		return graph.Update(graph.AppendTo(logKey, "ask "+a)), nil
	})
	for _, n := range []string{"ok", "boom", "ask"} {
		g.AddEdge(graph.Start, n)
		g.AddEdge(n, graph.End)
	}
	r, err := g.Compile(graph.WithSaver(memory.New()))
	require.NoError(t, err)

	_, err = r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.ErrorIs(t, err, errFlaky)
	snap, err := r.State(t.Context(), "t")
	require.NoError(t, err)
	require.Len(t, snap.Tasks, 3)
	require.Len(t, snap.Interrupts, 1)
	assert.Equal(t, graph.StepTask{Node: "ask", Path: "tasks/ask", Status: graph.TaskInterrupted, Interrupts: snap.Interrupts}, snap.Tasks[0])
	assert.Equal(t, graph.StepTask{Node: "boom", Path: "tasks/boom", Status: graph.TaskFailed, Error: `graph: node "boom" (step 0, attempt 1): flaky service`}, snap.Tasks[1])
	assert.Equal(t, graph.StepTask{Node: "ok", Path: "tasks/ok", Status: graph.TaskDone}, snap.Tasks[2])

	fail.Store(false)
	res, err := r.Invoke(t.Context(), nil, graph.Thread("t"))
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status, "the failed task ran again; the question still waits")
	snap, err = r.State(t.Context(), "t")
	require.NoError(t, err)
	assert.Equal(t, []graph.TaskStatus{graph.TaskInterrupted, graph.TaskDone, graph.TaskDone}, statuses(snap.Tasks))
	assert.Equal(t, 1, c.get("ok"), "finished work is kept")
	assert.Equal(t, 1, c.get("ask"), "a waiting task does not run again")

	res, err = r.Invoke(t.Context(), nil, graph.Thread("t"), graph.Resume("yes"))
	require.NoError(t, err)
	assert.Equal(t, []string{"ask yes", "boom", "ok"}, logKey.Get(res.State))
	snap, err = r.State(t.Context(), "t")
	require.NoError(t, err)
	assert.Empty(t, snap.Tasks, "nothing is left to run")

	first, err := r.StateAt(t.Context(), "t", -1)
	require.NoError(t, err)
	assert.Equal(t, []graph.TaskStatus{graph.TaskDone, graph.TaskDone, graph.TaskDone}, statuses(first.Tasks),
		"the step after a past checkpoint has completed")
}

func statuses(ts []graph.StepTask) []graph.TaskStatus {
	out := make([]graph.TaskStatus, len(ts))
	for i, t := range ts {
		out[i] = t.Status
	}
	return out
}

// listReader counts the checkpoints ListCheckpoints returns.
type listReader struct {
	graph.Saver
	listed atomic.Int64
}

func (l *listReader) ListCheckpoints(ctx context.Context, thread, ns string, opts graph.ListOptions) ([]graph.CheckpointRecord, error) {
	out, err := l.Saver.ListCheckpoints(ctx, thread, ns, opts)
	l.listed.Add(int64(len(out)))
	return out, err
}

func TestStateOfAPastCheckpointReadsTheHistoryOnlyDownToIt(t *testing.T) {
	count := graph.NewKey("count", graph.Sum[int]())
	g := graph.New("loop", count)
	g.AddNode("inc", func(ctx context.Context, s graph.State) (graph.Command, error) {
		if count.Get(s) >= 29 {
			return graph.Goto(graph.End, count.Set(1)), nil
		}
		return graph.Goto("inc", count.Set(1)), nil
	}, graph.Destinations("inc", graph.End))
	g.AddEdge(graph.Start, "inc")
	saver := &listReader{Saver: memory.New()}
	r, err := g.Compile(graph.WithSaver(saver), graph.StepLimit(100))
	require.NoError(t, err)
	_, err = r.Invoke(t.Context(), graph.Input(), graph.Thread("t"))
	require.NoError(t, err)
	all, err := saver.Saver.ListCheckpoints(t.Context(), "t", "", graph.ListOptions{})
	require.NoError(t, err)
	require.Len(t, all, 31, "the input and 30 steps")

	for _, tt := range []struct {
		name      string
		at        int // index in all, newest first
		completed bool
	}{
		{"newest", 0, false},
		{"the one before", 1, true},
		{"a step behind many later ones", 27, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			saver.listed.Store(0)
			snap, err := r.State(t.Context(), "t", graph.FromCheckpoint(all[tt.at].ID))
			require.NoError(t, err)
			if tt.completed {
				assert.Equal(t, []graph.TaskStatus{graph.TaskDone}, statuses(snap.Tasks), "the step after it completed")
			} else {
				assert.Empty(t, snap.Tasks, "the run ended there")
			}
			assert.LessOrEqual(t, saver.listed.Load(), int64(4*(tt.at+1)), "reads a page of a few checkpoints beyond it at most")
		})
	}
}

func TestStateOfEachCheckpointOfABranchedHistorySaysWhetherItsStepCompleted(t *testing.T) {
	count := graph.NewKey("count", graph.Sum[int]())
	g := graph.New("branches", count)
	for _, n := range []string{"a", "b", "c"} {
		g.AddNode(n, func(context.Context, graph.State) (graph.Command, error) {
			return graph.Update(count.Set(1)), nil
		})
	}
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", "b")
	g.AddEdge("b", "c")
	g.AddEdge("c", graph.End)
	saver := memory.New()
	r, err := g.Compile(graph.WithSaver(saver))
	require.NoError(t, err)
	ctx := t.Context()
	list := func() []graph.CheckpointRecord {
		all, err := saver.ListCheckpoints(ctx, "t", "", graph.ListOptions{})
		require.NoError(t, err)
		return all
	}

	_, err = r.Invoke(ctx, graph.Input(count.Set(1)), graph.Thread("t"))
	require.NoError(t, err)
	first := list() // c, b, a, input
	// A replay from after a, a fork of the input, a run of the fork and a
	// new input on the newest branch: branches whose checkpoints are
	// stored after those of the steps they branch from.
	_, err = r.Invoke(ctx, nil, graph.Thread("t"), graph.FromCheckpoint(first[2].ID))
	require.NoError(t, err)
	fork, err := r.UpdateState(ctx, "t", "", []graph.Write{count.Set(10)}, graph.FromCheckpoint(first[3].ID))
	require.NoError(t, err)
	_, err = r.Invoke(ctx, nil, graph.Thread("t"), graph.FromCheckpoint(fork))
	require.NoError(t, err)
	_, err = r.Invoke(ctx, graph.Input(count.Set(1)), graph.Thread("t"))
	require.NoError(t, err)
	// And a fork no run continued.
	_, err = r.UpdateState(ctx, "t", "", []graph.Write{count.Set(100)}, graph.FromCheckpoint(first[1].ID))
	require.NoError(t, err)

	all := list()
	require.Greater(t, len(all), 12)
	seen := map[bool]int{}
	for _, rec := range all {
		completed := false
		for _, c := range all {
			completed = completed || (c.ParentID == rec.ID && c.Source == graph.SourceLoop)
		}
		snap, err := r.State(ctx, "t", graph.FromCheckpoint(rec.ID))
		require.NoError(t, err)
		for _, task := range snap.Tasks {
			assert.Equal(t, completed, task.Status == graph.TaskDone, "checkpoint %s (%s, step %d), task %s", rec.ID, rec.Source, rec.Step, task.Node)
		}
		if len(snap.Tasks) > 0 {
			seen[completed]++
		}
	}
	assert.Positive(t, seen[true], "checkpoints whose step completed")
	assert.Positive(t, seen[false], "checkpoints whose step did not")
}
