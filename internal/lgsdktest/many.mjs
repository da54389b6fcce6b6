// Routes that act on several runs or threads at once (issue #28), with
// the official JS SDK of the version in NODE_MODULES: runs.createBatch,
// runs.joinStream without a thread, and, where the SDK has them (1.x),
// runs.cancelMany and threads.prune. Run by the server's Go tests with
// LG_URL, LG_KEY, LG_ECHO (a graph that upper-cases "text") and LG_BLOCK
// (one that blocks until cancelled). Each check is a node:assert; the
// report on stdout (one JSON line) lets the Go test check it again.
//
//   LG_URL=... node many.mjs NODE_MODULES
import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const { Client } = await import(pathToFileURL(join(process.argv[2], "@langchain/langgraph-sdk/dist/index.js")).href);

const { LG_URL, LG_KEY, LG_ECHO, LG_BLOCK } = process.env;
const client = new Client({ apiUrl: LG_URL, apiKey: LG_KEY, callerOptions: { maxRetries: 0 } });
const report = { steps: [] };
const step = (name) => report.steps.push(name);

async function collect(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

async function status(promise) {
  try {
    await promise;
    return 200;
  } catch (err) {
    return err.status;
  }
}

// createBatch: stateless background runs, each on a thread of its own.
const batch = await client.runs.createBatch([
  { assistantId: LG_ECHO, input: { text: "a" } },
  { assistantId: LG_ECHO, input: { text: "b" }, onCompletion: "keep" },
]);
assert.equal(batch.length, 2);
report.batch = [];
for (const run of batch) {
  assert.ok(run.run_id && run.thread_id, "each run names its thread");
  report.batch.push((await client.runs.join(run.thread_id, run.run_id)).text);
}
assert.deepEqual(report.batch, ["A", "B"]);
step("batch");

// joinStream with no thread: the run found by its id alone.
const kept = batch[1];
const joined = await collect(client.runs.joinStream(null, kept.run_id, { streamMode: ["values"] }));

report.joined = [...new Set(joined.map((c) => c.event))];
assert.deepEqual(report.joined, ["metadata", "values"]);
assert.equal(joined.at(-1).data.text, "B");
step("joinStream");

if (typeof client.runs.cancelMany === "function") {
  // cancelMany: the pending run of a thread, then its running one.
  const thread = await client.threads.create();
  const running = await client.runs.create(thread.thread_id, LG_BLOCK, { input: {} });
  const pending = await client.runs.create(thread.thread_id, LG_BLOCK, { input: {}, multitaskStrategy: "enqueue" });
  await client.runs.cancelMany({ threadId: thread.thread_id, status: "pending" });
  assert.equal((await client.runs.get(thread.thread_id, pending.run_id)).status, "interrupted");
  await client.runs.cancelMany({ threadId: thread.thread_id, runIds: [running.run_id], action: "interrupt" });
  await client.runs.join(thread.thread_id, running.run_id);
  report.cancelled = [];
  for (const run of [pending, running]) report.cancelled.push((await client.runs.get(thread.thread_id, run.run_id)).status);
  assert.deepEqual(report.cancelled, ["interrupted", "interrupted"]);
  step("cancelMany");

  // prune: the caller's threads of the list; an unknown one is skipped.
  const pruned = await client.threads.prune([thread.thread_id, kept.thread_id, "nope"]);
  report.pruned = pruned.pruned_count;
  assert.equal(report.pruned, 2);
  assert.equal(await status(client.threads.get(kept.thread_id)), 404);
  step("prune");
}

console.log(JSON.stringify(report));
