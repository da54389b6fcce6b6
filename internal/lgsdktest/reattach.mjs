// The LangGraph Platform SDK re-attaching by itself (internal/lgsdktest):
// one client of the official JS SDK, whose apiUrl is a proxy in front of
// two `coorflow serve` replicas on one PostgreSQL database (A while it
// lives, then B). A run is created and streamed (runs.stream) and joined
// (runs.joinStream) through the proxy, both on A, and a stateless run
// (runs.stream without a thread: POST /runs/stream) is streamed on A at
// the same time; A is killed mid-way. The three streams must go on by
// themselves — the SDK re-attaches to the stream's Location with
// Last-Event-ID, which the proxy takes to B — and each must be its run's
// whole stream, every event once. Run by a Go test
// with LG_URL (the proxy), LG_KEY and LG_CHAIN (three model calls in a
// row). The scenario prints {"kill": true} when A is to be killed and goes
// on once the test writes a line to its stdin; its report is the last
// line of its stdout.
//
//   LG_URL=... node reattach.mjs NODE_MODULES
import assert from "node:assert/strict";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const { Client } = await import(pathToFileURL(join(process.argv[2], "@langchain/langgraph-sdk/dist/index.js")).href);

const { LG_URL, LG_KEY, LG_CHAIN } = process.env;
const client = new Client({ apiUrl: LG_URL, apiKey: LG_KEY, callerOptions: { maxRetries: 0 } });
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const report = { steps: [] };
const modes = { streamMode: ["values", "updates"] };

// collect reads a stream to its end; the metadata events (one per
// connection) are left out. first resolves at its first other event.
async function collect(stream, first = () => {}) {
  const chunks = [];
  for await (const chunk of stream) {
    if (chunk.event === "metadata") continue;
    chunks.push({ id: chunk.id, event: chunk.event, data: chunk.data });
    if (chunks.length === 1) first();
  }
  return chunks;
}

// The stateless run keeps its thread (onCompletion "keep"), so that its
// whole stream can be joined once it ended.
let stateless;
let statelessAttached;
const statelessStarted = new Promise((resolve) => (statelessAttached = resolve));
const statelessChunks = collect(
  client.runs.stream(null, LG_CHAIN, { input: { topic: "stateless" }, onCompletion: "keep", onRunCreated: (m) => (stateless = m), ...modes }),
  statelessAttached,
);

const th = await client.threads.create();
let runId;
let joined;
let joinedAttached;
const attached = new Promise((resolve) => (joinedAttached = resolve));
const created = [];
let killed = false;
for await (const chunk of client.runs.stream(th.thread_id, LG_CHAIN, { input: { topic: "reattach" }, ...modes })) {
  if (chunk.event === "metadata") {
    if (runId === undefined) {
      runId = chunk.data.run_id;
      joined = collect(client.runs.joinStream(th.thread_id, runId, modes), joinedAttached);
    }
    continue;
  }
  created.push({ id: chunk.id, event: chunk.event, data: chunk.data });
  if (!killed && chunk.event === "updates" && chunk.data.one) {
    await attached; // the joined stream reads from A too
    await statelessStarted; // and so does the stateless run's
    killed = true;
    console.log(JSON.stringify({ kill: true }));
    await lines.next(); // A is dead
  }
}
assert.ok(killed, "A was killed while the run streamed");
report.steps.push("created");
const joinedChunks = await joined;
report.steps.push("joined");

const whole = await collect(client.runs.joinStream(th.thread_id, runId, modes));
assert.deepEqual(created, whole, "the created stream, re-attached, is the run's whole stream, each event once");
assert.deepEqual(joinedChunks, whole, "the joined stream, re-attached, is the run's whole stream, each event once");
assert.equal(whole.filter((c) => c.event === "values").at(-1).data.c, "fine");
const statelessWhole = await collect(client.runs.joinStream(stateless.thread_id, stateless.run_id, modes));
assert.deepEqual(await statelessChunks, statelessWhole, "the stateless stream, re-attached, is its run's whole stream, each event once");
assert.equal(statelessWhole.filter((c) => c.event === "values").at(-1).data.c, "fine");
report.steps.push("stateless");
report.stateless = { threadId: stateless.thread_id, runId: stateless.run_id, events: statelessWhole.length };
report.threadId = th.thread_id;
report.runId = runId;
report.events = whole.length;
console.log(JSON.stringify(report));
process.exit(0);
