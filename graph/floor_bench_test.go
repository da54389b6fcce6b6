package graph_test

import (
	"iter"
	"testing"
	"time"

	"github.com/coorflow/coorflow/graph"
)

// BenchmarkStreamFloor measures the parts of a streamed one-task step that
// are not the engine's own work (BenchmarkChain100 measures that), each
// alone and then together, per step:
//
//   - handoff: the loop hands the task to a parked worker over a channel
//     and waits for its end on another; the node must not run on the
//     consumer's goroutine, which alone may call yield, because the node may
//     wait for goroutines of its own that are blocked in Emit;
//   - clock: the four readings of the run's clock a step takes (the step's
//     start, which its node start shares; the task's start and end; the
//     step's end), three of them turned into event times;
//   - yields: five events built and yielded through an iter.Seq2 to a loop
//     body that reads them.
//
// The sum, plus BenchmarkChain100's ns/step, is what Chain100Stream can
// cost at least with this mechanism.
func BenchmarkStreamFloor(b *testing.B) {
	b.Run("handoff", func(b *testing.B) {
		jobs, ends := startEcho()
		defer close(jobs)
		for b.Loop() {
			jobs <- 0
			<-ends
		}
	})
	b.Run("clock", func(b *testing.B) {
		t0 := time.Now()
		var last time.Time
		for b.Loop() {
			last = clockStep(t0)
		}
		_ = last
	})
	b.Run("yields", func(b *testing.B) {
		n := 0
		for ev, err := range yieldSteps(b, time.Time{}, nil, nil) {
			if err != nil {
				b.Fatal(err)
			}
			n += int(ev.Kind)
		}
	})
	b.Run("all", func(b *testing.B) {
		jobs, ends := startEcho()
		defer close(jobs)
		n := 0
		for ev, err := range yieldSteps(b, time.Now(), jobs, ends) {
			if err != nil {
				b.Fatal(err)
			}
			n += int(ev.Kind)
		}
	})
}

// startEcho starts a worker that answers each job with an event.
func startEcho() (chan<- int, <-chan graph.Event) {
	jobs := make(chan int)
	ends := make(chan graph.Event)
	go func() {
		for range jobs {
			ends <- graph.Event{}
		}
	}()
	return jobs, ends
}

// clockStep reads the clock as a step does: four readings, three of them
// made event times.
//
//go:noinline
func clockStep(t0 time.Time) time.Time {
	stepStart := t0.Add(time.Since(t0)) // the step's and its node's start
	taskStart := time.Since(t0)         // on the worker
	taskEnd := time.Since(t0)
	nodeEnd := t0.Add(taskEnd) // in the loop, for EventNodeEnd
	stepEnd := t0.Add(time.Since(t0))
	if nodeEnd.Before(stepStart) || taskEnd < taskStart {
		return nodeEnd
	}
	return stepEnd
}

// yieldSteps yields the five events of a one-task step per iteration of
// b.Loop; with t0 set it times them, and with jobs it hands a task over.
func yieldSteps(b *testing.B, t0 time.Time, jobs chan<- int, ends <-chan graph.Event) iter.Seq2[graph.Event, error] {
	return func(yield func(graph.Event, error) bool) {
		now := func() time.Time {
			if t0.IsZero() {
				return time.Time{}
			}
			return t0.Add(time.Since(t0))
		}
		names := []string{"n"}
		for step := 0; b.Loop(); step++ {
			at := now()
			if !yield(graph.Event{Kind: graph.EventStepStart, Path: "g", Step: step, Data: names, Time: at}, nil) ||
				!yield(graph.Event{Kind: graph.EventNodeStart, Path: "g/n", Node: "n", Step: step, Attempt: 1, Time: at}, nil) {
				return
			}
			var end graph.Event
			if jobs != nil {
				jobs <- step
				end = <-ends
			}
			start := now() // the worker's readings
			end.Time = now()
			end.Duration = end.Time.Sub(start)
			if !yield(graph.Event{Kind: graph.EventNodeEnd, Path: "g/n", Node: "n", Step: step, Attempt: 1, Duration: end.Duration, Time: end.Time}, nil) {
				return
			}
			at = now()
			if !yield(graph.Event{Kind: graph.EventValues, Path: "g", Step: step, Time: at}, nil) ||
				!yield(graph.Event{Kind: graph.EventStepEnd, Path: "g", Step: step, Time: at}, nil) {
				return
			}
		}
	}
}
