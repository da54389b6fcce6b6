package graph

import "sync"

// workers are the goroutines that run a run's tasks when they cannot run
// on the loop's goroutine. They are kept for the whole run, so a step does
// not pay for starting a goroutine and growing its stack for each task;
// there are as many as the widest step needed (within MaxConcurrency).
type workers struct {
	jobs chan job
	n    int // started
	busy int // running a task whose end the loop has not received
	wg   sync.WaitGroup
}

// job is one task for a worker: run tasks[i] and store its result in
// results[i] (see runOne).
type job struct {
	results []taskResult
	i       int
	t       *task
	keep    bool
}

// startTask hands j to an idle worker, starting one when the busy ones are
// all there are.
func (ru *run) startTask(j job) {
	w := &ru.workers
	if w.busy >= w.n {
		if w.jobs == nil {
			w.jobs = make(chan job)
		}
		w.n++
		w.wg.Add(1)
		go ru.work()
	}
	// A worker that is not busy has reported its last task done and is on
	// its way back to the channel, so this does not block for long.
	w.busy++
	w.jobs <- j
}

// taskDone receives the index of a task a worker finished.
func (ru *run) taskDone(i int) int {
	ru.workers.busy--
	return i
}

func (ru *run) work() {
	for j := range ru.workers.jobs {
		ru.runOne(j.results, j.i, j.t, j.keep)
	}
	ru.workers.wg.Done() // a node's panic is recovered (call): none gets here
}

// stopWorkers ends the workers. When a run ends normally none is busy;
// when the loop unwinds while tasks run (a panic, or runtime.Goexit in a
// stream consumer's loop body), the run is cancelled and what the busy
// workers still deliver is drained, so that they end too.
func (ru *run) stopWorkers() {
	w := &ru.workers
	if w.jobs == nil {
		return
	}
	close(w.jobs)
	if w.busy > 0 {
		ru.cancel()
	}
	for w.busy > 0 {
		select {
		case i := <-ru.done:
			ru.taskDone(i)
		case <-ru.events:
		}
	}
	w.wg.Wait()
	w.jobs, w.n = nil, 0
}
