// The A2A client scenario (internal/a2atest): the official JS SDK,
// @a2a-js/sdk, as a client of coorflow's A2A server. Run by a Go test
// with A2A_URL (the server), A2A_KEY and A2A_OTHER_KEY (two owners'
// tokens), and the workflows A2A_ECHO (answers at once), A2A_ASK (asks a
// question first) and A2A_BLOCK (runs until cancelled). It sends, streams,
// gets, lists, cancels and answers an input-required task; the report on
// stdout (one JSON line) is what the SDK got, for the Go test to check.
//
//   A2A_URL=... node client.mjs NODE_MODULES
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { randomUUID } from "node:crypto";

const sdk = (p) => import(pathToFileURL(join(process.argv[2], "@a2a-js/sdk/dist", p)).href);
const { Role, TaskState } = await sdk("index.js");
const { ClientFactory, JsonRpcTransportFactory, RestTransportFactory, DefaultAgentCardResolver } = await sdk("client/index.js");

// A2A_BINDING picks the protocol binding: JSONRPC (default) or HTTP+JSON.
const { A2A_URL, A2A_KEY, A2A_OTHER_KEY, A2A_ECHO, A2A_ASK, A2A_BLOCK, A2A_BINDING = "JSONRPC" } = process.env;

function client(key, workflow) {
  const fetchImpl = (url, init = {}) => {
    const headers = new Headers(init.headers);
    headers.set("Authorization", "Bearer " + key);
    return fetch(url, { ...init, headers });
  };
  const transport = A2A_BINDING === "HTTP+JSON" ? new RestTransportFactory({ fetchImpl }) : new JsonRpcTransportFactory({ fetchImpl });
  const factory = new ClientFactory({
    transports: [transport],
    preferredTransports: [A2A_BINDING],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  });
  return factory.createFromUrl(`${A2A_URL}/a2a/${workflow}/`);
}

const text = (value) => ({ content: { $case: "text", value } });
const data = (value) => ({ content: { $case: "data", value } });
const message = (parts, extra = {}) => ({ message: { messageId: randomUUID(), role: Role.ROLE_USER, parts, ...extra } });
const state = (t) => TaskState[t.status.state];
const partText = (p) => (p.content?.$case === "text" ? p.content.value : JSON.stringify(p.content?.value));
const artifactText = (t) => (t.artifacts ?? []).flatMap((a) => a.parts.map(partText)).join("\n");
async function failure(fn) {
  try {
    await fn();
  } catch (e) {
    return { name: e.name, message: String(e.message) };
  }
  return { name: "none" };
}

const report = {};
const card = await (await fetch(`${A2A_URL}/.well-known/agent-card.json`)).json();
report.cardSkills = card.skills.map((s) => s.id);

const echo = await client(A2A_KEY, A2A_ECHO);
report.echoCard = { name: echo.agentCard.name, skills: echo.agentCard.skills.map((s) => s.description) };
report.binding = echo.transport.protocolName;

// send
const sent = await echo.sendMessage(message([text("hello")]));
report.send = { kind: "status" in sent ? "task" : "message", state: state(sent), answer: artifactText(sent), contextId: sent.contextId, taskId: sent.id };

// stream, on the same context: a second turn on its thread
report.stream = { events: [] };
for await (const ev of echo.sendMessageStream(message([text("again")], { contextId: sent.contextId }))) {
  const p = ev.payload;
  report.stream.events.push(p.$case);
  if (p.$case === "task") report.stream.taskId = p.value.id;
  if (p.$case === "statusUpdate") report.stream.final = TaskState[p.value.status.state];
  if (p.$case === "artifactUpdate") report.stream.answer = p.value.artifact.parts.map(partText).join("");
  if (p.value.contextId) report.stream.contextId = p.value.contextId;
}

// get, list
const got = await echo.getTask({ id: sent.id });
report.get = { state: state(got), answer: artifactText(got), history: got.history.length };
const listed = await echo.listTasks({ contextId: sent.contextId });
report.list = listed.tasks.map((t) => t.id).sort();
if (process.env.A2A_DEBUG) console.error(JSON.stringify(listed));

// input-required, answered by the next message of the task
const ask = await client(A2A_KEY, A2A_ASK);
const asked = await ask.sendMessage(message([text("draft")]));
report.ask = { state: state(asked), question: asked.status.message?.parts.map(partText).join("\n") ?? "" };
const answered = await ask.sendMessage(message([data({ ok: true })], { taskId: asked.id, contextId: asked.contextId }));
report.answer = { state: state(answered), answer: artifactText(answered), sameTask: answered.id === asked.id };
report.answerAgain = await failure(() => ask.sendMessage(message([data({ ok: true })], { taskId: asked.id })));

// cancel a task in progress
const block = await client(A2A_KEY, A2A_BLOCK);
const started = await block.sendMessage({ ...message([text(JSON.stringify(["go"]))]), configuration: { returnImmediately: true, acceptedOutputModes: [] } });
report.started = state(started);
const canceled = await block.cancelTask({ id: started.id });
report.cancel = { state: state(canceled), afterwards: state(await block.getTask({ id: started.id })) };
report.cancelAgain = await failure(() => block.cancelTask({ id: started.id }));

// what goes wrong
report.unknownTask = await failure(() => echo.getTask({ id: "nope~1" }));
const other = await client(A2A_OTHER_KEY, A2A_ECHO);
report.otherGet = await failure(() => other.getTask({ id: sent.id }));
report.otherCancel = await failure(() => other.cancelTask({ id: asked.id }));
report.otherAnswer = await failure(() => other.sendMessage(message([text("x")], { taskId: asked.id })));
report.otherList = (await other.listTasks({})).tasks.length;

console.log(JSON.stringify(report));
