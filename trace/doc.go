// Package trace records runs and plays them back: every event of a run,
// the context snapshot of each model call (what the agent saw: parts,
// tokens per part, what was omitted or truncated and why) and each model
// call's request and response, in a Store with an index of runs.
//
// # Recording
//
// A Recorder writes to a Store: trace/sqlite (one file, the embedded
// default), trace/postgres (several machines) or trace/memory (tests);
// trace/tracetest is the suite they all pass. Feed it a run's events:
//
//	rec := trace.NewRecorder(store, trace.RecorderConfig{})
//	defer rec.Close(ctx)
//	in, _ := trace.EncodeInput(input)
//	for ev, err := range rec.Record(ctx, trace.RunInfo{ID: id, Graph: wf.Name(), Workflow: name, Input: in},
//		wf.Stream(ctx, input)) {
//		...
//	}
//
// or, when something else consumes the stream (the server does), call
// Begin, then RunRecorder.Observe with every event, then Finish. Events are
// numbered from 1 in the order the run emitted them (Event.Seq), the ids
// of the server's event streams; a model call's request and response are
// stored apart from its payload and read only when asked for
// (EventQuery.Bodies). The state after each step (values events) is not
// stored; the final state is, in the RunInfo.
//
// # Reading
//
// LoadTimeline outlines a run — steps, nodes, the agents that worked in
// them — and LoadAgent gives one agent's detail: task, snapshots, model
// calls with what the model answered and reasoned, tool calls with their
// results, output. The run viewer (package server) shows them. Both read
// a run a page at a time (1 MiB) and keep only what they show, each text
// of an AgentDetail cut at 256 KiB and all of them at 16 MiB.
//
// # Retention
//
// Store.Prune removes recorded runs by age and count, per owner, as a
// RetentionPolicy says (30 days and 10,000 runs of each owner unless told
// otherwise); coorflow serve prunes periodically and coorflow runs prune
// does it by hand.
//
// # Replaying (coorflow replay RUN)
//
// Replay runs a recorded run again offline: a Cassette answers each model
// call with the response recorded for the same event path (the agent's
// scope) and position, if the request is the same; a call that asks
// something else, or that the recording lacks, fails with a
// *DivergenceError. The Report lists where the replay left the recording
// (the first entry is where it happened), tool results that differ, and
// differences of final status and state, channel by channel:
//
//	cas, err := trace.OpenCassette(ctx, store, runID)
//	models, err := cas.Models(realModels) // every tier answered by the cassette, with the real profiles
//	wf := build(cas.Run().Workflow, models) // the same workflow, with fresh in-memory stores and registry
//	report, err := trace.Replay(ctx, wf, cas)
//	fmt.Println(report) // report.OK() when nothing diverged
//
// OpenCassette reads the run's model calls a page at a time without their
// bodies, and a call's request and response from the store when it
// answers the call: a replay holds the bodies of the calls in flight, not
// the run's (the tool results and agent events it compares are read a
// page at a time too). A call whose bodies cannot be read then fails with
// an *UnreadableError, which names the run, the path and the call, and
// Replay returns it.
// NewCassette plays a Recording held in memory (Load reads one, bodies
// and all; tests build them).
//
// Only runs started from an input (RunInfo.Start == StartInput) can be
// replayed; a run that resumed or continued a thread fails with
// ErrNotReplayable. WithInput replays with another input, to see where a
// change leads.
package trace
