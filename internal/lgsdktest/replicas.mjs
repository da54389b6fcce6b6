// The LangGraph Platform SDK across replicas (internal/lgsdktest): two
// clients of the official JS SDK, one per `coorflow serve` replica on one
// PostgreSQL database. Runs one replica (A) takes are read, joined,
// cancelled and preempted through the other (B); then a run streamed from
// A, whose replica is killed mid-way, is followed to its end on B with
// joinStream and Last-Event-ID. Run by a Go test with LG_A, LG_B, LG_KEY,
// LG_CHAIN (three model calls in a row) and LG_STUCK (a model that never
// answers). The scenario prints {"kill": true} when A is to be killed and
// goes on once the test writes a line to its stdin; its report is the last
// line of its stdout.
//
//   LG_A=... LG_B=... node replicas.mjs NODE_MODULES
import assert from "node:assert/strict";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const { Client } = await import(pathToFileURL(join(process.argv[2], "@langchain/langgraph-sdk/dist/index.js")).href);

const { LG_A, LG_B, LG_KEY, LG_CHAIN, LG_STUCK } = process.env;
const a = new Client({ apiUrl: LG_A, apiKey: LG_KEY, callerOptions: { maxRetries: 0 } });
const b = new Client({ apiUrl: LG_B, apiKey: LG_KEY, callerOptions: { maxRetries: 0 } });
const report = { steps: [] };
const step = (name) => report.steps.push(name);
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

async function httpStatus(fn) {
  try {
    await fn();
  } catch (e) {
    return { status: e.status, message: String(e.message) };
  }
  assert.fail("the call succeeded; an HTTP error was expected");
}

// collect reads a stream to its end; the metadata event is left out.
async function collect(stream) {
  const chunks = [];
  for await (const chunk of stream) {
    if (chunk.event !== "metadata") chunks.push({ id: chunk.id, event: chunk.event, data: chunk.data });
  }
  return chunks;
}

// A run A takes is read, streamed, joined and listed through B.
const th = await a.threads.create();
const run = await a.runs.create(th.thread_id, LG_CHAIN, { input: { topic: "across" }, metadata: { from: "a" } });
const seen = await b.runs.get(th.thread_id, run.run_id);
assert.equal(seen.assistant_id, LG_CHAIN);
assert.deepEqual(seen.metadata, { from: "a" });
const streamed = await collect(b.runs.joinStream(th.thread_id, run.run_id, { streamMode: ["values"] }));
assert.equal(streamed.filter((c) => c.event === "values").at(-1).data.c, "fine", "B streams the run to its end");
const joined = await b.runs.join(th.thread_id, run.run_id);
assert.equal(joined.c, "fine");
const listed = await b.runs.list(th.thread_id);
assert.deepEqual(listed.map((r) => [r.run_id, r.status]), [[run.run_id, "success"]]);
step("across");

// A run A takes is cancelled through B.
const idle = await a.threads.create();
const stuck = await a.runs.create(idle.thread_id, LG_STUCK, { input: { topic: "never" } });
assert.equal(stuck.status, "running");
await b.runs.cancel(idle.thread_id, stuck.run_id, true);
assert.equal((await a.runs.get(idle.thread_id, stuck.run_id)).status, "interrupted");
step("cancel");

// B's multitask strategies see the run A runs.
const busy = await a.threads.create();
const input = { topic: "busy" };
const r1 = await a.runs.create(busy.thread_id, LG_STUCK, { input });
const rejected = await httpStatus(() => b.runs.create(busy.thread_id, LG_STUCK, { input, multitaskStrategy: "reject" }));
assert.equal(rejected.status, 409);
assert.match(rejected.message, /already has run/);
const r2 = await b.runs.create(busy.thread_id, LG_STUCK, { input, multitaskStrategy: "interrupt" });
assert.equal(r2.status, "running");
assert.equal((await b.runs.get(busy.thread_id, r1.run_id)).status, "interrupted", "B's interrupt cancelled A's run");
const r3 = await a.runs.create(busy.thread_id, LG_STUCK, { input, multitaskStrategy: "rollback" });
const gone = await httpStatus(() => a.runs.get(busy.thread_id, r2.run_id));
assert.equal(gone.status, 404, "A's rollback deleted the run B ran");
await b.runs.cancel(busy.thread_id, r3.run_id, true);
report.multitask = (await b.runs.list(busy.thread_id)).map((r) => r.status);
step("multitask");

// A run streamed from A, which is killed once the run's first node has
// ended: B takes the run over and the stream goes on from B.
const victim = await a.threads.create();
const modes = { streamMode: ["values", "updates"] };
const before = [];
let runId;
let asked = false;
try {
  for await (const chunk of a.runs.stream(victim.thread_id, LG_CHAIN, { input: { topic: "victim" }, ...modes })) {
    if (chunk.event === "metadata") {
      runId = chunk.data.run_id;
      continue;
    }
    before.push({ id: chunk.id, event: chunk.event, data: chunk.data });
    if (!asked && chunk.event === "updates" && chunk.data.one) {
      asked = true;
      console.log(JSON.stringify({ kill: true }));
      await lines.next(); // A is dead
    }
  }
} catch (e) {
  report.streamError = String(e.message ?? e);
}
assert.ok(asked, "the run's first node ended on A");
const lastEventId = before.at(-1).id;
const after = await collect(b.runs.joinStream(victim.thread_id, runId, { lastEventId, ...modes }));
assert.ok(after.length > 0 && after.every((c) => Number(c.id) > Number(lastEventId)), "B's stream starts after Last-Event-ID");
const whole = await collect(b.runs.joinStream(victim.thread_id, runId, modes));
assert.deepEqual([...before, ...after], whole, "A's events up to the kill and B's after it are the run's, each once");
assert.equal(whole.filter((c) => c.event === "values").at(-1).data.c, "fine");
assert.equal((await b.runs.get(victim.thread_id, runId)).status, "success");
report.victim = { threadId: victim.thread_id, runId, before: before.length, after: after.length, lastEventId };
step("takeover");

console.log(JSON.stringify(report));
process.exit(0);
