// Assistants as configured versions of a graph (issue #28) with the
// official JS SDK of the version in NODE_MODULES. Run by the server's Go
// tests with LG_URLS (one server, or replicas: each call goes to the next
// in turn), LG_KEY and LG_OTHER_KEY (two owners) and LG_GRAPH (a graph
// whose node writes the run's config, as JSON, to "text"). Each check is
// a node:assert; the report on stdout (one JSON line) lets the Go test
// check it again.
//
//   LG_URLS=... node assistants.mjs NODE_MODULES
import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const { Client } = await import(pathToFileURL(join(process.argv[2], "@langchain/langgraph-sdk/dist/index.js")).href);

const { LG_URLS, LG_KEY, LG_OTHER_KEY, LG_GRAPH } = process.env;
const mine = LG_URLS.split(",").map((url) => new Client({ apiUrl: url, apiKey: LG_KEY, callerOptions: { maxRetries: 0 } }));
const theirs = new Client({ apiUrl: LG_URLS.split(",").at(-1), apiKey: LG_OTHER_KEY, callerOptions: { maxRetries: 0 } });
let turn = 0;
const client = () => mine[turn++ % mine.length];
const report = { steps: [] };
const step = (name) => report.steps.push(name);
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

async function status(promise) {
  try {
    await promise;
    return 200;
  } catch (err) {
    return err.status;
  }
}

// What the graph's node saw as the run's config.
async function seen(assistantId, config) {
  const thread = await client().threads.create();
  const out = await client().runs.wait(thread.thread_id, assistantId, { input: { text: "x" }, config });
  return JSON.parse(out.text);
}

// create: version 1 of a graph, with config, context, metadata, name.
const created = await client().assistants.create({
  graphId: LG_GRAPH,
  config: { configurable: { model: "small", prompt: "be brief" } },
  context: { tone: "dry" },
  metadata: { team: "a" },
  name: "Small",
  description: "the first",
});
const id = created.assistant_id;
assert.match(id, uuid);
assert.equal(created.graph_id, LG_GRAPH);
assert.equal(created.version, 1);
assert.equal(created.name, "Small");
assert.equal(created.description, "the first");
assert.deepEqual(created.config, { configurable: { model: "small", prompt: "be brief" } });
assert.deepEqual(created.context, { tone: "dry" });
assert.deepEqual(created.metadata, { team: "a" });
assert.ok(created.created_at && created.updated_at);
assert.deepEqual(await client().assistants.get(id), created);
step("create");

// update: version 2 from the latest, metadata merged, the rest kept.
const updated = await client().assistants.update(id, { config: { configurable: { model: "large", prompt: "be thorough" } }, metadata: { stage: "prod" } });
assert.equal(updated.version, 2);
assert.deepEqual(updated.config.configurable, { model: "large", prompt: "be thorough" });
assert.deepEqual(updated.context, { tone: "dry" });
assert.deepEqual(updated.metadata, { team: "a", stage: "prod" });
assert.equal(updated.name, "Small");
assert.equal(updated.created_at, created.created_at);
step("update");

// versions: newest first, filtered by metadata.
const versions = await client().assistants.getVersions(id);
report.versions = versions.map((v) => v.version);
assert.deepEqual(report.versions, [2, 1]);
assert.deepEqual(versions[1].config.configurable, { model: "small", prompt: "be brief" });
assert.deepEqual((await client().assistants.getVersions(id, { metadata: { stage: "prod" } })).map((v) => v.version), [2]);
step("versions");

// A run on the assistant: its latest config under the run's own.
report.latestRun = await seen(id, { configurable: { prompt: "mine" } });
assert.deepEqual(report.latestRun, { model: "large", prompt: "mine", tone: "dry" });
// Its thread is the assistant's, as LangGraph's server records it.
const bound = await client().threads.search({ metadata: { assistant_id: id } });
assert.equal(bound.length, 1);
assert.equal(bound[0].metadata.graph_id, LG_GRAPH);
step("run");

// setLatest: version 1 again, and runs use it.
const back = await client().assistants.setLatest(id, 1);
assert.equal(back.version, 1);
assert.deepEqual(back.config.configurable, { model: "small", prompt: "be brief" });
assert.deepEqual(back.metadata, { team: "a" });
assert.equal((await client().assistants.get(id)).version, 1);
report.firstRun = await seen(id);
assert.deepEqual(report.firstRun, { model: "small", prompt: "be brief", tone: "dry" });
assert.equal(await status(client().assistants.setLatest(id, 9)), 404);
step("latest");

// search and count, with filters; the graph's own assistant is listed too.
const other = await client().assistants.create({ graphId: LG_GRAPH, name: "Other", metadata: { team: "b" } });
const ids = async (q) => (await client().assistants.search(q)).map((a) => a.assistant_id);
assert.deepEqual(await ids({ graphId: LG_GRAPH, metadata: { team: "a" } }), [id]);
assert.deepEqual(await ids({ name: "other" }), [other.assistant_id]);
assert.deepEqual(await ids({ graphId: LG_GRAPH, sortBy: "name", sortOrder: "asc" }), [other.assistant_id, id, LG_GRAPH]);
const paged = await client().assistants.search({ graphId: LG_GRAPH, limit: 1, sortBy: "created_at", sortOrder: "desc", includePagination: true });
assert.deepEqual(paged.assistants.map((a) => a.assistant_id), [other.assistant_id]);
assert.equal(paged.next, "1");
const selected = await client().assistants.search({ metadata: { team: "b" }, select: ["assistant_id", "name"] });
assert.deepEqual(selected, [{ assistant_id: other.assistant_id, name: "Other" }]);
report.counted = await client().assistants.count({ graphId: LG_GRAPH });
assert.equal(report.counted, 3);
assert.equal(await client().assistants.count({ metadata: { team: "a" } }), 1);
step("search");

// A created assistant's graph and schemas are its graph's.
const drawn = await client().assistants.getGraph(id);
assert.ok(drawn.nodes.some((n) => n.id === "read"));
assert.equal((await client().assistants.getSchemas(id)).graph_id, LG_GRAPH);
assert.deepEqual(await client().assistants.getSubgraphs(id), {});
step("graph");

// Another owner sees none of it.
report.otherOwner = [
  await status(theirs.assistants.get(id)),
  await status(theirs.assistants.update(id, { name: "mine now" })),
  await status(theirs.assistants.getVersions(id)),
  await status(theirs.assistants.setLatest(id, 2)),
  await status(theirs.assistants.delete(id)),
];
assert.deepEqual(report.otherOwner, [404, 404, 404, 404, 404]);
assert.ok(!(await theirs.assistants.search({ graphId: LG_GRAPH })).some((a) => a.assistant_id === id));
const theirThread = await theirs.threads.create();
assert.equal(await status(theirs.runs.wait(theirThread.thread_id, id, { input: { text: "x" } })), 404);
step("owners");

// A chosen id; if_exists raise or do_nothing.
const chosen = "6f2c1a4e-0b7d-4c39-9e51-2d8f3a6b7c10";
await client().assistants.create({ graphId: LG_GRAPH, assistantId: chosen, name: "Chosen" });
assert.equal(await status(client().assistants.create({ graphId: LG_GRAPH, assistantId: chosen })), 409);
assert.equal((await client().assistants.create({ graphId: LG_GRAPH, assistantId: chosen, ifExists: "do_nothing", name: "ignored" })).name, "Chosen");
step("if_exists");

// delete: gone, with its versions.
await client().assistants.delete(id);
report.afterDelete = [await status(client().assistants.get(id)), await status(client().assistants.getVersions(id))];
assert.deepEqual(report.afterDelete, [404, 404]);
step("delete");

console.log(JSON.stringify(report));
