package dag_test

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
	"go.uber.org/goleak"

	"github.com/coorflow/coorflow/internal/dag"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// harness runs tasks with scripted behaviours; for every task it checks
// that each dependency had returned before the task started, and it keeps
// the start order and the most tasks ever in flight.
type harness struct {
	t     *testing.T
	tasks []dag.Task
	do    map[string]func(ctx context.Context) error

	mu       sync.Mutex
	finished map[string]bool
	started  []string
	inFlight atomic.Int64
	max      atomic.Int64
}

func newHarness(t *testing.T, tasks []dag.Task, do map[string]func(context.Context) error) *harness {
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
			if tk.ID == id && !h.finished[d] {
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

// barrier opens once n tasks have reached it: tasks that pass it were in
// flight together. One that never opens deadlocks the bubble, which
// synctest reports.
func barrier(n int) func(context.Context) error {
	var mu sync.Mutex
	open := make(chan struct{})
	return func(ctx context.Context) error {
		mu.Lock()
		if n--; n == 0 {
			close(open)
		}
		mu.Unlock()
		select {
		case <-open:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
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

func task(id string, deps ...string) dag.Task { return dag.Task{ID: id, Deps: deps} }

var (
	errA     = errors.New("a broke")
	errB     = errors.New("b broke")
	errFatal = errors.New("the store is gone")
	errAsk1  = errors.New("question 1")
	errAsk2  = errors.New("question 2")
)

func classify(err error) dag.Kind {
	switch {
	case errors.Is(err, errAsk1), errors.Is(err, errAsk2):
		return dag.Pause
	case errors.Is(err, errFatal):
		return dag.Stop
	}
	return dag.Fail
}

type outcome struct {
	id     string
	status dag.Status
	err    error // checked with errors.Is
}

func TestRun(t *testing.T) {
	cases := []struct {
		name  string
		tasks []dag.Task
		opts  dag.Options
		// do is called inside the bubble: its channels belong to it.
		do      func() map[string]func(context.Context) error
		want    []outcome
		wantErr []error // each in Run's error; nil: no error
		check   func(t *testing.T, h *harness)
	}{{
		name:  "a task waits for its dependencies; ready tasks run together",
		tasks: []dag.Task{task("a"), task("b"), task("c", "a", "b"), task("d", "c")},
		do: func() map[string]func(context.Context) error {
			both := barrier(2) // a and b pass only if both are in flight
			return map[string]func(context.Context) error{"a": both, "b": both}
		},
		want: []outcome{{"a", dag.Done, nil}, {"b", dag.Done, nil}, {"c", dag.Done, nil}, {"d", dag.Done, nil}},
		check: func(t *testing.T, h *harness) {
			assert.Equal(t, []string{"c", "d"}, h.started[2:])
		},
	}, {
		name:  "a limit of one runs the ready tasks in the order given",
		tasks: []dag.Task{task("a"), task("b", "a"), task("c"), task("d")},
		opts:  dag.Options{Limit: 1},
		want:  []outcome{{"a", dag.Done, nil}, {"b", dag.Done, nil}, {"c", dag.Done, nil}, {"d", dag.Done, nil}},
		check: func(t *testing.T, h *harness) {
			assert.Equal(t, []string{"a", "b", "c", "d"}, h.started)
			assert.EqualValues(t, 1, h.max.Load())
		},
	}, {
		name:  "by default a failure skips its dependents and the other branch goes on",
		tasks: []dag.Task{task("a"), task("b"), task("c", "a"), task("d", "b"), task("e", "c"), task("f", "d", "e")},
		do: func() map[string]func(context.Context) error {
			return map[string]func(context.Context) error{"a": fail(errA)}
		},
		want: []outcome{{"a", dag.Failed, errA}, {"b", dag.Done, nil}, {"c", dag.Skipped, nil},
			{"d", dag.Done, nil}, {"e", dag.Skipped, nil}, {"f", dag.Skipped, nil}},
	}, {
		name:  "fail-fast: the first failure cancels the tasks in flight and starts no other",
		tasks: []dag.Task{task("a"), task("b"), task("c", "a"), task("d")},
		opts:  dag.Options{Limit: 2, FailFast: true},
		do: func() map[string]func(context.Context) error {
			bStarted := make(chan struct{})
			return map[string]func(context.Context) error{
				"a": func(context.Context) error { <-bStarted; return errA },
				"b": untilCancelled(bStarted),
			}
		},
		want:    []outcome{{"a", dag.Failed, errA}, {"b", dag.Failed, context.Canceled}, {"c", dag.Skipped, nil}, {"d", dag.NotRun, nil}},
		wantErr: []error{errA},
	}, {
		name:  "an error classified Stop stops the run without fail-fast",
		tasks: []dag.Task{task("a"), task("b"), task("c", "a"), task("d")},
		opts:  dag.Options{Limit: 2, Classify: classify},
		do: func() map[string]func(context.Context) error {
			bStarted := make(chan struct{})
			return map[string]func(context.Context) error{
				"a": func(context.Context) error { <-bStarted; return errFatal },
				"b": untilCancelled(bStarted),
			}
		},
		want:    []outcome{{"a", dag.Failed, errFatal}, {"b", dag.Failed, context.Canceled}, {"c", dag.Skipped, nil}, {"d", dag.NotRun, nil}},
		wantErr: []error{errFatal},
	}, {
		name:  "pauses from concurrent tasks are reported together; their dependents wait, the rest runs",
		tasks: []dag.Task{task("p1"), task("p2"), task("after-p1", "p1"), task("x"), task("y", "x")},
		opts:  dag.Options{Classify: classify},
		do: func() map[string]func(context.Context) error {
			both := barrier(2)
			return map[string]func(context.Context) error{
				// p2 pauses first; p1 a second later.
				"p1": func(ctx context.Context) error { _ = both(ctx); return after(time.Second, errAsk1)(ctx) },
				"p2": func(ctx context.Context) error { _ = both(ctx); return errAsk2 },
			}
		},
		want: []outcome{{"p1", dag.Paused, errAsk1}, {"p2", dag.Paused, errAsk2}, {"after-p1", dag.NotRun, nil},
			{"x", dag.Done, nil}, {"y", dag.Done, nil}},
		wantErr: []error{errAsk1, errAsk2},
	}, {
		name:  "a failure that stops the run wins over pauses",
		tasks: []dag.Task{task("p"), task("f")},
		opts:  dag.Options{FailFast: true, Classify: classify},
		do: func() map[string]func(context.Context) error {
			return map[string]func(context.Context) error{"p": fail(errAsk1), "f": after(time.Second, errB)}
		},
		want:    []outcome{{"p", dag.Paused, errAsk1}, {"f", dag.Failed, errB}},
		wantErr: []error{errB},
	}, {
		name:  "results come in the order given, not the order tasks finished",
		tasks: []dag.Task{task("x"), task("y"), task("z")},
		opts:  dag.Options{FailFast: false},
		do: func() map[string]func(context.Context) error {
			return map[string]func(context.Context) error{
				"x": after(2*time.Second, errA), "y": after(time.Second, nil), "z": fail(errB),
			}
		},
		want: []outcome{{"x", dag.Failed, errA}, {"y", dag.Done, nil}, {"z", dag.Failed, errB}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var do map[string]func(context.Context) error
				if tc.do != nil {
					do = tc.do()
				}
				h := newHarness(t, tc.tasks, do)
				res, err := dag.Run(t.Context(), tc.tasks, tc.opts, h.run)
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
func outcomes(t *testing.T, want []outcome, res []dag.Result) []outcome {
	t.Helper()
	out := make([]outcome, len(res))
	for i, r := range res {
		out[i] = outcome{id: r.ID, status: r.Status, err: r.Err}
		if i < len(want) && want[i].err != nil && errors.Is(r.Err, want[i].err) {
			out[i].err = want[i].err
		}
	}
	return out
}

func TestRunNeverHasMoreThanLimitTasksInFlight(t *testing.T) {
	for _, limit := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("limit %d", limit), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// Three rounds of limit tasks, each round held by a barrier
				// of limit: it opens only if the runner starts limit tasks
				// at once, and more than limit in flight shows in the max.
				var tasks []dag.Task
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
				res, err := dag.Run(t.Context(), tasks, dag.Options{Limit: limit}, h.run)
				require.NoError(t, err)
				assert.EqualValues(t, limit, h.max.Load())
				for _, r := range res {
					assert.Equal(t, dag.Done, r.Status, r.ID)
				}
			})
		})
	}
}

func TestRunReturnsPromptlyWhenItsContextIsCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		aStarted, bStarted := make(chan struct{}), make(chan struct{})
		tasks := []dag.Task{task("a"), task("b"), task("c"), task("d", "a")}
		h := newHarness(t, tasks, map[string]func(context.Context) error{
			"a": untilCancelled(aStarted), "b": untilCancelled(bStarted),
		})
		type ran struct {
			res []dag.Result
			err error
		}
		done := make(chan ran)
		start := time.Now()
		go func() {
			res, err := dag.Run(ctx, tasks, dag.Options{Limit: 2}, h.run)
			done <- ran{res, err}
		}()
		<-aStarted
		<-bStarted
		cancel()
		got := <-done
		assert.Zero(t, time.Since(start), "no fake time passed: Run waited on nothing but its tasks")
		require.ErrorIs(t, got.err, context.Canceled)
		assert.Equal(t, []string{"a", "b"}, sortedStarts(h), "nothing started after the cancel")
		assert.Equal(t, []outcome{{"a", dag.Failed, context.Canceled}, {"b", dag.Failed, context.Canceled},
			{"c", dag.NotRun, nil}, {"d", dag.Skipped, nil}}, outcomes(t, []outcome{{err: context.Canceled}, {err: context.Canceled}}, got.res))
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

func TestRunWithAnEndedContextStartsNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	called := false
	res, err := dag.Run(ctx, []dag.Task{task("a")}, dag.Options{}, func(context.Context, string) error {
		called = true
		return nil
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.False(t, called)
	assert.Equal(t, []dag.Result{{ID: "a", Status: dag.NotRun}}, res)
}

func TestRunRefusesTasksThatAreNotAGraph(t *testing.T) {
	cases := []struct {
		name  string
		tasks []dag.Task
		want  string
	}{
		{"no id", []dag.Task{task("a"), task("")}, "dag: invalid graph: task 1 has no id"},
		{"repeated id", []dag.Task{task("a"), task("a")}, `dag: invalid graph: task "a" is given twice`},
		{"unknown dependency", []dag.Task{task("a"), task("b", "a", "zz")}, `dag: invalid graph: task "b" depends on "zz", which is not a task`},
		{"self dependency", []dag.Task{task("a", "a")}, "dag: invalid graph: the tasks depend on each other in a cycle: a -> a"},
		{"cycle", []dag.Task{task("a", "c"), task("b", "a"), task("c", "b"), task("d")}, "dag: invalid graph: the tasks depend on each other in a cycle: a -> c -> b -> a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			called := false
			res, err := dag.Run(t.Context(), tc.tasks, dag.Options{}, func(context.Context, string) error {
				called = true
				return nil
			})
			require.ErrorIs(t, err, dag.ErrInvalid)
			assert.EqualError(t, err, tc.want)
			assert.Nil(t, res)
			assert.False(t, called, "nothing runs")
		})
	}
}

func TestRunMovesATaskPanicToItsCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bStarted := make(chan struct{})
		var bReturned atomic.Bool
		tasks := []dag.Task{task("a"), task("b")}
		run := func(ctx context.Context, id string) error {
			if id == "a" {
				<-bStarted
				panic("boom")
			}
			defer bReturned.Store(true)
			return untilCancelled(bStarted)(ctx)
		}
		defer func() {
			pe, ok := recover().(*dag.PanicError)
			require.True(t, ok, "Run panics with a *dag.PanicError")
			assert.Equal(t, "a", pe.Task)
			assert.Equal(t, "boom", pe.Value)
			assert.Contains(t, string(pe.Stack), "dag_test.TestRunMovesATaskPanicToItsCaller")
			assert.True(t, bReturned.Load(), "the other task was cancelled and returned first")
		}()
		_, _ = dag.Run(t.Context(), tasks, dag.Options{}, run)
		t.Error("Run returned instead of panicking")
	})
}
