// Stateless runs and a thread's stream (issue #28) with the official JS
// SDK of the version in NODE_MODULES. Run by the server's Go tests with
// LG_URL, LG_KEY, LG_ECHO (a graph that upper-cases "text") and LG_BLOCK
// (one that blocks until cancelled, after its nodes a and b). Each check
// is a node:assert; the report on stdout (one JSON line) lets the Go test
// check it again.
//
//   LG_URL=... node stateless.mjs NODE_MODULES
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

// runs.wait with no thread answers the values.
const waited = await client.runs.wait(null, LG_ECHO, { input: { text: "hi" } });
report.waited = waited.text;
assert.equal(report.waited, "HI");
step("wait");

// runs.stream with no thread streams the run in the modes asked.
const streamed = await collect(client.runs.stream(null, LG_ECHO, { input: { text: "hi" }, streamMode: ["values", "updates"] }));
report.streamed = [...new Set(streamed.map((c) => c.event))].sort();
assert.deepEqual(report.streamed, ["metadata", "updates", "values"]);
assert.equal(streamed.filter((c) => c.event === "values").at(-1).data.text, "HI");
step("stream");

// A stateless run's thread: on_completion "keep" leaves it (the SDK
// tells its id from Content-Location), the default deletes it once the
// run has ended. 2.0.0's runs.create sends no on_completion.
let keptRun;
const kept = await client.runs.wait(null, LG_ECHO, { input: { text: "hi" }, onCompletion: "keep", onRunCreated: (m) => (keptRun = m) });
assert.equal(kept.text, "HI");
assert.ok(keptRun?.thread_id, "the answer names the run's thread");
report.keptThread = (await client.threads.get(keptRun.thread_id)).values.text;
assert.equal(report.keptThread, "HI");
const dropped = await client.runs.create(null, LG_ECHO, { input: { text: "hi" } });
assert.ok(dropped.thread_id, "the run names its thread");
assert.equal((await client.runs.join(dropped.thread_id, dropped.run_id)).text, "HI");
report.droppedThread = await status(client.threads.get(dropped.thread_id));
assert.equal(report.droppedThread, 404, "the thread of a stateless run is deleted once it ends");
report.unknownAssistant = await status(client.runs.wait(null, "nope", { input: {} }));
assert.equal(report.unknownAssistant, 404);
step("create");

// threads.joinStream joins the thread's run in progress; it ends with
// the run (cancelled here once the stream has begun).
const thread = await client.threads.create();
const busy = await client.runs.create(thread.thread_id, LG_BLOCK, { input: {} });
const joined = [];
for await (const chunk of client.threads.joinStream(thread.thread_id, { streamMode: "run_modes" })) {
  joined.push(chunk);
  if (joined.length === 1) {
    assert.equal(chunk.event, "metadata");
    assert.equal(chunk.data.run_id, busy.run_id, "the stream begins with the run in progress");
    await client.runs.cancel(thread.thread_id, busy.run_id);
  }
}
report.joined = [...new Set(joined.map((c) => c.event))];
assert.deepEqual(report.joined, ["metadata", "values", "error"]);
step("joinStream");

console.log(JSON.stringify(report));
