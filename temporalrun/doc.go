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
// # Design
//
// One workflow per run of a thread; its id is the thread id, so a thread
// has one active run at a time, and the next run of a finished thread
// reuses the id. The workflow is a loop over supersteps. A step of one
// task is one activity: it calls graph.Runnable.Step, which loads the
// thread from the saver, runs the task (the node body), applies its writes
// with the reducers, routes, and stores the checkpoint. A step of several
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
//   - History. A step of one task adds six events (activity scheduled,
//     started, completed, and a workflow task scheduled, started,
//     completed); a step of n parallel tasks about 6n+3 (three for each
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
//
// What this design does not do: reducers and routing run in the step
// activity, not in workflow code (they are the engine's, deterministic by
// construction, and read the state, which stays out of the history); a
// journaled call inside a node is recorded in the saver, not as an
// activity of its own; a team's agents run inside their team node's task,
// not as child workflows; token and event streams do not reach the caller
// (Invoke only); FromCheckpoint (replay and forks) runs in process.
package temporalrun
