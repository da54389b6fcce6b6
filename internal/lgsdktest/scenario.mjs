// The LangGraph Platform SDK scenario (internal/lgsdktest): the official
// JS SDK, @langchain/langgraph-sdk, against `coorflow serve`. Run by a Go
// test with LG_URL, LG_KEY, LG_COOR (a coor workflow that asks for a
// review of its plan) and LG_SLOW (one whose model never answers until the
// run is cancelled); LG_CONFIGURED, when set, is a workflow that answers
// its config, and LG_EXAMPLE the graph of examples/langgraph-scenario,
// whose contract the last steps check (the graph of LangGraph's client
// scenario, from a workflow file on its demo model). Each step checks what
// the SDK got with node:assert; the report on stdout (one JSON line) lets
// the Go test check it again.
//
//   LG_URL=... node scenario.mjs NODE_MODULES
import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const { Client } = await import(pathToFileURL(join(process.argv[2], "@langchain/langgraph-sdk/dist/index.js")).href);

const { LG_URL, LG_KEY, LG_COOR, LG_SLOW, LG_CONFIGURED, LG_EXAMPLE } = process.env;
const client = new Client({ apiUrl: LG_URL, apiKey: LG_KEY, callerOptions: { maxRetries: 0 } });
const report = { steps: [] };
const step = (name) => report.steps.push(name);

// httpStatus runs fn, which must fail with an HTTP error; it returns the
// status and the body.
async function httpStatus(fn) {
  try {
    await fn();
  } catch (e) {
    return { status: e.status, message: String(e.message) };
  }
  assert.fail("the call succeeded; an HTTP error was expected");
}

// collect streams a run, counting events by name.
async function collect(stream, onChunk = () => {}) {
  const counts = {};
  const chunks = [];
  for await (const chunk of stream) {
    counts[chunk.event] = (counts[chunk.event] ?? 0) + 1;
    chunks.push(chunk);
    onChunk(chunk);
  }
  return { counts, chunks };
}

// Assistants: each workflow is one.
const assistants = await client.assistants.search({});
report.assistants = assistants.map((a) => a.assistant_id).sort();
assert.ok(report.assistants.includes(LG_COOR) && report.assistants.includes(LG_SLOW));
const assistant = await client.assistants.get(LG_COOR);
assert.equal(assistant.graph_id, LG_COOR);
const drawing = await client.assistants.getGraph(LG_COOR);
report.graphNodes = drawing.nodes.map((n) => n.id);
assert.ok(drawing.edges.some((e) => e.source === "__start__" && e.target === "coordinator"));
const schemas = await client.assistants.getSchemas(LG_COOR);
assert.ok("input" in schemas.input_schema.properties);
step("assistants");

// A thread, and a coor run streamed in three modes: it stops at the
// review of its plan.
const thread = await client.threads.create({ metadata: { purpose: "sdk-test" } });
assert.equal(thread.status, "idle");
let created;
const first = await collect(
  client.runs.stream(thread.thread_id, LG_COOR, {
    input: { input: "Compare SQLite and PostgreSQL" },
    streamMode: ["values", "updates", "messages"],
    onRunCreated: (m) => { created = m; },
  }),
);
report.firstStream = first.counts;
assert.equal(first.chunks[0].event, "metadata", "the first event names the run");
const runId = first.chunks[0].data.run_id;
assert.equal(created?.run_id, runId, "Content-Location names the run");
assert.equal(created?.thread_id, thread.thread_id);
assert.ok(first.counts["messages/partial"] > 10, "model tokens stream as messages/partial");
const interrupted = first.chunks.find((c) => c.event === "updates" && c.data.__interrupt__);
assert.ok(interrupted, "the review interrupt comes as an update");
const question = interrupted.data.__interrupt__[0];
assert.match(JSON.stringify(question.value), /Accept this plan/);
const lastValues = first.chunks.filter((c) => c.event === "values").at(-1);
assert.ok(lastValues.data.plan, "the values carry the plan");
step("stream");

// The thread now waits on the review.
const waiting = await client.threads.get(thread.thread_id);
assert.equal(waiting.status, "interrupted");
const [taskId] = Object.keys(waiting.interrupts);
assert.equal(waiting.interrupts[taskId][0].id, question.id);
const state = await client.threads.getState(thread.thread_id);
assert.deepEqual(state.next, ["review"]);
assert.equal(state.tasks[0].interrupts[0].id, question.id);
const reviewCheckpoint = state.checkpoint.checkpoint_id;
const run = await client.runs.get(thread.thread_id, runId);
assert.equal(run.status, "success", "a run that paused at interrupt() ended well; the thread is interrupted");
step("interrupted");

// Resume with a Command: the team's nested agents stream their tokens.
const agentPaths = new Set();
const second = await collect(
  client.runs.stream(thread.thread_id, LG_COOR, {
    command: { resume: "accept" },
    streamMode: ["values", "updates", "messages"],
  }),
  (c) => {
    if (c.event === "messages/metadata") {
      for (const m of Object.values(c.data)) agentPaths.add(m.metadata.langgraph_path);
    }
  },
);
report.secondStream = second.counts;
report.agentPaths = [...agentPaths].sort();
assert.ok(report.agentPaths.some((p) => p.includes("/team/") && p.includes("/agent:")), "a nested agent's tokens stream");
assert.ok(second.counts["messages/complete"] > 0);
const resumeRun = second.chunks[0].data.run_id;
step("resume");

// State and history after the run.
const done = await client.threads.getState(thread.thread_id);
assert.deepEqual(done.next, []);
assert.match(done.values.answer, /SQLite/);
const history = await client.threads.getHistory(thread.thread_id, { limit: 50 });
report.historyLength = history.length;
assert.ok(history.length > 4);
assert.ok(history.some((h) => h.checkpoint.checkpoint_id === reviewCheckpoint));
const runs = await client.runs.list(thread.thread_id);
assert.deepEqual(runs.map((r) => r.run_id), [resumeRun, runId]);
assert.equal(runs[0].status, "success");
const joined = await client.runs.join(thread.thread_id, resumeRun);
assert.equal(joined.answer, done.values.answer);
step("state");

// Re-attach to the finished run's stream after an event id: resumable.
const rejoined = await collect(client.runs.joinStream(thread.thread_id, resumeRun, { lastEventId: "5", streamMode: ["updates"] }));
const ids = rejoined.chunks.filter((c) => c.id !== undefined).map((c) => Number(c.id));
assert.ok(ids.length > 0 && ids.every((id) => id > 5), "a re-attached stream starts after Last-Event-ID");
report.rejoinedFirstId = ids[0];
step("rejoin");

// Fork from the checkpoint of the review: new feedback, then a run from
// the fork stops at the review again.
const fork = await client.threads.updateState(thread.thread_id, { values: { feedback: "forked" }, checkpointId: reviewCheckpoint });
const forked = await client.threads.getState(thread.thread_id);
assert.equal(forked.checkpoint.checkpoint_id, fork.checkpoint.checkpoint_id);
assert.equal(forked.parent_checkpoint.checkpoint_id, reviewCheckpoint);
assert.equal(forked.values.feedback, "forked");
const again = await client.runs.wait(thread.thread_id, LG_COOR, { input: null });
assert.ok(again.__interrupt__?.length === 1, "the forked thread asks for the review again");
const copy = await client.threads.copy(thread.thread_id);
const copied = await client.threads.getState(copy.thread_id);
assert.equal(copied.values.feedback, "forked");
assert.deepEqual(copied.next, ["review"]);
step("fork");

// Cancel a run whose model never answers.
const slow = await client.threads.create();
const stuck = await client.runs.create(slow.thread_id, LG_SLOW, { input: { input: "wait" } });
assert.equal(stuck.status, "running");
await client.runs.cancel(slow.thread_id, stuck.run_id, true);
assert.equal((await client.runs.get(slow.thread_id, stuck.run_id)).status, "interrupted");
step("cancel");

// The store, per owner.
await client.store.putItem(["users", "alice"], "prefs", { theme: "dark" });
await client.store.putItem(["users", "alice"], "notes", { text: "hello world" });
await client.store.putItem(["users", "alice"], "prefs", { theme: "light" });
const prefs = await client.store.getItem(["users", "alice"], "prefs");
assert.equal(prefs.value.theme, "light");
const light = await client.store.searchItems(["users"], { filter: { theme: "light" } });
assert.deepEqual(light.items.map((i) => i.key), ["prefs"]);
const hello = await client.store.searchItems(["users"], { query: "hello" });
assert.deepEqual(hello.items.map((i) => i.key), ["notes"]);
const spaces = await client.store.listNamespaces({ prefix: ["users"] });
assert.deepEqual(spaces.namespaces, [["users", "alice"]]);
await client.store.deleteItem(["users", "alice"], "notes");
assert.equal(await client.store.getItem(["users", "alice"], "notes"), null);
step("store");

// Multitask strategies for a second input on a busy thread.
const busy = await client.threads.create();
const input = { input: "wait" };
const r1 = await client.runs.create(busy.thread_id, LG_SLOW, { input });
assert.equal(r1.status, "running");
const rejected = await httpStatus(() => client.runs.create(busy.thread_id, LG_SLOW, { input, multitaskStrategy: "reject" }));
assert.equal(rejected.status, 409);
assert.match(rejected.message, /already has run/);
const r2 = await client.runs.create(busy.thread_id, LG_SLOW, { input, multitaskStrategy: "enqueue" });
assert.equal(r2.status, "pending");
const r3 = await client.runs.create(busy.thread_id, LG_SLOW, { input, multitaskStrategy: "interrupt" });
assert.equal(r3.status, "running");
assert.equal((await client.runs.get(busy.thread_id, r1.run_id)).status, "interrupted");
assert.equal((await client.runs.get(busy.thread_id, r2.run_id)).status, "interrupted");
const r4 = await client.runs.create(busy.thread_id, LG_SLOW, { input, multitaskStrategy: "rollback" });
assert.equal(r4.status, "running");
const gone = await httpStatus(() => client.runs.get(busy.thread_id, r3.run_id));
assert.equal(gone.status, 404, "a rolled back run is deleted");
await client.runs.cancel(busy.thread_id, r4.run_id, true);
report.multitask = (await client.runs.list(busy.thread_id)).map((r) => r.status);
step("multitask");

// Crons: one on the thread, listed, then deleted.
const cron = await client.crons.createForThread(thread.thread_id, LG_COOR, { schedule: "0 9 * * 1", input: { input: "weekly" } });
assert.equal(cron.thread_id, thread.thread_id);
assert.ok(cron.next_run_date);
assert.deepEqual((await client.crons.search({ threadId: thread.thread_id })).map((c) => c.cron_id), [cron.cron_id]);
await client.crons.delete(cron.cron_id);
assert.equal(await client.crons.count({}), 0);
step("crons");

// A route coorflow does not serve answers 501, naming it.
const patched = await httpStatus(() => client.threads.patchState(thread.thread_id, { note: "x" }));
assert.equal(patched.status, 501);
assert.match(patched.message, /PATCH \/threads\/\{thread\}\/state/);
step("unserved");

// A run's config.configurable reaches the workflow: its expressions read
// config.greeting and config.shout.
if (LG_CONFIGURED) {
  const t = await client.threads.create({});
  const plain = await client.runs.wait(t.thread_id, LG_CONFIGURED, { input: { name: "ada" } });
  assert.equal(plain.answer, "hello ada");
  const shouted = await client.runs.wait(t.thread_id, LG_CONFIGURED, {
    input: { name: "ada" },
    config: { configurable: { greeting: "hi", shout: true } },
  });
  assert.equal(shouted.answer, "HI ADA");
  report.configured = shouted.answer;
  // Its assistant's config_schema is the file's config section.
  const schemas = await client.assistants.getSchemas(LG_CONFIGURED);
  assert.deepEqual(schemas.config_schema.properties, {
    greeting: { title: "greeting", type: "string", default: "hello" },
    shout: { title: "shout", type: "boolean", default: false },
  });
  step("config");
}

// examples/langgraph-scenario: an assistant of its graph configures its
// tone; a run streams the model call's tokens (messages-tuple) and the
// workflow's custom event, and pauses at its interrupt with a JSON
// payload; the resumed run, given a JSON answer, emits its second custom
// event and a final message that replaces the draft's of the same id; a
// client's state update replaces a message by id; a delay from the run's
// context keeps a run in progress until it is cancelled.
if (LG_EXAMPLE) {
  const ex = (report.example = {});
  const formal = await client.assistants.create({ graphId: LG_EXAMPLE, config: { configurable: { tone: "formal" } }, name: "Formal" });
  assert.equal(formal.graph_id, LG_EXAMPLE);
  step("example-assistant");

  const t = await client.threads.create();
  const opened = await collect(
    client.runs.stream(t.thread_id, formal.assistant_id, {
      input: { topic: "graph engines" },
      streamMode: ["messages-tuple", "custom", "updates"],
    }),
  );
  // messages-tuple: each event is [message chunk, metadata].
  const tuples = opened.chunks.filter((c) => c.event === "messages").map((c) => c.data);
  assert.ok(tuples.length > 1, "the model call streams its tokens");
  ex.tokens = tuples.map(([m]) => m.content);
  const nodes = new Set(tuples.map(([, meta]) => meta.langgraph_node));
  assert.equal(nodes.size, 1);
  ex.tokenNode = [...nodes][0];
  assert.equal(new Set(tuples.map(([m]) => m.id)).size, 1, "one message's chunks");
  const drafted = opened.chunks.find((c) => c.event === "updates" && c.data.write);
  assert.equal(ex.tokens.join(""), drafted.data.write.draft, "the tokens make up the draft");
  const opening = opened.chunks.filter((c) => c.event === "custom").map((c) => c.data);
  assert.deepEqual(opening, [{ stage: "started", tone: "formal" }], "the assistant's config reaches the custom event");
  const pause = opened.chunks.find((c) => c.event === "updates" && c.data.__interrupt__);
  assert.ok(pause, "the interrupt comes as an update");
  step("example-stream");

  const paused = await client.threads.getState(t.thread_id);
  ex.payload = paused.tasks.flatMap((task) => task.interrupts).map((i) => i.value)[0];
  assert.deepEqual(ex.payload, pause.data.__interrupt__[0].value);
  assert.equal(ex.payload.question, "Publish this draft?");
  assert.equal(ex.payload.draft, drafted.data.write.draft);
  assert.deepEqual(paused.next, ["approve"]);
  step("example-interrupt");

  // A JSON answer: the second custom event, then the final message,
  // which replaces the draft's.
  const resumed = await collect(
    client.runs.stream(t.thread_id, formal.assistant_id, {
      command: { resume: { approved: true, note: "fine" } },
      streamMode: ["custom", "values"],
    }),
  );
  const closing = resumed.chunks.filter((c) => c.event === "custom").map((c) => c.data);
  assert.deepEqual(closing, [{ stage: "finished", approved: true }], "the answer reaches the second custom event");
  ex.custom = [...opening, ...closing];
  const done = resumed.chunks.filter((c) => c.event === "values").at(-1).data;
  ex.final = done.final;
  assert.equal(ex.final, "Published: " + ex.payload.draft);
  ex.messages = done.messages;
  // The input's message came without an id and got one, as add_messages
  // gives it, so that a client can replace or remove it.
  const humanID = ex.messages[0]?.id;
  assert.match(humanID ?? "", /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  assert.deepEqual(ex.messages, [
    { id: humanID, type: "human", content: "graph engines" },
    { id: "draft", type: "ai", content: ex.final },
  ]);
  assert.deepEqual((await client.threads.getState(t.thread_id)).values.messages, ex.messages);
  step("example-final");

  // A client's update of a message of an existing id replaces it.
  await client.threads.updateState(t.thread_id, { values: { messages: [{ id: "draft", type: "ai", content: "Edited by hand." }] } });
  ex.edited = (await client.threads.getState(t.thread_id)).values.messages;
  assert.deepEqual(ex.edited, [
    { id: humanID, type: "human", content: "graph engines" },
    { id: "draft", type: "ai", content: "Edited by hand." },
  ]);
  // And the id it was given removes it.
  await client.threads.updateState(t.thread_id, { values: { messages: [{ type: "remove", id: humanID }] } });
  assert.deepEqual((await client.threads.getState(t.thread_id)).values.messages, [{ id: "draft", type: "ai", content: "Edited by hand." }]);
  step("example-update");

  // A delay from the run's context keeps the run in progress: it is
  // still running when cancelled, and ends interrupted (LangGraph's
  // cancelled).
  const waiting = await client.threads.create();
  const run = await client.runs.create(waiting.thread_id, formal.assistant_id, { input: { topic: "patience" }, context: { delay: 3600 } });
  let seen = await client.runs.get(waiting.thread_id, run.run_id);
  while (seen.status === "pending") seen = await client.runs.get(waiting.thread_id, run.run_id);
  ex.beforeCancel = seen.status;
  assert.equal(ex.beforeCancel, "running");
  await client.runs.cancel(waiting.thread_id, run.run_id, true);
  ex.afterCancel = (await client.runs.get(waiting.thread_id, run.run_id)).status;
  assert.equal(ex.afterCancel, "interrupted");
  ex.draftAfterCancel = (await client.threads.getState(waiting.thread_id)).values.draft ?? null;
  assert.equal(ex.draftAfterCancel, null, "cancelled in its delay, before the model was called");
  step("example-delay");
}

console.log(JSON.stringify(report));
