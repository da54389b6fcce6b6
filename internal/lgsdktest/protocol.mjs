// The details of the Platform API that clients rely on (issue #28), with
// the official JS SDK of the version in NODE_MODULES. Run by the server's
// Go tests with LG_URL, LG_KEY, LG_ASK (a graph whose node "draft" emits
// a plain custom value and a model call, then asks a question) and
// LG_BLOCK (one that blocks until cancelled); LG_ASK's config is that
// of a workflow file's config section. Each check is a node:assert;
// the report on stdout (one JSON line) lets the Go test check it again.
//
//   LG_URL=... node protocol.mjs NODE_MODULES
import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const { Client } = await import(pathToFileURL(join(process.argv[2], "@langchain/langgraph-sdk/dist/index.js")).href);

const { LG_URL, LG_KEY, LG_ASK, LG_BLOCK } = process.env;
const client = new Client({ apiUrl: LG_URL, apiKey: LG_KEY, callerOptions: { maxRetries: 0 } });
const report = { steps: [] };
const step = (name) => report.steps.push(name);

async function collect(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

// A run that pauses at interrupt() succeeded; its thread is interrupted.
// The custom mode carries the plain value the node emitted, not the
// model call coorflow records.
const thread = await client.threads.create();
const first = await collect(
  client.runs.stream(thread.thread_id, LG_ASK, { input: { text: "go" }, streamMode: ["custom", "updates"] }),
);
const runId = first[0].data.run_id;
report.custom = first.filter((c) => c.event === "custom").map((c) => c.data);
assert.deepEqual(report.custom, [{ progress: "drafting" }], "custom carries what the graph emitted, only that");
const question = first.find((c) => c.event === "updates" && c.data.__interrupt__).data.__interrupt__[0];
report.pausedRun = (await client.runs.get(thread.thread_id, runId)).status;
assert.equal(report.pausedRun, "success", "a run that paused at interrupt() ended well");
report.pausedThread = (await client.threads.get(thread.thread_id)).status;
assert.equal(report.pausedThread, "interrupted", "the thread waits on the interrupt");
step("status");

// Answer it; the past checkpoint still lists its task with the interrupt.
const resumed = await client.runs.wait(thread.thread_id, LG_ASK, { command: { resume: { ok: true } } });
assert.deepEqual(resumed.log, ["draft ok=true", "after"]);
const history = await client.threads.getHistory(thread.thread_id, { limit: 10 });
const asked = history.find((h) => h.tasks.some((t) => t.name === "draft"));
assert.ok(asked, "the history lists the checkpoint before draft with its task");
const draft = asked.tasks.find((t) => t.name === "draft");
report.historyInterrupts = draft.interrupts.map((i) => i.id);
assert.deepEqual(report.historyInterrupts, [question.id], "the task keeps the interrupt it asked");
assert.deepEqual(draft.interrupts[0].value, question.value);
const past = await client.threads.getState(thread.thread_id, asked.checkpoint.checkpoint_id);
report.stateInterrupts = past.tasks.find((t) => t.name === "draft").interrupts.map((i) => i.id);
assert.deepEqual(report.stateInterrupts, [question.id], "an answered interrupt stays on the past checkpoint");
assert.deepEqual(past.interrupts.map((i) => i.id), [question.id]);
step("history");

// Join the finished run in two modes: the SDK sends them its own way
// (2.x: one JSON array).
const joined = await collect(client.runs.joinStream(thread.thread_id, runId, { streamMode: ["values", "updates"] }));
report.joined = [...new Set(joined.map((c) => c.event))].sort();
assert.ok(report.joined.includes("values") && report.joined.includes("updates"), `joined in both modes: ${report.joined}`);
step("join");

// A cancelled run is interrupted.
const busy = await client.threads.create();
const stuck = await client.runs.create(busy.thread_id, LG_BLOCK, { input: {} });
await client.runs.cancel(busy.thread_id, stuck.run_id, true);
report.cancelledRun = (await client.runs.get(busy.thread_id, stuck.run_id)).status;
assert.equal(report.cancelledRun, "interrupted");
step("cancel");

// The assistant's config_schema (and context_schema: coorflow reads
// config.configurable and context as one config) is its workflow
// file's config section.
const schemas = await client.assistants.getSchemas(LG_ASK);
report.configSchema = schemas.config_schema;
report.contextSchema = schemas.context_schema;
assert.equal(schemas.config_schema?.type, "object", "the workflow's config has a schema");
assert.deepEqual(schemas.context_schema, schemas.config_schema);
step("schemas");

console.log(JSON.stringify(report));
