package runs_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/runs"
)

// gate is an executor whose runs start, report it, and end when released
// (or when cancelled); it counts the runs active on each thread.
type gate struct {
	release chan struct{}
	began   chan string // the run ids, as they begin
	mu      sync.Mutex
	active  map[string]int // by thread
	most    int            // the most active on one thread at once
	order   []string
}

func newGate(n int) *gate {
	return &gate{release: make(chan struct{}), began: make(chan string, n), active: map[string]int{}}
}

func (g *gate) Stream(ctx context.Context, _ []graph.Write, opts ...graph.Option) iter.Seq2[graph.Event, error] {
	return func(yield func(graph.Event, error) bool) {
		thread, run := threadAndRun(opts)
		g.mu.Lock()
		g.active[thread]++
		g.most = max(g.most, g.active[thread])
		g.order = append(g.order, run)
		g.mu.Unlock()
		defer func() {
			g.mu.Lock()
			g.active[thread]--
			g.mu.Unlock()
		}()
		if !yield(graph.Event{Kind: graph.EventRunStart, Path: "g"}, nil) ||
			!yield(graph.Event{Kind: graph.EventStepStart, Path: "g"}, nil) {
			return
		}
		g.began <- run
		select {
		case <-g.release:
		case <-ctx.Done():
			err := context.Cause(ctx)
			yield(graph.Event{Kind: graph.EventError, Path: "g", Err: err}, err)
			return
		}
		yield(graph.Event{Kind: graph.EventRunEnd, Path: "g", Data: graph.StatusDone}, nil)
	}
}

// probe is a compiled graph whose Spec reads a run's options.
var probe = func() *graph.Runnable {
	g := graph.New("probe", graph.NewKey[string]("x"))
	g.AddNode("n", func(context.Context, graph.State) (graph.Command, error) { return graph.Command{}, nil })
	g.AddEdge(graph.Start, "n")
	g.AddEdge("n", graph.End)
	r, err := g.Compile()
	if err != nil {
		panic(err)
	}
	return r
}()

// threadAndRun are the thread and run id the options of a run say.
func threadAndRun(opts []graph.Option) (thread, run string) {
	spec, _ := probe.Spec(opts...)
	run, _ = spec.Runtime[graph.RuntimeRun].(string)
	return spec.Thread, run
}

func task(id, thread string, x runs.Executor, busy runs.Busy, limits runs.Limits) runs.Task {
	return runs.Task{Run: &runs.Run{ID: id, Thread: thread, Owner: "ann", Graph: "g"}, Executor: x, Busy: busy, Limits: limits}
}

// TestManagerAdmitsExactlyTheQuotaUnderParallelSubmits: 200 runs asked
// at once on their own threads, against a quota of 16 active runs: 16 are
// admitted, the others refused with a *QuotaError.
func TestManagerAdmitsExactlyTheQuotaUnderParallelSubmits(t *testing.T) {
	const n, quota = 200, 16
	m := runs.NewManager(runs.ManagerConfig{})
	g := newGate(n)
	var admitted, refused atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, err := m.Submit(task(fmt.Sprint("r", i), fmt.Sprint("t", i), g, runs.Refuse, runs.Limits{MaxActive: quota, MaxQueued: 0}))
			var qe *runs.QuotaError
			switch {
			case err == nil:
				admitted.Add(1)
			case errors.As(err, &qe):
				assert.Equal(t, runs.QuotaActiveRuns, qe.Quota)
				refused.Add(1)
			default:
				t.Errorf("unexpected refusal: %v", err)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int32(quota), admitted.Load())
	assert.Equal(t, int32(n-quota), refused.Load())
	assert.Equal(t, runs.Usage{Active: quota}, m.Ledger().Usage("ann"))
	close(g.release)
	require.NoError(t, m.Close(t.Context(), nil))
	assert.Equal(t, runs.Usage{}, m.Ledger().Usage("ann"), "every place released")
}

// TestManagerRunsOneRunPerThreadInOrder: 100 runs asked at once on one
// thread run one at a time; runs queued one after the other run in the
// order they were asked for.
func TestManagerRunsOneRunPerThreadInOrder(t *testing.T) {
	const n = 100
	m := runs.NewManager(runs.ManagerConfig{})
	g := newGate(n)
	close(g.release) // each run ends at once
	hs := make(chan *runs.Handle, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			h, err := m.Submit(task(fmt.Sprint("p", i), "t", g, runs.Queue, runs.NoLimits))
			if assert.NoError(t, err) {
				hs <- h
			}
		})
	}
	wg.Wait()
	close(hs)
	for h := range hs {
		<-h.Done()
		assert.Equal(t, runs.StatusDone, h.Status())
	}
	assert.Equal(t, 1, g.most, "never two runs of a thread at once")
	assert.Len(t, g.order, n)

	// In order: the first holds the thread while the others queue.
	g2 := newGate(10)
	first, err := m.Submit(task("o0", "u", g2, runs.Queue, runs.NoLimits))
	require.NoError(t, err)
	assert.Equal(t, "o0", <-g2.began)
	var want []string
	var last *runs.Handle
	for i := 1; i <= 5; i++ {
		h, err := m.Submit(task(fmt.Sprint("o", i), "u", g2, runs.Queue, runs.NoLimits))
		require.NoError(t, err)
		assert.Equal(t, runs.StatusQueued, h.Status())
		want, last = append(want, h.Run().ID), h
	}
	_, err = m.Submit(task("busy", "u", g2, runs.Refuse, runs.NoLimits))
	var be *runs.BusyError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, "o0", be.Run, "the thread's active run")
	close(g2.release)
	<-first.Done()
	<-last.Done()
	assert.Equal(t, append([]string{"o0"}, want...), g2.order)
}

// TestManagerCancelsQueuedAndRunningRuns: a queued run cancelled ends at
// once without executing and gives its place up; a running one ends
// cancelled with its cause when its executor notices, and the thread's
// next run starts.
func TestManagerCancelsQueuedAndRunningRuns(t *testing.T) {
	m := runs.NewManager(runs.ManagerConfig{})
	g := newGate(3)
	running, err := m.Submit(task("a", "t", g, runs.Queue, runs.NoLimits))
	require.NoError(t, err)
	<-g.began
	<-running.Started()
	queued, err := m.Submit(task("b", "t", g, runs.Queue, runs.NoLimits))
	require.NoError(t, err)
	next, err := m.Submit(task("c", "t", g, runs.Queue, runs.NoLimits))
	require.NoError(t, err)
	assert.Equal(t, runs.Usage{Active: 1, Queued: 2}, m.Ledger().Usage("ann"))

	cause := errors.New("the user said stop")
	require.True(t, queued.Cancel(cause))
	<-queued.Done()
	assert.Equal(t, runs.StatusCancelled, queued.Status())
	assert.Same(t, cause, queued.Err())
	assert.Equal(t, runs.Usage{Active: 1, Queued: 1}, m.Ledger().Usage("ann"))

	require.True(t, running.Cancel(cause))
	<-running.Done()
	assert.Equal(t, runs.StatusCancelled, running.Status())
	assert.Same(t, cause, running.Err())
	assert.False(t, running.Cancel(cause), "it had ended")
	assert.Equal(t, "c", <-g.began, "the thread's next run started")
	close(g.release)
	<-next.Done()
	assert.Equal(t, runs.StatusDone, next.Status())
	assert.Equal(t, []string{"a", "c"}, g.order, "the cancelled queued run never executed")
	assert.Equal(t, runs.Usage{}, m.Ledger().Usage("ann"))
}

// TestManagerExecutesOnTheTasksExecutor: Prepare chooses a run's
// executor, options and meter when it starts; a Remote executor's model
// calls show in the run's usage; the run's events are held after a
// sequence number for a stream that re-attaches, encoded by the
// Manager's Encode.
func TestManagerExecutesOnTheTasksExecutor(t *testing.T) {
	m := runs.NewManager(runs.ManagerConfig{Encode: func(id int64, run string, ev graph.Event) []byte {
		return fmt.Appendf(nil, "%s#%d:%s", run, id, ev.Name())
	}})
	var prepared atomic.Bool
	tk := runs.Task{Run: &runs.Run{ID: "r", Thread: "t", Owner: "ann", Graph: "g"}, Limits: runs.NoLimits,
		Prepare: func(ctx context.Context, h *runs.Handle) (runs.Execution, error) {
			prepared.Store(true)
			_, _, own := runs.Meter(ctx, llm.Budget{}, llm.Spend{}, nil)
			return runs.Execution{Executor: runs.Remote(scriptedExecutor{events: workerCalls("g")}), Meter: own}, nil
		}}
	h, err := m.Submit(tk)
	require.NoError(t, err)
	h.Attach()
	defer h.Detach()
	<-h.Done()
	assert.True(t, prepared.Load())
	assert.Equal(t, runs.StatusDone, h.Status())
	assert.Equal(t, 2, h.Usage().Calls, "the worker's calls")
	assert.Equal(t, 175, h.Usage().Tokens())
	frames, dropped, closed, _ := h.Events(2, nil)
	assert.Zero(t, dropped)
	assert.True(t, closed)
	require.Len(t, frames, 2)
	assert.Equal(t, "r#3:model_call", string(frames[0].Data))
	assert.Equal(t, "run_end", frames[1].Name)
	assert.Same(t, h, m.Get("r"))

	// A run whose preparation fails ends before it started, with that error.
	bad := errors.New("thread is interrupted")
	h, err = m.Submit(runs.Task{Run: &runs.Run{ID: "r2", Thread: "t", Owner: "ann", Graph: "g"}, Limits: runs.NoLimits,
		Prepare: func(context.Context, *runs.Handle) (runs.Execution, error) { return runs.Execution{}, bad }})
	require.NoError(t, err)
	<-h.Started()
	<-h.Done()
	assert.Equal(t, runs.StatusError, h.Status())
	assert.Same(t, bad, h.Err())
}

// TestManagerRetainsFinishedRunsWithinBounds: beyond RetainRuns the
// oldest finished runs are forgotten; Close refuses new runs.
func TestManagerRetainsFinishedRunsWithinBounds(t *testing.T) {
	m := runs.NewManager(runs.ManagerConfig{RetainRuns: 3})
	x := scriptedExecutor{events: workerCalls("g")}
	for i := range 10 {
		h, err := m.Submit(task(fmt.Sprint("r", i), fmt.Sprint("t", i), x, runs.Refuse, runs.NoLimits))
		require.NoError(t, err)
		<-h.Done()
	}
	for i := range 10 {
		assert.Equal(t, i >= 7, m.Get(fmt.Sprint("r", i)) != nil, "run r%d", i)
	}
	require.NoError(t, m.Close(t.Context(), nil))
	_, err := m.Submit(task("late", "t", x, runs.Refuse, runs.NoLimits))
	assert.ErrorIs(t, err, runs.ErrClosed)
}

// TestManagerNewThenStart: a run's events are there to attach to before
// it starts; Start admits it, and a refused run's context ends with the
// refusal.
func TestManagerNewThenStart(t *testing.T) {
	var recorded []runs.Frame
	m := runs.NewManager(runs.ManagerConfig{Encode: func(id int64, run string, ev graph.Event) []byte {
		return fmt.Appendf(nil, "%s#%d", run, id)
	}})
	tk := task("r", "t", scriptedExecutor{events: workerCalls("g")}, runs.Refuse, runs.NoLimits)
	tk.Value, tk.EventsAfter = "mine", 10
	tk.Recorded = func(_ graph.Event, f runs.Frame) { recorded = append(recorded, f) }
	var ended string
	tk.Ended = func(h *runs.Handle) {
		select {
		case <-h.Done():
			t.Error("Ended is called before the waiters wake")
		default:
		}
		ended = h.Status()
	}
	h, err := m.New(tk)
	require.NoError(t, err)
	assert.Nil(t, m.Get("r"), "not kept before it starts")
	h.Attach()
	defer h.Detach()
	queued, err := m.Start(h, runs.Refuse, runs.NoLimits)
	require.NoError(t, err)
	assert.False(t, queued)
	<-h.Done()
	assert.Equal(t, "mine", h.Value())
	assert.Equal(t, runs.StatusDone, ended)
	frames, _, closed, _ := h.Events(0, nil)
	assert.True(t, closed)
	require.NotEmpty(t, frames)
	assert.Equal(t, int64(11), frames[0].ID, "numbered after EventsAfter")
	assert.Equal(t, "r#11", string(frames[0].Data))
	assert.Equal(t, frames, recorded, "Recorded saw each frame")
	assert.Equal(t, []*runs.Handle{h}, m.Thread("t").Kept)

	g := newGate(1)
	busy, err := m.Submit(task("a", "t", g, runs.Refuse, runs.NoLimits))
	require.NoError(t, err)
	refused, err := m.New(task("b", "t", g, runs.Refuse, runs.NoLimits))
	require.NoError(t, err)
	_, err = m.Start(refused, runs.Refuse, runs.NoLimits)
	var be *runs.BusyError
	require.ErrorAs(t, err, &be)
	assert.ErrorAs(t, context.Cause(refused.Context()), &be)
	close(g.release)
	<-busy.Done()
}

// TestManagerChecksAndClosesThreadsInTheAdmittingStep: 100 runs asked
// at once on one thread whose Check refuses a second open run: one is
// admitted. A thread closed to new runs refuses them until reopened; a
// thread with an open run is not closed.
func TestManagerChecksAndClosesThreadsInTheAdmittingStep(t *testing.T) {
	const n = 100
	m := runs.NewManager(runs.ManagerConfig{})
	g := newGate(n)
	alone := errors.New("one open run at a time")
	var admitted atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			tk := task(fmt.Sprint("r", i), "t", g, runs.Queue, runs.NoLimits)
			tk.Check = func(open runs.ThreadRuns) error {
				if open.Open() {
					return alone
				}
				return nil
			}
			if _, err := m.Submit(tk); err == nil {
				admitted.Add(1)
			} else {
				assert.ErrorIs(t, err, alone)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int32(1), admitted.Load())
	th := m.Thread("t")
	require.NotNil(t, th.Active)
	assert.Empty(t, th.Queued)

	_, err := m.CloseThread("t")
	var be *runs.BusyError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, th.Active.Run().ID, be.Run)
	close(g.release)
	<-th.Active.Done()

	reopen, err := m.CloseThread("t")
	require.NoError(t, err)
	assert.Nil(t, m.Get(th.Active.Run().ID), "its finished runs are forgotten")
	_, err = m.CloseThread("t")
	assert.ErrorIs(t, err, runs.ErrThreadClosed)
	var refused atomic.Int32
	for i := range n {
		wg.Go(func() {
			_, err := m.Submit(task(fmt.Sprint("c", i), "t", g, runs.Queue, runs.NoLimits))
			if errors.Is(err, runs.ErrThreadClosed) {
				refused.Add(1)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int32(n), refused.Load())
	reopen()
	h, err := m.Submit(task("after", "t", g, runs.Queue, runs.NoLimits))
	require.NoError(t, err)
	<-h.Done()
	assert.Equal(t, runs.StatusDone, h.Status())
}

// TestManagerStartsAdmittedRunsWithoutTheLedger: a run admitted elsewhere
// (a replica's claim) takes no place in the ledger and runs at once.
func TestManagerStartsAdmittedRunsWithoutTheLedger(t *testing.T) {
	m := runs.NewManager(runs.ManagerConfig{})
	g := newGate(1)
	tk := task("claimed", "t", g, runs.Refuse, runs.Limits{MaxActive: 0, MaxQueued: 0})
	tk.Admitted = true
	h, err := m.Submit(tk)
	require.NoError(t, err)
	assert.Equal(t, "claimed", <-g.began)
	assert.Equal(t, runs.Usage{}, m.Ledger().Usage("ann"))
	assert.Same(t, h, m.Thread("t").Active)
	close(g.release)
	<-h.Done()
	assert.Nil(t, m.Thread("t").Active)

	// Claimed again (taken over), it replaces the run kept under its id;
	// a run not admitted elsewhere with a kept id is refused.
	again, err := m.Submit(tk)
	require.NoError(t, err)
	<-again.Done()
	assert.Same(t, again, m.Get("claimed"))
	m.WithThread("t", func(th runs.ThreadRuns) { assert.Equal(t, []*runs.Handle{again}, th.Kept) })
	_, err = m.Submit(task("claimed", "t", g, runs.Refuse, runs.NoLimits))
	assert.ErrorContains(t, err, "exists")
	require.NoError(t, m.Close(t.Context(), nil))
}

// TestManagerSlimRunsKeepNoValues: a Slim run's Ended reads its
// outcome's values; once it ended, the run it keeps holds neither them
// nor its input.
func TestManagerSlimRunsKeepNoValues(t *testing.T) {
	m := runs.NewManager(runs.ManagerConfig{})
	tk := task("r", "t", scriptedExecutor{events: workerCalls("g")}, runs.Refuse, runs.NoLimits)
	tk.Run.Input = []graph.Write{}
	tk.Slim = true
	var end graph.Event
	tk.Ended = func(h *runs.Handle) { end = h.Outcome().End }
	h, err := m.Submit(tk)
	require.NoError(t, err)
	<-h.Done()
	assert.Equal(t, graph.EventRunEnd, end.Kind, "Ended read the outcome")
	assert.Zero(t, h.Outcome().End.Kind, "the kept run holds no values")
	assert.Nil(t, h.Run().Input)
}
