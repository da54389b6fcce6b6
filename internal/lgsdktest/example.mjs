// examples/langgraph-scenario served by `coorflow serve`, driven by the
// official JS SDK of the version in NODE_MODULES (issue #28): an
// assistant of the example's graph configures its tone; a run streams
// the workflow's custom events, pauses at its interrupt with a JSON
// payload and resumes with a JSON answer to its final message, which
// replaces the draft's message of the same id; a client's state update
// replaces a message by id; a delay from the run's context keeps a run
// in progress until it is cancelled. Run by cmd/coorflow's Go test with
// LG_URL, LG_KEY and LG_GRAPH; the report on stdout (one JSON line) lets
// the Go test check it again.
//
//   LG_URL=... node example.mjs NODE_MODULES
import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const { Client } = await import(pathToFileURL(join(process.argv[2], "@langchain/langgraph-sdk/dist/index.js")).href);

const { LG_URL, LG_KEY, LG_GRAPH } = process.env;
const client = new Client({ apiUrl: LG_URL, apiKey: LG_KEY, callerOptions: { maxRetries: 0 } });
const report = { steps: [] };
const step = (name) => report.steps.push(name);

// An assistant of the example's graph, in a formal tone.
const assistant = await client.assistants.create({ graphId: LG_GRAPH, config: { configurable: { tone: "formal" } }, name: "Formal" });
step("assistant");

// The run streams the workflow's own events and pauses at its interrupt.
const thread = await client.threads.create();
const chunks = [];
for await (const chunk of client.runs.stream(thread.thread_id, assistant.assistant_id, {
  input: { topic: "graph engines" },
  streamMode: ["custom", "values"],
})) {
  chunks.push(chunk);
}
report.custom = chunks.filter((c) => c.event === "custom").map((c) => c.data);
assert.deepEqual(report.custom, [{ stage: "started", tone: "formal" }]);
const paused = await client.threads.getState(thread.thread_id);
report.payload = paused.tasks.flatMap((t) => t.interrupts).map((i) => i.value)[0];
assert.equal(report.payload.question, "Publish this draft?");
assert.ok(report.payload.draft.length > 0, "the model's draft");
assert.deepEqual(paused.next, ["approve"]);
step("interrupt");

// A JSON answer leads to the final message, which replaces the draft's.
const done = await client.runs.wait(thread.thread_id, assistant.assistant_id, { command: { resume: { approved: true, note: "fine" } } });
report.final = done.final;
assert.equal(report.final, "Published: " + report.payload.draft);
report.messages = done.messages;
assert.deepEqual(report.messages, [
  { type: "human", content: "graph engines" },
  { id: "draft", type: "ai", content: report.final },
]);
step("final");

// A client's update of a message of an existing id replaces it.
await client.threads.updateState(thread.thread_id, { values: { messages: [{ id: "draft", type: "ai", content: "Edited by hand." }] } });
report.edited = (await client.threads.getState(thread.thread_id)).values.messages;
assert.deepEqual(report.edited, [
  { type: "human", content: "graph engines" },
  { id: "draft", type: "ai", content: "Edited by hand." },
]);
step("update");

// A delay from the run's context keeps the run in progress: it is still
// running when cancelled, and ends interrupted (LangGraph's cancelled).
const waiting = await client.threads.create();
const run = await client.runs.create(waiting.thread_id, assistant.assistant_id, { input: { topic: "patience" }, context: { delay: 3600 } });
let seen = await client.runs.get(waiting.thread_id, run.run_id);
while (seen.status === "pending") seen = await client.runs.get(waiting.thread_id, run.run_id);
report.beforeCancel = seen.status;
assert.equal(report.beforeCancel, "running");
await client.runs.cancel(waiting.thread_id, run.run_id, true);
report.afterCancel = (await client.runs.get(waiting.thread_id, run.run_id)).status;
assert.equal(report.afterCancel, "interrupted");
report.draftAfterCancel = (await client.threads.getState(waiting.thread_id)).values.draft ?? null;
assert.equal(report.draftAfterCancel, null, "cancelled in its delay, before the model was called");
step("delay");

console.log(JSON.stringify(report));
