// Package server is coorflow's HTTP API: threads, runs, streamed events and
// resumes over a set of compiled workflows, as an http.Handler.
//
//	srv, err := server.New(server.Config{
//		Workflows: map[string]*graph.Runnable{"research": research},
//		Saver:     saver,
//		Tokens:    map[string]string{os.Getenv("COORFLOW_TOKEN"): "alice"},
//	})
//	hs := server.NewHTTPServer(srv, server.Limits{}) // timeouts, header and connection caps
//	go hs.Serve(ln)
//	...
//	hs.Shutdown(ctx)  // stop accepting requests
//	srv.Shutdown(ctx) // cancel runs (their checkpoints stay) and wait for them
//
// Serve the Server through NewHTTPServer, or an http.Server with the same
// care: without read, write and idle timeouts and a cap on connections, a
// client without any token can hold connections open for ever.
//
// # Routes
//
// Every route but /healthz (and /ok, /info) needs the header
// "Authorization: Bearer <token>" (or "X-Api-Key: <token>");
// the token names its owner (Config.Tokens). Bodies and answers are JSON.
//
//	GET    /healthz                                    200 {"status":"ok"}; 503 while shutting down
//	GET    /v1/workflows                               {"workflows": [WorkflowInfo]}: name, channels, nodes, Mermaid
//	GET    /v1/workflows/{workflow}                    WorkflowInfo
//	GET    /v1/agents                                  {"agents": [AgentInfo]} (Config.Agents)
//	POST   /v1/threads                                 {"workflow", "thread_id"?, "metadata"?} -> 201 Thread
//	GET    /v1/threads/{thread}                        Thread, with its active run
//	DELETE /v1/threads/{thread}                        204; 409 while it has a run; runs asked for meanwhile get 409
//	GET    /v1/threads/{thread}/state?checkpoint=      Snapshot: values, next, pending interrupts
//	GET    /v1/threads/{thread}/history?limit=         {"checkpoints": [Snapshot]}, newest first
//	POST   /v1/threads/{thread}/runs                   RunRequest -> 202 Run once started (Location: the run)
//	POST   /v1/threads/{thread}/runs/wait              RunRequest -> 200 Run once ended, with values or interrupts
//	POST   /v1/threads/{thread}/runs/stream?kinds=     RunRequest -> the run's events (text/event-stream)
//	GET    /v1/threads/{thread}/runs                   {"runs": [Run]}, newest first, without values and interrupts
//	GET    /v1/threads/{thread}/runs/{run}             Run: status, values, interrupts, error
//	GET    /v1/threads/{thread}/runs/{run}/stream      re-attach: events after ?after=N or Last-Event-ID
//	POST   /v1/threads/{thread}/runs/{run}/cancel      200 Run once it ended (202 if it is still ending after 10s)
//
// With Config.Recorder set, every run is recorded (package trace) and the
// run viewer is served; see "Run viewer" below:
//
//	GET    /viewer/                                    the run viewer (no token needed: the page holds no data)
//	GET    /v1/trace/runs?thread=&workflow=&status=&limit=&before=   {"runs": [TraceRun]}, newest first, each with input_text
//	GET    /v1/trace/runs/{run}                        trace.RunInfo: status, input, final state, event count
//	GET    /v1/trace/runs/{run}/timeline               trace.Timeline: the answer; steps, nodes, agents with their times
//	GET    /v1/trace/runs/{run}/agents/{agent}         trace.AgentDetail: snapshots, model calls, tool calls, output (each text cut at 256 KiB)
//	GET    /v1/trace/runs/{run}/events?after=&until=&kinds=&path=&limit=&max_bytes=&bodies=   {"events": [trace.Event], "next_after": N}: a page (1,000 events, 1 MiB by default); next_after, when set, is the next page's after=
//
// # LangGraph Platform API
//
// The routes the LangGraph Platform SDKs call are served at the root
// (platform*.go): assistants (the workflows, and configured versions of
// them the owners create: Config.MaxAssistants, kept in Config.Store), threads, state and history,
// runs (background, wait, stream by mode, join, cancel, multitask
// strategies), webhooks (Config.WebhookAllow), crons (Config.MaxCrons, kept
// in Config.Store) and the store (Config.Store). They are an adapter of shapes over the same
// threads and runs as /v1; the SDK's apiKey (header X-Api-Key) is a bearer
// token. The routes the SDK can call that are not served (batch runs and
// a few more) answer 501 not_served naming the route.
// docs/platform.md lists them all.
//
// # OpenAI-compatible endpoint
//
// Under OpenAIMount (/openai/v1, openai*.go) each workflow is a chat model
// of OpenAI's Chat Completions API: POST /openai/v1/chat/completions runs
// it (streamed or not) as a Platform run of the conversation's thread, GET
// /openai/v1/models lists the workflows. Errors are in OpenAI's shape.
// docs/openai.md says how a conversation maps onto a thread.
//
// # A run's config
//
// A run's config is what its caller gives its nodes (package runs): the
// Platform's config.configurable and context (merged; a key in both must
// have one value), /v1's and /mcp's "config" (an object of values by
// key). Go nodes read it with runs.ConfigFrom or runs.ConfigValue, a
// workflow file's expressions as config.<key>. It travels with the run:
// in the stored request of a shared run, to Temporal's workers, into its
// recording. It is bounded (runs.MaxConfigBytes, runs.MaxConfigDepth) and
// checked before the run starts (400 invalid_field naming the key). Keys
// starting with "coorflow." are refused: they are the host's runtime
// values (owner, thread, run). LangGraph's thread_id, checkpoint_id,
// checkpoint_ns and run_id never reach the nodes: on the Platform,
// thread_id must be the URL's thread, checkpoint_ns empty (the root
// graph), checkpoint_id is the checkpoint to start from (as the request's
// checkpoint_id, which it must agree with) and run_id is ignored; /v1 and
// /mcp refuse them. A resumed run has the config of the request that
// resumes it, as LangGraph's clients send it again. Config's other
// fields (tags, recursion_limit...) are accepted and ignored.
//
// A thread belongs to one workflow and one owner. The Saver stores it under
// an id derived from both (see threadKey), so another owner's thread does
// not exist for this one: 404, like a thread that was never created. The
// thread's workflow and metadata are a record in the Saver's namespace
// "#coorflow-server", so threads survive a restart, and so does everything
// the engine checkpointed. Runs (ids, status, buffered events) live in the
// server's memory: the last Config.RetainRuns finished runs are kept
// (within Config.RetainBytes). A finished run keeps no values, input or
// events in memory: its values and interrupts are read from the Saver at
// its checkpoint when a client asks (the values of the runs that ended
// done most recently, 1 MiB of them, are cached, so that their waiters
// and pollers do not read them back), its events from the Recorder (with
// Config.Replicas, runs and their events are in the database instead: see
// Replicas).
//
// # Quotas
//
// Each owner may have Config.MaxActiveRuns runs in progress (default 16),
// Config.MaxQueuedRuns queued (default 64), and Config.MaxStoredBytes
// stored (default 1 GiB: its threads' checkpoints, its recorded runs and
// its Platform store items; see Config.MaxStoredBytes), and
// Config.MaxMCPSessions sessions open on /mcp (default 16), and 256
// requests in flight on /mcp of a replica (quota mcp_requests). A request
// beyond one is refused with 429 quota_exceeded, naming the quota and its
// limit, with a Retry-After when waiting for a run to end helps. Crons'
// runs are admitted as requests are. Deleting a thread deletes its
// recorded runs too, and frees their bytes.
//
// NewHTTPServer bounds connections: Limits.MaxConns open, a quarter of them
// for clients that have not sent a valid token (Limits.MaxAnonConns, with
// 5-second reads: Limits.AnonTimeout), half for one IP address
// (Limits.MaxConnsPerIP).
//
// A run is active from its admission when no other run of its thread is
// open (it runs, or waits for a replica with room), and queued while it
// waits behind one; when a thread's run ends, the next takes its place in
// the same step. Every entry point that starts runs (/v1, the Platform
// API, /mcp, crons) admits them through one ledger that checks the quotas
// and the thread's runs and records the run in one atomic step (package
// runs), so that runs asked for at once never get past a quota together:
// a single server keeps its ledger in its memory (runs.Ledger: its runs
// are in memory whatever its Saver, SQLite included; two servers on one
// SQLite file do not share quotas), replicas in the database, where the
// count is of the open run rows of every replica (see Replicas).
//
// # Runs
//
// A RunRequest holds one of: "input" (channel name -> JSON value, decoded
// through the channel's type) to start a run; "resume" (one answer to the
// only pending interrupt) or "resume_each" (interrupt id -> answer); or
// nothing, to continue a run that did not finish — one cancelled, or stopped
// by a shutdown — from its last checkpoint: the steps that finished are not
// run again.
//
// A thread runs one run at a time: a second one is refused with 409
// thread_busy, or queued behind it when Config.QueueBusy is set. A run that
// the thread's state makes impossible is refused before it starts, with
// 409: not_interrupted (resume of a thread that waits on nothing),
// ambiguous_resume (one answer, several questions), interrupted (an input or
// a bare continue for a thread waiting on answers), unfinished_run (an input
// while a run is unfinished), nothing_to_continue. A run that fails once
// started ends with status "error" and an error object.
//
// # Events
//
// A stream is a sequence of server-sent events:
//
//	id: 7
//	event: node_end
//	data: {"id":7,"run_id":"…","kind":"node_end","path":"wf/a","node":"a","step":0,"attempt":1,"time":"…","duration_ms":1.2}
//
// The event names are the events' own (graph.Event.Name): the engine's
// kinds (run_start, step_start, node_start, node_end, update, values,
// custom, checkpoint, interrupt, error, run_end), the custom events of
// coorflow's packages (token, model_call, tool_call, tool_result,
// agent_created, agent_start, agent_end, snapshot, warning) and any other
// custom event a workflow publishes; data is an Event. The last event is
// always "end", whose data is the Run (of a shared run deleted before its
// stream saw it end, as a rollback deletes its run: status "error", error
// unknown_run). ?kinds=a,b sends only those events
// (and end): names of the first two groups, and those of
// Config.EventNames.
//
// A client that disconnects, or does not take a write within
// Config.WriteTimeout, does not stop the run. While a run goes on it keeps
// its most recent Config.EventBuffer events (default 1024, at most
// Config.EventBufferBytes, default 1 MiB, of them): a client re-attaches with
// GET .../runs/{run}/stream and gets the buffered events after the id it
// last saw (Last-Event-ID, as browsers' EventSource send it, or ?after=N),
// then the live ones. Every stream's answer says where to re-attach in
// its Location header (the run's .../runs/{run}/stream, /v1 or Platform),
// which the LangGraph SDK follows by itself with Last-Event-ID when a
// stream breaks. If some of those were dropped from the buffer, it
// first gets a "truncated" event saying how many. Once the run has ended
// the server holds none of its events: with a Recorder, a re-attached
// stream reads them from the recording, the same events but for the state
// of "values" events, which recordings do not keep; without one, it gets a
// "truncated" event. The run's final values are always in the Run, read
// from the Saver.
//
// # Replicas
//
// With Config.Replicas (package server/replicas, on PostgreSQL), any
// number of servers share their runs: a run is executed by the replica
// that took the request, under a lease on its thread whose token fences
// its checkpoints, and every event is stored in the database (the event
// log's group commits, within milliseconds and before the run's next
// checkpoint; its recording, Config.Recorder's, is written before that
// checkpoint too) before any replica streams it, so that any replica answers
// runs/{run}, its stream (from the
// start, or after Last-Event-ID: no buffer limit, nothing truncated),
// runs/wait, cancel, the thread's runs and its active run; the owners'
// quotas count the runs of every replica. A replica that dies holds its
// runs until their leases expire (Config.LeaseTTL); another then takes
// each over from its last checkpoint, replaying its journaled calls: it
// wakes when the earliest lease it knows of expires, so a takeover comes
// a lease and ~100ms after the replica's last renewal. A stream that was
// read from the dead replica re-attaches to any other at its Location. One
// that shuts down hands its runs over at once. A replica runs only the
// runs of the workflows it serves (Config.Workflows): replicas serving
// different sets, as during a rolling upgrade, leave each other's alone.
// The database keeps the newest Config.RetainRuns ended runs of all the
// replicas, with their events: the replicas delete the older ones, with
// their events, every half lease (their threads and checkpoints stay).
// The Platform API's runs are
// shared runs too: they are stored with the Platform request that made
// them, which the replica that claims one sets it up from, and any
// replica streams them in the Platform's format from the stored events;
// the multitask strategies act on the thread's runs on every replica. So
// are the runs of the MCP endpoint's tool calls, followed by the call
// through the shared events; an MCP session lives in the memory of the
// replica that opened it. So are the runs of A2A tasks: a task's record
// is kept on its context's thread, in the shared saver, and every A2A
// method finds, follows, streams, cancels or answers it on any replica.
//
// # Crons
//
// The Platform's crons are items of the store (Config.Store, or a memory
// store without one) of the owner "#coorflow-server", which no token may
// name: they outlive a restart, and replicas sharing the store share them.
// A firing is claimed by writing the cron's next run date at the revision
// it was read at, so that of the replicas due to fire a cron, one starts
// its run. Replicas without a Store serve no crons (501).
//
// # Errors
//
// Every error is {"error": {"code", "message", "field"?}} (ErrorBody):
// 401 unauthorized (missing or unknown token), 404 unknown_workflow,
// unknown_thread, unknown_run, unknown_checkpoint, not_found (no route),
// 405 method_not_allowed, 413 body_too_large (Config.MaxBodyBytes),
// 400 malformed_json, unknown_field, invalid_field, unknown_channel,
// invalid_query (with the field or parameter at fault), 409 as above,
// 429 quota_exceeded, 503 shutting_down. A 500 internal says only that the
// server failed and under which request id its log has the detail; every
// answer carries that id in the X-Request-Id header.
//
// # Run viewer
//
// /viewer/ lists the owner's recorded runs, the runs of a thread together
// under it, each with its input, workflow, status and start time;
// /viewer/?run=ID shows one: a timeline of its steps, nodes and agents on
// the left; first the run's answer, rendered as Markdown, and a time bar
// per step and agent (bars that overlap ran at the same time); and, for
// the agent clicked, what each of its model calls saw (the context
// snapshot: parts, tokens per part, what was omitted or truncated and
// why), its tool calls and results, its model calls with their answers
// and reasoning, and its output. Outputs and arguments that are JSON
// objects are shown as fields. Model output is untrusted: the page renders
// Markdown into elements and text nodes only (raw HTML stays text, a link
// keeps only an http, https or mailto address), under a Content Security
// Policy that runs no inline script. While the run goes on, the page follows the run's stream
// (GET .../runs/{run}/stream?after=N, read with fetch) and refreshes; a run
// this server does not hold in memory is polled. The page, script and
// styles are embedded in the binary and load nothing from elsewhere.
//
// The page calls the API with the same bearer tokens. Open it as
// /viewer/#token=T: the page keeps T in sessionStorage (for that tab only),
// removes it from the address, and sends it in the Authorization header;
// without one it asks for it. The fragment never leaves the browser; a
// token in the query (?token=T) would be in the server's and proxies' logs,
// so neither the page nor the API ever takes one. A run of another
// owner is 404, as for threads. Recorded runs outlive the server's memory
// of runs (Config.RetainRuns): they stay in the Recorder's store.
//
// # Tracing
//
// Each run is traced with telemetry.Observer: a run span whose parent is
// the caller's span, read from the request's traceparent header
// (Config.Propagator), with spans for steps, nodes, model and tool calls
// below it.
package server
