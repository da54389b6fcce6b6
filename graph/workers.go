package graph

import (
	"errors"
	"sync"
	"sync/atomic"
)

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

// job is one task for a worker: run t and store its result in results[i]
// (see runOne); call is the context of its node's first call, when calls
// have contexts of their own (see taskContext).
type job struct {
	results []taskResult
	i       int
	t       *task
	keep    bool
	call    *callContext
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

// taskDone receives a worker's taskEnded message and returns the index of
// the task that ended. Attempt -1 says the worker ended with it.
func (ru *run) taskDone(ev Event) int {
	ru.workers.busy--
	if ev.Attempt < 0 {
		ru.workers.n--
	}
	return ev.Step
}

func (ru *run) work() {
	var j job
	running := false // in j: a node's panic is recovered (call), not its Goexit
	defer ru.workerEnded(&j, &running)
	for j = range ru.workers.jobs {
		running = true
		ru.runOne(&j)
		running = false
	}
}

// workerEnded ends a worker. One that ends in a task was ended by its node
// calling runtime.Goexit: the task fails, and the loop hears of its end and
// of the worker's.
func (ru *run) workerEnded(j *job, running *bool) {
	if *running {
		ru.failGoexit(j.t, &j.results[j.i])
		ru.events <- Event{Kind: taskEnded, Step: j.i, Attempt: -1}
	}
	ru.workers.wg.Done()
}

// stopWorkers ends the workers. When a run ends normally none is busy;
// when the loop unwinds while tasks run (a panic, or runtime.Goexit in a
// stream consumer's loop body), the run is cancelled and what the busy
// workers still deliver is drained, so that they end too.
func (ru *run) stopWorkers() {
	if ru.sharing { // the loop's goroutine ended in a task (runtime.Goexit)
		ru.cancel()
		ru.share.wg.Wait()
		ru.sharing = false
	}
	w := &ru.workers
	if w.jobs == nil {
		return
	}
	close(w.jobs)
	if w.busy > 0 {
		ru.cancel()
	}
	for w.busy > 0 {
		if ev := <-ru.events; ev.Kind == taskEnded {
			ru.taskDone(ev)
		}
	}
	w.wg.Wait()
	w.jobs, w.n = nil, 0
}

// share runs the tasks of a step whose events nobody reads. The loop's
// goroutine takes tasks itself, and so does every helper it starts; a
// goroutine that finishes a task takes the next one not yet taken. A
// helper is started only when a task is taken while tasks remain and no
// goroutine is free to take them, so no task waits for another to end
// (unless MaxConcurrency is reached), yet a wide step of short tasks runs
// on a few goroutines instead of one each.
type share struct {
	ru      *run
	tasks   []*task
	todo    []int
	results []taskResult
	keep    bool
	limit   int32
	next    atomic.Int32 // the index in todo of the next task to take
	free    atomic.Int32 // goroutines that will take a task, running none
	started atomic.Int32 // goroutines taking tasks, the loop's included
	wg      sync.WaitGroup
}

// runShared runs the tasks todo into results as share describes, and
// returns when every one has ended.
func (ru *run) runShared(tasks []*task, todo []int, results []taskResult, keep bool) {
	s := &ru.share
	s.ru, s.tasks, s.todo, s.results, s.keep = ru, tasks, todo, results, keep
	limit := ru.cfg.maxConcurrency
	if limit <= 0 || limit > len(todo) {
		limit = len(todo)
	}
	s.limit = int32(limit)
	s.next.Store(0)
	s.free.Store(1)
	s.started.Store(1)
	ru.sharing = true
	cur := -1
	s.work(&cur)
	s.wg.Wait()
	ru.sharing = false
	s.tasks, s.todo, s.results = nil, nil, nil
}

// work takes tasks until none is left; cur holds the index of the task
// it runs (-1 between tasks).
func (s *share) work(cur *int) {
	for {
		k := int(s.next.Add(1)) - 1
		if k >= len(s.todo) {
			return
		}
		i := s.todo[k]
		if err := s.ru.ctx.Err(); err != nil {
			s.results[i].err = err // not started, as runTasks does
			continue
		}
		if s.free.Add(-1) == 0 && k+1 < len(s.todo) {
			s.help()
		}
		*cur = i
		s.ru.execTask(s.tasks[i], s.keep, nil, &s.results[i])
		*cur = -1
		s.free.Add(1)
	}
}

// help starts a helper unless MaxConcurrency goroutines already take
// tasks.
func (s *share) help() {
	if s.started.Add(1) > s.limit {
		s.started.Add(-1)
		return
	}
	s.free.Add(1)
	s.wg.Add(1)
	go s.helper()
}

func (s *share) helper() {
	cur := -1
	defer s.exited(&cur)
	s.work(&cur)
}

// errGoexit is the failure of a node that ended its goroutine.
var errGoexit = errors.New("the node called runtime.Goexit (t.FailNow?) on the goroutine running it")

// failGoexit fills res with the failure of task t, whose node ended the
// goroutine running it.
func (ru *run) failGoexit(t *task, res *taskResult) {
	*res = taskResult{attempts: max(res.attempts, 1)}
	res.err = ru.nodeErr(t, res.attempts, errGoexit)
}

// exited ends a helper. One that ends in a task was ended by its node
// calling runtime.Goexit (a panic is recovered in call): the task fails,
// and a helper takes its place when tasks wait.
func (s *share) exited(cur *int) {
	if i := *cur; i >= 0 {
		s.ru.failGoexit(s.tasks[i], &s.results[i])
		s.started.Add(-1)
		if s.free.Load() == 0 && int(s.next.Load()) < len(s.todo) {
			s.help()
		}
	}
	s.wg.Done()
}
