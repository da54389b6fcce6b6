package graph_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/graph"
)

// fanOut compiles Start -> fan -> n packets of worker -> End.
func fanOut(t *testing.T, n int, worker graph.NodeFunc, opts ...graph.Option) *graph.Runnable {
	t.Helper()
	g := graph.New("fan", itemKey, outKey)
	g.AddNode("fan", func(ctx context.Context, s graph.State) (graph.Command, error) {
		packets := make([]graph.Packet, n)
		for i := range packets {
			packets[i] = graph.To("worker", itemKey.Set(i))
		}
		return graph.Send(packets...), nil
	}, graph.Destinations("worker"))
	g.AddNode("worker", worker)
	g.AddEdge(graph.Start, "fan")
	g.AddEdge("worker", graph.End)
	r, err := g.Compile(opts...)
	require.NoError(t, err)
	return r
}

// barrier returns a wait that returns once n callers are waiting (or ctx
// ends, with its error).
func barrier(n int) func(ctx context.Context) error {
	var arrived atomic.Int32
	all := make(chan struct{})
	return func(ctx context.Context) error {
		if arrived.Add(1) == int32(n) {
			close(all)
		}
		select {
		case <-all:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func TestEveryTaskOfAWideStepRunsAtOnce(t *testing.T) {
	const n = 50
	wait := barrier(n)
	r := fanOut(t, n, func(ctx context.Context, s graph.State) (graph.Command, error) {
		// Each branch returns only once every branch has started: a
		// branch that waited for another to end would never start.
		if err := wait(ctx); err != nil {
			return graph.Command{}, err
		}
		return graph.Update(graph.AppendTo(outKey, itemKey.Get(s))), nil
	})
	res, err := r.Invoke(t.Context(), nil)
	require.NoError(t, err)
	assert.Len(t, outKey.Get(res.State), n)
}

func TestMaxConcurrencyBoundsTheBranchesOfAFanOut(t *testing.T) {
	const n, limit = 30, 3
	var inFlight, peak atomic.Int32
	wait := barrier(limit)
	r := fanOut(t, n, func(ctx context.Context, s graph.State) (graph.Command, error) {
		cur := inFlight.Add(1)
		defer inFlight.Add(-1)
		for p := peak.Load(); cur > p && !peak.CompareAndSwap(p, cur); p = peak.Load() {
		}
		if itemKey.Get(s) < limit { // the first branches hold every slot at once
			if err := wait(ctx); err != nil {
				return graph.Command{}, err
			}
		}
		return graph.Update(graph.AppendTo(outKey, itemKey.Get(s))), nil
	}, graph.MaxConcurrency(limit))
	res, err := r.Invoke(t.Context(), nil)
	require.NoError(t, err)
	assert.Equal(t, int32(limit), peak.Load())
	assert.Len(t, outKey.Get(res.State), n)
}

func TestAPanicInABranchOfAFanOutFailsTheRunWithThatBranch(t *testing.T) {
	const n = 20
	wait := barrier(n) // every branch on a goroutine of its own
	r := fanOut(t, n, func(ctx context.Context, s graph.State) (graph.Command, error) {
		if err := wait(ctx); err != nil {
			return graph.Command{}, err
		}
		if itemKey.Get(s) == 17 {
			return boom(ctx, s)
		}
		return graph.Command{}, nil
	})
	_, err := r.Invoke(t.Context(), nil)
	var ne *graph.NodeError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, "worker[17]", ne.Node)
	assert.Equal(t, "fan/worker[17]", ne.Path)
	var pe *graph.PanicError
	require.ErrorAs(t, err, &pe)
	assert.EqualError(t, err, `graph: node "worker[17]" (step 1, attempt 1): panic: assignment to entry in nil map`)
}

func TestCancellingAFanOutStartsNoFurtherBranch(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var started []int
	r := fanOut(t, 10, func(_ context.Context, s graph.State) (graph.Command, error) {
		started = append(started, itemKey.Get(s)) // one at a time: MaxConcurrency(1)
		if itemKey.Get(s) == 3 {
			cancel()
		}
		return graph.Command{}, nil
	}, graph.MaxConcurrency(1))
	_, err := r.Invoke(ctx, nil)
	require.ErrorIs(t, err, context.Canceled)
	assert.EqualError(t, err, `graph: run "fan" cancelled in step 1: context canceled`)
	assert.Equal(t, []int{0, 1, 2, 3}, started)
}

func TestANodeEndingItsGoroutineInAParallelStepFailsItsTask(t *testing.T) {
	// Invoke: a is taken first, on the goroutine that runs the step, and
	// holds it until b runs on another goroutine, which b ends. Stream:
	// the step's tasks run on workers that report each task's end to the
	// loop, and one ended by runtime.Goexit must still report it.
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, r *graph.Runnable) error
	}{
		{"invoke", func(t *testing.T, r *graph.Runnable) error {
			_, err := r.Invoke(t.Context(), nil)
			return err
		}},
		{"stream", streamErr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bStarted := make(chan struct{})
			g := graph.New("goexit")
			g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
				<-bStarted
				return graph.Command{}, nil
			})
			g.AddNode("b", func(ctx context.Context, s graph.State) (graph.Command, error) {
				close(bStarted)
				runtime.Goexit()
				return graph.Command{}, nil
			})
			for _, n := range []string{"a", "b"} {
				g.AddEdge(graph.Start, n)
				g.AddEdge(n, graph.End)
			}
			r, err := g.Compile()
			require.NoError(t, err)
			err = tc.run(t, r)
			var ne *graph.NodeError
			require.ErrorAs(t, err, &ne)
			assert.Equal(t, "b", ne.Node)
			assert.EqualError(t, err, `graph: node "b" (step 0, attempt 1): the node called runtime.Goexit (t.FailNow?) on the goroutine running it`)
		})
	}
}

// streamErr runs r as a stream and returns the run's error, if any.
func streamErr(t *testing.T, r *graph.Runnable) error {
	t.Helper()
	for _, err := range r.Stream(t.Context(), nil) {
		if err != nil {
			return err
		}
	}
	return nil
}

// goexitFanOut is a fan-out of 4 branches under MaxConcurrency(2): branch 0
// holds its goroutine until branch 3 runs, and branch 1 ends its
// goroutine, so branches 2 and 3 run only if a goroutine takes its place.
func goexitFanOut(t *testing.T) *graph.Runnable {
	t.Helper()
	threeRan := make(chan struct{})
	return fanOut(t, 4, func(ctx context.Context, s graph.State) (graph.Command, error) {
		switch itemKey.Get(s) {
		case 0:
			select {
			case <-threeRan:
			case <-ctx.Done():
				return graph.Command{}, ctx.Err()
			}
		case 1:
			runtime.Goexit()
		case 3:
			close(threeRan)
		}
		return graph.Command{}, nil
	}, graph.MaxConcurrency(2))
}

func TestANodeEndingItsGoroutineLeavesItsPlaceToTheWaitingBranches(t *testing.T) {
	const want = `graph: node "worker[1]" (step 1, attempt 1): the node called runtime.Goexit (t.FailNow?) on the goroutine running it`
	t.Run("invoke", func(t *testing.T) {
		// Branch 0 is taken by the goroutine that runs the step (Invoke's
		// own), so branch 1 ends a helper.
		_, err := goexitFanOut(t).Invoke(t.Context(), nil)
		assert.EqualError(t, err, want)
	})
	t.Run("stream", func(t *testing.T) {
		assert.EqualError(t, streamErr(t, goexitFanOut(t)), want)
	})
}

func TestBranchesThatWaitForEachOtherRunAtOnceAmongBranchesThatReturn(t *testing.T) {
	// The odd branches return only once every odd branch has started; the
	// even ones return at once, so a goroutine that ran one takes the next
	// branch. No odd branch may be left waiting for a goroutine held by
	// another odd branch: with MaxConcurrency equal to the number of odd
	// branches, there are just enough.
	const n = 40
	for _, limit := range []int{0, n / 2} {
		for _, stream := range []bool{false, true} {
			wait := barrier(n / 2)
			r := fanOut(t, n, func(ctx context.Context, s graph.State) (graph.Command, error) {
				i := itemKey.Get(s)
				if i%2 == 1 {
					if err := wait(ctx); err != nil {
						return graph.Command{}, err
					}
				}
				return graph.Update(graph.AppendTo(outKey, i)), nil
			}, graph.MaxConcurrency(limit))
			var err error
			var res graph.Result
			if stream {
				err = streamErr(t, r)
			} else {
				res, err = r.Invoke(t.Context(), nil)
			}
			require.NoError(t, err, "limit %d, stream %v", limit, stream)
			if !stream {
				want := make([]int, n)
				for i := range want {
					want[i] = i
				}
				assert.Equal(t, want, outKey.Get(res.State), "in send order")
			}
		}
	}
}

func TestANodeEndingInvokesGoroutineInAWideStepEndsItsSiblingsFirst(t *testing.T) {
	// a is taken first, on Invoke's goroutine, which it ends (as t.FailNow
	// would): the run is cancelled and b, on a helper, ends before that
	// goroutine does, so nothing of the run outlives the call.
	bWaiting := make(chan struct{})
	var bEnded atomic.Bool
	g := graph.New("goexit")
	g.AddNode("a", func(ctx context.Context, s graph.State) (graph.Command, error) {
		<-bWaiting
		runtime.Goexit()
		return graph.Command{}, nil
	})
	g.AddNode("b", func(ctx context.Context, s graph.State) (graph.Command, error) {
		close(bWaiting)
		<-ctx.Done()
		bEnded.Store(true)
		return graph.Command{}, ctx.Err()
	})
	for _, n := range []string{"a", "b"} {
		g.AddEdge(graph.Start, n)
		g.AddEdge(n, graph.End)
	}
	r, err := g.Compile()
	require.NoError(t, err)
	returned := false
	ended := make(chan bool)
	go func() {
		defer func() { ended <- bEnded.Load() }()
		_, _ = r.Invoke(t.Context(), nil)
		returned = true
	}()
	assert.True(t, <-ended, "b ended before Invoke's goroutine")
	assert.False(t, returned, "Invoke's goroutine was ended by a")
}

func TestSubgraphsInAWideStepRunTheirOwnWideStepsAllAtOnce(t *testing.T) {
	// 8 branches run a subgraph that fans out to 3 leaves each; every
	// leaf waits until all 24 have started, so every nested run shares
	// none of its goroutines with another's waiting tasks, and each takes
	// its own task result buffer from the subgraph's pool.
	const outerN, innerN = 8, 3
	var wait func(context.Context) error
	inner := graph.New("inner", itemKey, outKey)
	inner.AddNode("split", func(ctx context.Context, s graph.State) (graph.Command, error) {
		packets := make([]graph.Packet, innerN)
		for j := range packets {
			packets[j] = graph.To("leaf", itemKey.Set(itemKey.Get(s)*10+j))
		}
		return graph.Send(packets...), nil
	}, graph.Destinations("leaf"))
	inner.AddNode("leaf", func(ctx context.Context, s graph.State) (graph.Command, error) {
		if err := wait(ctx); err != nil {
			return graph.Command{}, err
		}
		return graph.Update(graph.AppendTo(outKey, itemKey.Get(s))), nil
	})
	inner.AddEdge(graph.Start, "split")
	inner.AddEdge("leaf", graph.End)
	sub, err := inner.Compile()
	require.NoError(t, err)
	outer := graph.New("outer", itemKey, outKey)
	outer.AddNode("fan", func(ctx context.Context, s graph.State) (graph.Command, error) {
		packets := make([]graph.Packet, outerN)
		for i := range packets {
			packets[i] = graph.To("sub", itemKey.Set(i))
		}
		return graph.Send(packets...), nil
	}, graph.Destinations("sub"))
	outer.AddSubgraph("sub", sub)
	outer.AddEdge(graph.Start, "fan")
	outer.AddEdge("sub", graph.End)
	r, err := outer.Compile()
	require.NoError(t, err)

	var want []int
	for i := range outerN {
		for j := range innerN {
			want = append(want, i*10+j)
		}
	}
	for range 3 { // the pools hold the buffers of the runs before
		wait = barrier(outerN * innerN)
		res, err := r.Invoke(t.Context(), nil)
		require.NoError(t, err)
		assert.Equal(t, want, outKey.Get(res.State), "in send order, branch by branch")

		wait = barrier(outerN * innerN)
		var last graph.Event
		for ev, err := range r.Stream(t.Context(), nil, graph.Events(graph.EventRunEnd)) {
			require.NoError(t, err)
			if ev.Path == "outer" {
				last = ev
			}
		}
		require.Equal(t, graph.EventRunEnd, last.Kind)
		assert.Equal(t, want, outKey.Get(last.State))
	}
}

func TestARetriedBranchRunsAgainWhileItsSiblingsWaitForIt(t *testing.T) {
	// Branch 1 fails its first attempt; every branch's last attempt waits
	// until all four are running, so the retry must run while its
	// siblings hold their goroutines.
	const n = 4
	for _, stream := range []bool{false, true} {
		wait := barrier(n)
		var failed atomic.Bool
		g := graph.New("retry", itemKey, outKey)
		g.AddNode("fan", func(ctx context.Context, s graph.State) (graph.Command, error) {
			packets := make([]graph.Packet, n)
			for i := range packets {
				packets[i] = graph.To("worker", itemKey.Set(i))
			}
			return graph.Send(packets...), nil
		}, graph.Destinations("worker"))
		g.AddNode("worker", func(ctx context.Context, s graph.State) (graph.Command, error) {
			if itemKey.Get(s) == 1 && failed.CompareAndSwap(false, true) {
				return graph.Command{}, errors.New("flaky")
			}
			if err := wait(ctx); err != nil {
				return graph.Command{}, err
			}
			return graph.Update(graph.AppendTo(outKey, itemKey.Get(s))), nil
		}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Millisecond}))
		g.AddEdge(graph.Start, "fan")
		g.AddEdge("worker", graph.End)
		r, err := g.Compile(graph.MaxConcurrency(n))
		require.NoError(t, err)
		if !stream {
			res, err := r.Invoke(t.Context(), nil)
			require.NoError(t, err)
			assert.Equal(t, []int{0, 1, 2, 3}, outKey.Get(res.State))
			continue
		}
		attempts := map[string]int{}
		for ev, err := range r.Stream(t.Context(), nil, graph.Events(graph.EventNodeEnd)) {
			require.NoError(t, err)
			attempts[ev.Node+" "+ev.Path] = ev.Attempt
		}
		assert.Equal(t, map[string]int{"fan retry/fan": 1, "worker retry/worker[0]": 1,
			"worker retry/worker[1]": 2, "worker retry/worker[2]": 1, "worker retry/worker[3]": 1}, attempts)
	}
}

func TestAFanOutThatPartlyFailsAndPausesResumesOnlyTheBranchesLeft(t *testing.T) {
	// Six branches run at once, storing their results as they finish;
	// branch 2 asks a question and branch 4 fails once. Each continuation
	// runs only the branches that have not finished.
	const n = 6
	wait := barrier(n)
	var runs [n]atomic.Int32
	r := fanOut(t, n, func(ctx context.Context, s graph.State) (graph.Command, error) {
		i := itemKey.Get(s)
		runs[i].Add(1)
		if err := wait(ctx); err != nil {
			return graph.Command{}, err
		}
		switch {
		case i == 2:
			v, err := graph.InterruptAs[int](ctx, "how much?")
			if err != nil {
				return graph.Command{}, err
			}
			i = v
		case i == 4 && runs[i].Load() == 1:
			return graph.Command{}, graph.Permanent(errors.New("disk full"))
		}
		return graph.Update(graph.AppendTo(outKey, i)), nil
	}, graph.WithSaver(memory.New()))
	th := graph.Thread("t")

	_, err := r.Invoke(t.Context(), graph.Input(), th)
	assert.EqualError(t, err, `graph: node "worker[4]" (step 1, attempt 1): disk full`)
	res, err := r.Invoke(t.Context(), nil, th)
	require.NoError(t, err)
	require.Equal(t, graph.StatusInterrupted, res.Status)
	require.Len(t, res.Interrupts, 1)
	assert.Equal(t, "fan/worker[2]", res.Interrupts[0].Path)
	res, err = r.Invoke(t.Context(), nil, th, graph.Resume(20))
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1, 20, 3, 4, 5}, outKey.Get(res.State), "in send order")
	for i := range runs {
		want := int32(1)
		if i == 2 || i == 4 {
			want = 2
		}
		assert.Equal(t, want, runs[i].Load(), "runs of branch %d", i)
	}
}

func TestConcurrentRunsOfOneRunnableKeepTheirOwnResultsAndEvents(t *testing.T) {
	// Runs of one Runnable share its pool of task result buffers and the
	// name lists of its one-task steps; each run's results, and the events
	// a consumer keeps, must stay its own while the others run and after.
	const n, runners, runs = 10, 4, 6
	g := graph.New("many", itemKey, outKey)
	g.AddNode("fan", func(ctx context.Context, s graph.State) (graph.Command, error) {
		packets := make([]graph.Packet, n)
		for i := range packets {
			packets[i] = graph.To("worker", itemKey.Set(itemKey.Get(s)*100+i))
		}
		return graph.Send(packets...), nil
	}, graph.Destinations("worker"))
	g.AddNode("worker", func(ctx context.Context, s graph.State) (graph.Command, error) {
		return graph.Update(graph.AppendTo(outKey, itemKey.Get(s))), nil
	})
	g.AddEdge(graph.Start, "fan")
	g.AddEdge("worker", graph.End)
	r, err := g.Compile()
	require.NoError(t, err)

	type kept struct {
		id      int
		out     []int
		updates [][]graph.Write
		steps   []any
	}
	results := make(chan kept, runners*runs)
	for w := range runners {
		go func() {
			for k := range runs {
				id := w*runs + k + 1
				in := graph.Input(itemKey.Set(id))
				got := kept{id: id}
				if k%2 == 0 {
					res, err := r.Invoke(t.Context(), in)
					if err == nil {
						got.out = outKey.Get(res.State)
					}
				} else {
					for ev, err := range r.Stream(t.Context(), in) {
						switch {
						case err != nil:
						case ev.Kind == graph.EventStepStart:
							got.steps = append(got.steps, ev.Data)
						case ev.Kind == graph.EventUpdate && ev.Node == "worker":
							got.updates = append(got.updates, ev.Writes)
						case ev.Kind == graph.EventRunEnd:
							got.out = outKey.Get(ev.State)
						}
					}
				}
				results <- got
			}
		}()
	}
	var all []kept
	for range runners * runs {
		all = append(all, <-results)
	}
	for _, got := range all { // every run has ended: check what each kept
		want := make([]int, n)
		for i := range want {
			want[i] = got.id*100 + i
		}
		assert.Equal(t, want, got.out, "run %d", got.id)
		if got.steps == nil {
			continue
		}
		assert.Equal(t, []any{[]string{"fan"}, []string{
			"worker[0]", "worker[1]", "worker[2]", "worker[3]", "worker[4]",
			"worker[5]", "worker[6]", "worker[7]", "worker[8]", "worker[9]"}}, got.steps, "run %d", got.id)
		var updated []any
		for _, ws := range got.updates {
			require.Len(t, ws, 1)
			updated = append(updated, ws[0].Value())
		}
		assert.Len(t, updated, n, "run %d", got.id)
		for i, v := range updated {
			assert.Equal(t, []int{want[i]}, v, "run %d, update %d", got.id, i)
		}
	}
}
