// Package temporalrun runs compiled graphs on Temporal, so that the runs of
// one graph spread over many worker processes and survive their crashes.
// The graph is the same one graph.Runnable.Invoke runs in process; a
// Runner is chosen instead of it, not a rewrite of the graph:
//
//	run, err := temporalrun.New(temporalrun.Config{
//		Client: c, Graph: r, Saver: saver, TaskQueue: "coorflow"})
//	res, err := run.Invoke(ctx, graph.Input(...), graph.Thread("t1"))
//	res, err = run.Invoke(ctx, nil, graph.Thread("t1"), graph.Resume("yes"))
//
// and workers (NewWorker, or coorflow worker) run the graph's steps:
//
//	w, err := temporalrun.NewWorker(c, temporalrun.WorkerConfig{
//		TaskQueue: "coorflow", Graphs: temporalrun.NewGraphs(saver, r)})
//
// Stream is the graph's Stream: the workers store the events of each step
// in an EventLog on the saver's PostgreSQL (Graphs.StreamTo,
// Config.Events), and the caller reads them from there as they come:
//
//	events := temporalrun.NewEventLog(pool, temporalrun.EventLogConfig{})
//	err := events.Start(ctx)
//	run, err := temporalrun.New(temporalrun.Config{..., Events: events,
//		Payloads: trace.DecodePayload})
//	for ev, err := range run.Stream(ctx, graph.Input(...), graph.Thread("t1")) { ... }
//
// # Design
//
// One workflow per run of a thread; its id is the thread id, so a thread
// has one active run at a time, and the next run of a finished thread
// reuses the id. The workflow is a loop over supersteps. A step of one
// task is one activity (by default a local one: see Local steps): it
// calls graph.Runnable.Step, which loads the thread from the saver — or
// takes it from the worker's graph.StateCache when the worker stored that
// checkpoint itself (Graphs.CacheStates) —, runs the task (the node
// body), applies its writes with the reducers, routes, and stores the
// checkpoint. A step of several
// tasks (parallel nodes, Send packets) runs each task as an activity of
// its own (graph.Runnable.RunTasks: the task's result, interrupts or
// failure are stored in the saver as the engine stores them for any
// step), at once, possibly on different workers and queues; then the step
// activity completes the step: it runs no task again, applies the stored
// writes in task order and routes. So:
//
//   - Determinism. The workflow code only loops over step results,
//     counts steps and waits for answers; it never sees channel values.
//     Node bodies, routers and reducers run in activities and need not be
//     deterministic; a graph changes without touching workflow
//     determinism.
//   - State travels by reference. Channel values stay in the saver
//     (PostgreSQL when workers run on several machines): the history holds
//     checkpoint ids, node names and interrupt payloads, never the state,
//     so Temporal's payload limits (256 KB warning, 2 MB failure) bound
//     only the input and the interrupt payloads. Results are read from the
//     saver at the checkpoint a run reports.
//   - Retries. A node's own failure is the engine's business (its
//     RetryPolicy ran inside the step); it fails the run, as in process,
//     and is not retried by Temporal. A step whose worker died (no
//     heartbeat within HeartbeatTimeout) or whose saver failed is retried
//     on any worker: finished tasks of the step keep their results (the
//     engine's pending writes), journaled calls (graph.Do: model calls,
//     tool calls) are read back from the saver instead of made again, so
//     at most the call in flight at the crash repeats; and a retry that
//     finds the step's checkpoint already stored reports it instead of
//     running the next step.
//   - Recovery. A step activity beats every third of
//     Config.HeartbeatTimeout (default DefaultHeartbeatTimeout, 5 s; a
//     local step has the workflow task's timeout instead: see Local
//     steps; NewWorker caps the SDK's
//     heartbeat throttle at one second so that the beats are not held
//     back to 80% of the timeout): a worker killed mid-step is noticed
//     within the timeout, and the step's next attempt starts on another
//     worker 100 ms later. When the dead worker also ran the run's
//     workflow code, the run's next workflow task waits for it on its
//     sticky queue for WorkerConfig.Options.StickyScheduleToStartTimeout
//     (default DefaultStickyTimeout, 2 s) before any worker takes it: at
//     most about 7 s in all with the defaults (the step's own work
//     aside), against 30 to 40 s with the SDK's. Config.ScheduleToStartTimeout
//     (default none) fails a run whose step no worker takes in time:
//     the sign of a queue nobody polls (Temporal does not retry it).
//     coorflow run and serve take --heartbeat-timeout and
//     --schedule-to-start-timeout, coorflow worker --sticky-timeout.
//   - Starts. Starting a run's workflow is retried, as updates are,
//     while the server is unavailable or too slow to answer (for at most
//     Config.StartTimeout), and never starts the run twice: the workflow
//     id is the thread, a second workflow of a thread in flight is
//     refused (conflict policy FAIL), and each start carries an id in the
//     workflow's memo; before starting again, a retry reads the thread's
//     newest workflow, and one with this start's id — running, or ended
//     already — is this run, started by an attempt whose answer was lost
//     (the reuse policy allows a new run of an ended thread, so this
//     check is what keeps a short run from running twice). A retry comes
//     after the failed attempt's deadline, past which the server does
//     not start it.
//   - Local steps. By default a step of one task that continues a run on
//     TaskQueue runs as a local activity: on the worker of the run's
//     workflow code, inside its workflow task, with no trip through the
//     server; the history gets one marker per step, and the workflow
//     task reports to the server every 80% of its timeout (set to
//     HeartbeatTimeout for these runs), so a step may run for as long as
//     StepTimeout allows (TestALocalStepLongerThanTheWorkflowTaskTimeout).
//     That timeout is also how soon a dead worker's run is taken over by
//     another, as soon as a step activity's missing heartbeat would be:
//     the other replays the history and runs the thread's next step from
//     the saver (a step the dead worker stored is not run again; the
//     run's step count misses it; TestAKilledWorkersLocalStepRecovers…
//     measured 1.1 s from kill -9 to the takeover, 2.7 s to the run's
//     end). Steps with input or answers, steps of several tasks, steps
//     of nodes on other queues and steps of nodes that start tasks
//     (graph.StartsTasks: a team's, so that its tasks are activities on
//     any worker) stay activities; Config.ActivitySteps
//     (--local-steps=false) makes every step an activity. The price:
//     local steps are not spread over workers (runs are), have no
//     heartbeat of their own, and a step recovered after a crash may
//     stream its events again.
//   - State cache. A worker keeps the state of the checkpoints its steps
//     store (Graphs.CacheStates: a graph.StateCache of 1024 threads, 64
//     MiB of values as stored, one minute), and the thread's next step
//     on that worker, when it names that checkpoint (StepInput.After, on
//     its first attempt), starts from it instead of reading the thread
//     back from the saver; the step's task records (results, journal,
//     answers) are read as always. A retry, a step on another worker or
//     after a restart reads the saver; a state is taken once, its lists
//     clipped so that no two steps append into one array.
//   - Cost. Per step of a 100-node chain against the PostgreSQL saver
//     (BenchmarkChain100: all modes in one run, -count=3, run twice on a
//     2-core machine shared with other builds, load 12–20), without the
//     state cache and with it: local steps 4.4–14.3 and 5.0–9.2 ms (1.2
//     history events per step), against 1.9–7.0 ms in process — medians
//     6.2 and 7.3 ms with the cache against 3.8 and 4.3 ms in process:
//     Temporal adds about 3 ms —; activities 32–41 and 26–43 ms (6.1
//     events; medians 28 and 39 ms), where two trips through the server
//     (dispatch 3.6–6.5 ms, the workflow task 7.9–17.7 ms) and the activity's
//     own report dominate and the machine's noise hides the cache; Step
//     in a loop in process 5.3–12.2 and 2.4–6.2 ms, with 95,000 and
//     13,000 allocations per run of 100 steps.
//   - Interrupts. A paused run's workflow waits. graph.Resume (ResumeEach,
//     ResumeAt) reaches it as the update "resume", whose validator matches
//     the answers to the pending questions with the engine's own rules: a
//     wrong answer is refused before it is recorded in the history. The
//     update returns where the run stands next. Cancelling Invoke's
//     context, or Cancel, cancels the workflow; the step in flight sees
//     its context cancelled (through heartbeats) and the thread keeps its
//     last checkpoint, from which the next Invoke continues.
//   - Queues. Each step goes to a task queue: Config.NodeQueues sends the
//     steps that run only nodes of one queue there (model calls, tools,
//     code), so each kind scales on its own; other steps go to TaskQueue.
//   - Tasks. Each task a node starts at run time (graph.Schedule: a
//     team's builds and steps) is an activity of its own, on any worker
//     (Config.TasksInNode, --tasks-in-node, runs them inside the node's
//     activity instead, as before). Only workflow code schedules
//     activities, so the node's activity (a step, or a task of a
//     parallel step) runs the node with a graph.TaskExecutor that, for
//     each attempt of a task, sends the run's workflow the update "task"
//     and waits for its answer; the update's handler schedules the task
//     activity (ScheduledTaskActivityName) and answers with how the task
//     ended. The task activity calls graph.Runnable.RunScheduled: it
//     loads the step from the saver, runs the node again up to the task
//     (the journal answers the rest), runs the task, and journals its
//     value in the saver before it reports it. The node's Schedule keeps
//     its own order, limit, dependencies, retries (TaskOptions.Retry: an
//     attempt is an update) and pauses: a task's failure or question (any
//     error RunScheduled returns, a saver's included) is its activity's
//     result, which TaskOptions.Retry judges; Temporal retries a task
//     activity only when its worker dies or it times out. So the node's
//     activity only waits, beating, and each task has its own heartbeat
//     (HeartbeatTimeout), its own start-to-close timeout
//     (Config.TaskTimeout; the node's StepTimeout still bounds the whole
//     node) and its own queue. Config.TaskQueues (--task-queue
//     SELECTOR=QUEUE) places it: by a placement label it carries
//     (graph.Task.Labels), selected as "NAME:VALUE" — a factory team
//     labels each step with its agent's tier and each build with the
//     builder's (factory.TierLabel), so "tier:reasoning" sends the agents
//     of that tier to the workers of its models —, else by the longest
//     prefix of its key ("build:" or "step:" in a factory team), else on
//     its node's queue. Crashes: a dead task worker's task activity is
//     retried on another worker when its heartbeat stops, and only that
//     task's call in flight repeats; a dead node worker's activity is
//     retried on another, which runs the node again: the tasks done are
//     read from the journal, and those in flight are asked for by the
//     same update ids (the node activity's id, the task's id and its
//     attempt), which the server answers from the update already running
//     — the task is not started twice. A node that stops waiting
//     (FailFast) withdraws its updates with the signal SignalCancelTask,
//     which cancels their activities; a node activity that ends by itself
//     (timed out, cancelled) withdraws nothing, so that its next attempt
//     joins the tasks in flight. The coor example on three coorflow
//     worker processes, one killed (SIGKILL) mid-team
//     (TestACoorRunOnThreeWorkerProcessesSurvivesKill9,
//     COORFLOW_COOR_KILL_TRIALS=6, run three times; the default 5 s
//     heartbeat timeout; a 2-core machine under a load of 15–25): every
//     run ended with the report of the run in process. Killing the
//     worker of an agent's call in flight (the model holding it): that
//     call, and no other, was made again on another worker 4.9–5.6 s
//     after the kill. Killing the worker of the run's steps (the team
//     node's activity, while an agent's call ran elsewhere): no call was
//     made again, the node's activity was retried elsewhere and started
//     the plan's next step 5.5–5.6 s after the kill.
//     Limits: a task's value goes through the history (at most 2 MB; a
//     larger one fails the task, saying so); a workflow has at most 10
//     updates in flight by default (history.maxInFlightUpdates: the
//     caller's "wait" is one; the dev server let 8 tasks in at once) — a
//     refused update (resource exhausted) is asked again with a backoff
//     (100 ms doubling to 2 s) as others end, so more tasks than that run
//     fewer at a time, also when several nodes of a run on several
//     workers start tasks together
//     (TestTasksOfSeveralNodesOnSeveralWorkersWaitForTheUpdateLimit) —
//     and 2000 in all (history.maxTotalUpdates), so a run continues as
//     new at the next superstep boundary after 1000 task updates; a
//     node's activity holds a worker slot while its tasks run, so a queue
//     whose slots are all held by waiting nodes starves their tasks: give
//     the tasks a queue of their own (TaskQueues) when many teams run at
//     once. A node that starts tasks (graph.StartsTasks: a factory team's) never
//     runs as a local step, since a local step's workflow task is held
//     open while it runs and no update would reach the workflow; a local
//     step whose node starts tasks all the same (a team inside a
//     subgraph) runs them itself. Every worker must know
//     the task activity and the update (this version or later).
//     History: a task adds the update's accepted and completed events and
//     its activity's three, and a workflow task for each batch of them.
//     Cost: a team of 8 agents and a report after them (BenchmarkTeam8,
//     a 2-core machine under a load of 10) took 148–194 ms a run with
//     its tasks inside the node's activity and 351–420 ms as task
//     activities (176–198 ms against 530–710 ms under a load of 14–17,
//     with the tasks as activities by default): 100–250 ms per wave of
//     tasks that run together, the update's and the activity's trips
//     through the server and RunScheduled's reload of the step, growing
//     with the machine's load; small against agents whose model
//     calls take seconds, which is why it is the default. Microsecond
//     tasks are better off with TasksInNode.
//   - History. A local step adds one event (a marker) and the workflow
//     task's three every 80% of its timeout; a step of one task as an
//     activity six (activity scheduled, started, completed, and a
//     workflow task scheduled, started, completed); a step of n parallel tasks about 6n+3 (three for each
//     task activity and for the step activity, and a workflow task for
//     each batch of completions: 27 measured for n = 4); the
//     workflow continues as new at a superstep boundary after
//     Config.StepsPerRun steps, or when the server suggests it.
//   - Versions. Workflow code changes are guarded with workflow.GetVersion
//     (patching: "local-head" is one), checked by replaying histories of
//     earlier builds (RegisterReplay, testdata); patching rather than
//     worker versioning because the workflow code is one small loop that
//     every graph shares and changes rarely, while pinning runs to the
//     build that started them would keep old workers alive for paused
//     runs that may wait for days. A new version of a graph needs nothing: runs in
//     flight continue on it from their checkpoint, as a restarted process
//     would (a node removed from a graph fails those that were about to
//     run it, with the engine's error).
//   - Events. They never enter the history. A step activity (and a task
//     activity) passes the engine a sink (graph.StreamTo) selected as the
//     caller's Stream selects (graph.EventSpec, in the workflow's input,
//     or sent by the "caller" update before a resume); it encodes each
//     event as JSON (graph.EncodeEvent: writes and state through their
//     channels' types, errors with their details) and appends it to the
//     EventLog, whose frames of a thread are a shared stream of the runs'
//     one event log (runs/eventlog, tables event_streams and
//     event_frames; migration 3 of temporal_events_schema moved the
//     frames of the tables of earlier versions there and dropped those
//     tables: workers and callers of those versions cannot share a
//     database with this one): the frames of every step of a worker
//     are stored in group commits, and the activity waits until its own
//     are stored before it reports its end. The log numbers a thread's
//     frames under its row lock, whatever worker appends them, so a
//     reader never skips one committed late, and each commit notifies
//     (LISTEN/NOTIFY, the replicas' pgdb.Listener); the caller reads
//     them a page at a time (at most 512 events and 1 MiB, or one
//     event), decodes (Config.Payloads for the custom payloads), yields
//     and deletes them, and says the
//     run's start, interrupt and end itself, from the workflow's outcome.
//     Each frame carries its activity and attempt: a step retried after
//     its worker died yields the retry's events after those the first
//     attempt stored, and the first attempt's that come later are
//     dropped. A thread holds at most EventLogConfig.MaxFrames and
//     MaxBytes unread (beyond them the events of a commit are dropped —
//     of each thread's events in a commit, those after the first that
//     does not fit —, counted, and the stream ends with an EventsDropped
//     event); an event over
//     MaxFrameBytes travels without its payload, its error's messages
//     shortened if they are what is large; a custom event that
//     Config.Payloads does not decode keeps its name (graph.NamedValue);
//     a new stream of the thread deletes what an earlier one left, and
//     Prune (a batch of threads at a time; coorflow worker runs it at
//     start and hourly) what callers that went away never read. A thread has one reader at a time: a
//     second Stream of a thread that is being streamed takes the frames
//     from the first. A streamed event reaches the caller
//     about the log's commit delay (eventlog.DefaultMaxDelay, 2 ms), one
//     PostgreSQL round trip and a notification after Emit
//     (BenchmarkStreamedEventLatency).
//
// What this design does not do: reducers and routing run in the step
// activity, not in workflow code (they are the engine's, deterministic by
// construction, and read the state, which stays out of the history); a
// journaled call inside a node is recorded in the saver, not as an
// activity of its own; a team's agents run as activities, not child
// workflows (with Config.TasksInNode, inside their team node's activity:
// they share its worker, its heartbeat and its retry);
// FromCheckpoint (replay and forks) runs in process. Streams need PostgreSQL (the event log shares the
// saver's database; on SQLite, Invoke only). In a step whose tasks run
// as activities of their own, the tasks' events come before the step's
// step_start (each task's own, and each path's, keep their order). Of a
// run's runtime values (graph.WithRuntime) the workers get only the
// strings Config.RuntimeKeys names (they go through the history). Budgets
// hold on the workers: the runner takes the run's budget (the caller's
// meter of scope llm.ScopeRun, with what the turn spent before) and the
// owner's (a meter kept in a runs/accounts account) into the workflow's
// input (Budget), and each step or task activity reserves its model calls
// in accounts of the saver's database (runs/accounts; in memory for a
// saver in memory), so that parallel activities and later steps on any
// worker share what the run spent; an answer that raises a budget (Ask)
// is kept in the run's account. The caller's own meters count only what
// it is streamed (a run on the workers is counted in their accounts). The
// event selection of a streamed run stays in its workflow until another
// Stream changes it: an Invoke that resumes it has its steps store
// events nobody reads, until the next Stream of the thread or Prune
// deletes them.
package temporalrun
