package graph_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
)

// harness runs tasks with scripted behaviours; for every task it checks
// that each dependency had returned before the task started, and it keeps
// the start order and the most tasks ever in flight.
type harness struct {
	t     *testing.T
	tasks []taskDef
	do    map[string]func(ctx context.Context) error

	mu       sync.Mutex
	finished map[string]bool
	started  []string
	inFlight atomic.Int64
	max      atomic.Int64
}

func newHarness(t *testing.T, tasks []taskDef, do map[string]func(context.Context) error) *harness {
	return &harness{t: t, tasks: tasks, do: do, finished: map[string]bool{}}
}

func (h *harness) run(ctx context.Context, id string) error {
	h.begin(id)
	defer h.end(id)
	if f := h.do[id]; f != nil {
		return f(ctx)
	}
	return nil
}

func (h *harness) begin(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, tk := range h.tasks {
		for _, d := range tk.Deps {
			if tk.Key == id && !h.finished[d] {
				h.t.Errorf("%s started before its dependency %s returned", id, d)
			}
		}
	}
	h.started = append(h.started, id)
	n := h.inFlight.Add(1)
	for m := h.max.Load(); n > m && !h.max.CompareAndSwap(m, n); m = h.max.Load() {
	}
}

func (h *harness) end(id string) {
	h.inFlight.Add(-1)
	h.mu.Lock()
	h.finished[id] = true
	h.mu.Unlock()
}

func fail(err error) func(context.Context) error {
	return func(context.Context) error { return err }
}

// after returns err once d of the bubble's fake time has passed: it
// orders when tasks finish without depending on the machine's speed.
func after(d time.Duration, err error) func(context.Context) error {
	return func(context.Context) error { time.Sleep(d); return err }
}

// untilCancelled closes started, then waits for its context to end.
func untilCancelled(started chan<- struct{}) func(context.Context) error {
	return func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	}
}

func task(id string, deps ...string) taskDef { return taskDef{Key: id, Deps: deps} }

// taskDef is a task of the ported tests: a key and its dependencies, run
// by the harness's function.
type taskDef struct {
	Key  string
	Deps []string
}

// schedule runs defs with graph.Schedule, each task calling run with its
// key: the shape of the DAG runner these tests were written for.
func schedule(ctx context.Context, defs []taskDef, opts graph.TaskOptions, run func(ctx context.Context, key string) error) ([]graph.TaskResult[struct{}], error) {
	tasks := make([]graph.Task[struct{}], len(defs))
	for i, d := range defs {
		tasks[i] = graph.Task[struct{}]{Key: d.Key, Deps: d.Deps, Run: func(ctx context.Context) (struct{}, error) {
			return struct{}{}, run(ctx, d.Key)
		}}
	}
	return graph.Schedule(ctx, opts, tasks)
}

var (
	errA     = errors.New("a broke")
	errB     = errors.New("b broke")
	errFatal = errors.New("the store is gone")
	errAsk1  = errors.New("question 1")
	errAsk2  = errors.New("question 2")
)

func classify(err error) graph.TaskErrorKind {
	switch {
	case errors.Is(err, errAsk1), errors.Is(err, errAsk2):
		return graph.TaskPause
	case errors.Is(err, errFatal):
		return graph.TaskStop
	}
	return graph.TaskFail
}

type outcome struct {
	id     string
	status graph.TaskStatus
	err    error // checked with errors.Is
}

func TestSchedule(t *testing.T) {
	cases := []struct {
		name  string
		tasks []taskDef
		opts  graph.TaskOptions
		// do is called inside the bubble: its channels belong to it.
		do      func() map[string]func(context.Context) error
		want    []outcome
		wantErr []error // each in Schedule's error; nil: no error
		check   func(t *testing.T, h *harness)
	}{{
		name:  "a task waits for its dependencies; ready tasks run together",
		tasks: []taskDef{task("a"), task("b"), task("c", "a", "b"), task("d", "c")},
		do: func() map[string]func(context.Context) error {
			both := barrier(2) // a and b pass only if both are in flight
			return map[string]func(context.Context) error{"a": both, "b": both}
		},
		want: []outcome{{"a", graph.TaskDone, nil}, {"b", graph.TaskDone, nil}, {"c", graph.TaskDone, nil}, {"d", graph.TaskDone, nil}},
		check: func(t *testing.T, h *harness) {
			assert.Equal(t, []string{"c", "d"}, h.started[2:])
		},
	}, {
		name:  "a limit of one runs the ready tasks in the order given",
		tasks: []taskDef{task("a"), task("b", "a"), task("c"), task("d")},
		opts:  graph.TaskOptions{Limit: 1},
		want:  []outcome{{"a", graph.TaskDone, nil}, {"b", graph.TaskDone, nil}, {"c", graph.TaskDone, nil}, {"d", graph.TaskDone, nil}},
		check: func(t *testing.T, h *harness) {
			assert.Equal(t, []string{"a", "b", "c", "d"}, h.started)
			assert.EqualValues(t, 1, h.max.Load())
		},
	}, {
		name:  "by default a failure skips its dependents and the other branch goes on",
		tasks: []taskDef{task("a"), task("b"), task("c", "a"), task("d", "b"), task("e", "c"), task("f", "d", "e")},
		do: func() map[string]func(context.Context) error {
			return map[string]func(context.Context) error{"a": fail(errA)}
		},
		want: []outcome{{"a", graph.TaskFailed, errA}, {"b", graph.TaskDone, nil}, {"c", graph.TaskSkipped, nil},
			{"d", graph.TaskDone, nil}, {"e", graph.TaskSkipped, nil}, {"f", graph.TaskSkipped, nil}},
	}, {
		name:  "fail-fast: the first failure cancels the tasks in flight and starts no other",
		tasks: []taskDef{task("a"), task("b"), task("c", "a"), task("d")},
		opts:  graph.TaskOptions{Limit: 2, FailFast: true},
		do: func() map[string]func(context.Context) error {
			bStarted := make(chan struct{})
			return map[string]func(context.Context) error{
				"a": func(context.Context) error { <-bStarted; return errA },
				"b": untilCancelled(bStarted),
			}
		},
		want:    []outcome{{"a", graph.TaskFailed, errA}, {"b", graph.TaskFailed, context.Canceled}, {"c", graph.TaskSkipped, nil}, {"d", graph.TaskPending, nil}},
		wantErr: []error{errA},
	}, {
		name:  "an error classified Stop stops the run without fail-fast",
		tasks: []taskDef{task("a"), task("b"), task("c", "a"), task("d")},
		opts:  graph.TaskOptions{Limit: 2, Classify: classify},
		do: func() map[string]func(context.Context) error {
			bStarted := make(chan struct{})
			return map[string]func(context.Context) error{
				"a": func(context.Context) error { <-bStarted; return errFatal },
				"b": untilCancelled(bStarted),
			}
		},
		want:    []outcome{{"a", graph.TaskFailed, errFatal}, {"b", graph.TaskFailed, context.Canceled}, {"c", graph.TaskSkipped, nil}, {"d", graph.TaskPending, nil}},
		wantErr: []error{errFatal},
	}, {
		name:  "pauses from concurrent tasks are reported together; their dependents wait, the rest runs",
		tasks: []taskDef{task("p1"), task("p2"), task("after-p1", "p1"), task("x"), task("y", "x")},
		opts:  graph.TaskOptions{Classify: classify},
		do: func() map[string]func(context.Context) error {
			both := barrier(2)
			return map[string]func(context.Context) error{
				// p2 pauses first; p1 a second later.
				"p1": func(ctx context.Context) error { _ = both(ctx); return after(time.Second, errAsk1)(ctx) },
				"p2": func(ctx context.Context) error { _ = both(ctx); return errAsk2 },
			}
		},
		want: []outcome{{"p1", graph.TaskInterrupted, errAsk1}, {"p2", graph.TaskInterrupted, errAsk2}, {"after-p1", graph.TaskPending, nil},
			{"x", graph.TaskDone, nil}, {"y", graph.TaskDone, nil}},
		wantErr: []error{errAsk1, errAsk2},
	}, {
		name:  "a failure that stops the run wins over pauses",
		tasks: []taskDef{task("p"), task("f")},
		opts:  graph.TaskOptions{FailFast: true, Classify: classify},
		do: func() map[string]func(context.Context) error {
			return map[string]func(context.Context) error{"p": fail(errAsk1), "f": after(time.Second, errB)}
		},
		want:    []outcome{{"p", graph.TaskInterrupted, errAsk1}, {"f", graph.TaskFailed, errB}},
		wantErr: []error{errB},
	}, {
		name:  "results come in the order given, not the order tasks finished",
		tasks: []taskDef{task("x"), task("y"), task("z")},
		opts:  graph.TaskOptions{FailFast: false},
		do: func() map[string]func(context.Context) error {
			return map[string]func(context.Context) error{
				"x": after(2*time.Second, errA), "y": after(time.Second, nil), "z": fail(errB),
			}
		},
		want: []outcome{{"x", graph.TaskFailed, errA}, {"y", graph.TaskDone, nil}, {"z", graph.TaskFailed, errB}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var do map[string]func(context.Context) error
				if tc.do != nil {
					do = tc.do()
				}
				h := newHarness(t, tc.tasks, do)
				res, err := schedule(t.Context(), tc.tasks, tc.opts, h.run)
				assert.Equal(t, tc.want, outcomes(t, tc.want, res))
				if tc.wantErr == nil {
					assert.NoError(t, err)
				}
				for _, w := range tc.wantErr {
					assert.ErrorIs(t, err, w)
				}
				if joined, ok := err.(interface{ Unwrap() []error }); ok && len(tc.wantErr) > 1 {
					assert.Equal(t, tc.wantErr, joined.Unwrap(), "in the order of the tasks")
				}
				if tc.check != nil {
					tc.check(t, h)
				}
			})
		})
	}
}

// outcomes turns results into outcomes, keeping from each error only the
// wanted one it wraps, so they compare with want.
func outcomes(t *testing.T, want []outcome, res []graph.TaskResult[struct{}]) []outcome {
	t.Helper()
	out := make([]outcome, len(res))
	for i, r := range res {
		out[i] = outcome{id: r.Key, status: r.Status, err: r.Err}
		if i < len(want) && want[i].err != nil && errors.Is(r.Err, want[i].err) {
			out[i].err = want[i].err
		}
	}
	return out
}

func TestScheduleNeverHasMoreThanLimitTasksInFlight(t *testing.T) {
	for _, limit := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("limit %d", limit), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// Three rounds of limit tasks, each round held by a barrier
				// of limit: it opens only if the runner starts limit tasks
				// at once, and more than limit in flight shows in the max.
				var tasks []taskDef
				do := map[string]func(context.Context) error{}
				for round := range 3 {
					b := barrier(limit)
					for i := range limit {
						id := string(rune('a'+round)) + string(rune('0'+i))
						tasks = append(tasks, task(id))
						do[id] = b
					}
				}
				h := newHarness(t, tasks, do)
				res, err := schedule(t.Context(), tasks, graph.TaskOptions{Limit: limit}, h.run)
				require.NoError(t, err)
				assert.EqualValues(t, limit, h.max.Load())
				for _, r := range res {
					assert.Equal(t, graph.TaskDone, r.Status, r.Key)
				}
			})
		})
	}
}

func TestScheduleReturnsPromptlyWhenItsContextIsCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		aStarted, bStarted := make(chan struct{}), make(chan struct{})
		tasks := []taskDef{task("a"), task("b"), task("c"), task("d", "a")}
		h := newHarness(t, tasks, map[string]func(context.Context) error{
			"a": untilCancelled(aStarted), "b": untilCancelled(bStarted),
		})
		type ran struct {
			res []graph.TaskResult[struct{}]
			err error
		}
		done := make(chan ran)
		start := time.Now()
		go func() {
			res, err := schedule(ctx, tasks, graph.TaskOptions{Limit: 2}, h.run)
			done <- ran{res, err}
		}()
		<-aStarted
		<-bStarted
		cancel()
		got := <-done
		assert.Zero(t, time.Since(start), "no fake time passed: Schedule waited on nothing but its tasks")
		require.ErrorIs(t, got.err, context.Canceled)
		assert.Equal(t, []string{"a", "b"}, sortedStarts(h), "nothing started after the cancel")
		assert.Equal(t, []outcome{{"a", graph.TaskFailed, context.Canceled}, {"b", graph.TaskFailed, context.Canceled},
			{"c", graph.TaskPending, nil}, {"d", graph.TaskSkipped, nil}}, outcomes(t, []outcome{{err: context.Canceled}, {err: context.Canceled}}, got.res))
		assert.Zero(t, h.inFlight.Load(), "every task had returned")
	})
}

func sortedStarts(h *harness) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := append([]string(nil), h.started...)
	if len(s) == 2 && s[0] > s[1] {
		s[0], s[1] = s[1], s[0]
	}
	return s
}

func TestScheduleWithAnEndedContextStartsNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	called := false
	res, err := schedule(ctx, []taskDef{task("a")}, graph.TaskOptions{}, func(context.Context, string) error {
		called = true
		return nil
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.False(t, called)
	assert.Equal(t, []graph.TaskResult[struct{}]{{Key: "a", ID: "a", Status: graph.TaskPending}}, res)
}

func TestScheduleRefusesTasksThatAreNotAGraph(t *testing.T) {
	cases := []struct {
		name  string
		tasks []taskDef
		want  string
	}{
		{"no id", []taskDef{task("a"), task("")}, "graph: invalid tasks: task 1 has no key"},
		{"repeated id", []taskDef{task("a"), task("a")}, `graph: invalid tasks: task "a" is given twice`},
		{"unknown dependency", []taskDef{task("a"), task("b", "a", "zz")}, `graph: invalid tasks: task "b" depends on "zz", which is not a task`},
		{"self dependency", []taskDef{task("a", "a")}, "graph: invalid tasks: the tasks depend on each other in a cycle: a -> a"},
		{"cycle", []taskDef{task("a", "c"), task("b", "a"), task("c", "b"), task("d")}, "graph: invalid tasks: the tasks depend on each other in a cycle: a -> c -> b -> a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			called := false
			res, err := schedule(t.Context(), tc.tasks, graph.TaskOptions{}, func(context.Context, string) error {
				called = true
				return nil
			})
			require.ErrorIs(t, err, graph.ErrInvalidTasks)
			assert.EqualError(t, err, tc.want)
			assert.Nil(t, res)
			assert.False(t, called, "nothing runs")
		})
	}
}

func TestScheduleMovesATaskPanicToItsCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bStarted := make(chan struct{})
		var bReturned atomic.Bool
		tasks := []taskDef{task("a"), task("b")}
		run := func(ctx context.Context, id string) error {
			if id == "a" {
				<-bStarted
				panic("boom")
			}
			defer bReturned.Store(true)
			return untilCancelled(bStarted)(ctx)
		}
		defer func() {
			pe, ok := recover().(*graph.TaskPanicError)
			require.True(t, ok, "Schedule panics with a *graph.TaskPanicError")
			assert.Equal(t, "a", pe.Key)
			assert.Equal(t, "boom", pe.Value)
			assert.Contains(t, string(pe.Stack), "graph_test.TestScheduleMovesATaskPanicToItsCaller")
			assert.True(t, bReturned.Load(), "the other task was cancelled and returned first")
		}()
		_, _ = schedule(t.Context(), tasks, graph.TaskOptions{}, run)
		t.Error("Schedule returned instead of panicking")
	})
}
