package temporalrun_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/temporalrun"
)

// BenchmarkChain100 runs a 100-node chain (one node a step) in process,
// step by step in process (what a step activity does), and on Temporal
// with steps as activities and as local activities, all against the
// PostgreSQL saver: ns/step is the cost of a step, events/step the
// history a step adds on Temporal, and the ms-…/step metrics where a
// Temporal step's time goes (reportBreakdown). The modes named "nocache"
// run without the workers' state cache (Graphs.CacheStates(nil)): each
// step reads the thread back from the saver, as before the cache.
func BenchmarkChain100(b *testing.B) {
	const n = 100
	e := newBenchEnv(b)
	r := chain("bench-"+randomHex(), n)
	b.Run("local", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			_, err := r.Invoke(b.Context(), graph.Input(), graph.WithSaver(e.saver), graph.Thread(fmt.Sprintf("local-%s-%d", randomHex(), i)))
			require.NoError(b, err)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
	})
	// graph.Runnable.Step in a loop, in process: what a step activity
	// does (load the thread from the saver, or take it from the state
	// cache, run the step, store it), without Temporal.
	for _, mode := range []struct {
		name  string
		cache bool
	}{{"step-loop-nocache", false}, {"step-loop", true}} {
		b.Run(mode.name, func(b *testing.B) {
			b.ReportAllocs()
			cache := graph.NewStateCache(graph.StateCacheConfig{})
			for i := 0; b.Loop(); i++ {
				opts := []graph.Option{graph.WithSaver(e.saver), graph.Thread(fmt.Sprintf("steps-%s-%d", randomHex(), i))}
				input, after := graph.Input(), ""
				for {
					stepOpts := opts
					if mode.cache {
						stepOpts = append(opts[:len(opts):len(opts)], graph.WithStateCache(cache, after))
					}
					res, err := r.Step(b.Context(), input, stepOpts...)
					require.NoError(b, err)
					input, after = nil, res.Checkpoint
					if !res.More {
						break
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
		})
	}
	// Workers without the state cache, on a queue of their own.
	nocache := "q-" + randomHex()
	graphs := temporalrun.NewGraphs(e.saver, r).StreamTo(e.events).CacheStates(nil)
	w, err := temporalrun.NewWorker(e.client, temporalrun.WorkerConfig{TaskQueue: nocache, Graphs: graphs, Options: workerOptions()})
	require.NoError(b, err)
	require.NoError(b, w.Start())
	b.Cleanup(w.Stop)
	// Steps as activities (Config.ActivitySteps), then as local
	// activities (the default), side by side on one server and saver.
	for _, mode := range []struct {
		name  string
		local bool
		queue string
	}{{"temporal-nocache", false, nocache}, {"temporal", false, ""}, {"temporal-local-nocache", true, nocache}, {"temporal-local", true, ""}} {
		b.Run(mode.name, func(b *testing.B) {
			b.ReportAllocs()
			run := e.runner(r, func(c *temporalrun.Config) {
				c.ActivitySteps = !mode.local
				if mode.queue != "" {
					c.TaskQueue = mode.queue
				}
			})
			var thread string
			for i := 0; b.Loop(); i++ {
				thread = fmt.Sprintf("temporal-%s-%d", randomHex(), i)
				_, err := run.Invoke(b.Context(), graph.Input(), graph.Thread(thread))
				require.NoError(b, err)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
			events := history(b, e.client, thread)
			b.ReportMetric(float64(len(events))/n, "events/step")
			reportBreakdown(b, e, thread, n)
		})
	}
}

// reportBreakdown reports where a run's time went, per step, by the
// times the server recorded in its history: dispatch (scheduled to
// started, of activities and workflow tasks), the step activities' run
// (started to completed: the saver's load and save, the node), and the
// workflow tasks' run (started to completed: the worker's workflow code
// and the round trip that reports it).
func reportBreakdown(b *testing.B, e *env, thread string, steps int) {
	it := e.client.GetWorkflowHistory(b.Context(), thread, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	times := map[int64]time.Time{}
	var dispatch, activities, tasks time.Duration
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(b, err)
		at := ev.GetEventTime().AsTime()
		times[ev.GetEventId()] = at
		switch {
		case ev.GetActivityTaskStartedEventAttributes() != nil:
			dispatch += at.Sub(times[ev.GetActivityTaskStartedEventAttributes().GetScheduledEventId()])
		case ev.GetActivityTaskCompletedEventAttributes() != nil:
			activities += at.Sub(times[ev.GetActivityTaskCompletedEventAttributes().GetStartedEventId()])
		case ev.GetWorkflowTaskStartedEventAttributes() != nil:
			dispatch += at.Sub(times[ev.GetWorkflowTaskStartedEventAttributes().GetScheduledEventId()])
		case ev.GetWorkflowTaskCompletedEventAttributes() != nil:
			tasks += at.Sub(times[ev.GetWorkflowTaskCompletedEventAttributes().GetStartedEventId()])
		}
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(steps) / 1e6 }
	b.ReportMetric(per(dispatch), "ms-dispatch/step")
	b.ReportMetric(per(activities), "ms-activity/step")
	b.ReportMetric(per(tasks), "ms-wftask/step")
}

// BenchmarkRuns measures runs per second of a 3-node chain, 16 runs at a
// time, with one worker and with two.
func BenchmarkRuns(b *testing.B) {
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			e := newEnv(b)
			for range workers {
				e.startWorker(e.queue, false)
			}
			run := e.runner(chain("runs-"+randomHex(), 3))
			b.ReportAllocs()
			const parallel = 16
			sem := make(chan struct{}, parallel)
			var wg sync.WaitGroup
			errs := make(chan error, parallel)
			prefix := randomHex()
			// Not b.Loop: its timer stops when the last run starts, and
			// the runs still in flight must count.
			b.ResetTimer()
			for i := range b.N {
				sem <- struct{}{}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					if _, err := run.Invoke(b.Context(), graph.Input(), graph.Thread(fmt.Sprintf("runs-%s-%d", prefix, i))); err != nil {
						select {
						case errs <- err:
						default:
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			require.NoError(b, <-errs)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
		})
	}
}
