// An A2A agent built with the official JS SDK's server (@a2a-js/sdk:
// DefaultRequestHandler, JsonRpcTransportHandler, InMemoryTaskStore) on
// node's http module, for coorflow's A2A client to call (internal/a2atest).
// It answers a message with the artifact "echo: <text>", after a working
// status; GET /count says how many messages it was sent. Under /slow/ is
// the same agent without streaming, whose tasks wait for GET /release
// before they end. It prints its base URL on the first line of stdout,
// then a line "message <text>" for each message and "subscribed <task>"
// for each SubscribeToTask.
//
//   node agent.mjs NODE_MODULES
import { createServer } from "node:http";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { randomUUID } from "node:crypto";

const sdk = (p) => import(pathToFileURL(join(process.argv[2], "@a2a-js/sdk/dist", p)).href);
const { AgentCard, TaskState } = await sdk("index.js");
const { DefaultRequestHandler, InMemoryTaskStore, JsonRpcTransportHandler, ServerCallContext, AgentEvent } = await sdk("server/index.js");

let count = 0;
let release;
const released = new Promise((resolve) => (release = resolve));
const executor = (slow) => ({
  async execute(rc, bus) {
    count++;
    const text = rc.userMessage.parts.map((p) => (p.content?.$case === "text" ? p.content.value : JSON.stringify(p.content?.value))).join(" ");
    const ids = { taskId: rc.taskId, contextId: rc.contextId };
    if (!rc.task) {
      bus.publish(AgentEvent.task({ id: rc.taskId, contextId: rc.contextId, status: { state: TaskState.TASK_STATE_SUBMITTED }, history: [rc.userMessage], artifacts: [] }));
    }
    const say = (value) => ({ messageId: randomUUID(), role: 2, parts: [{ content: { $case: "text", value } }], ...ids });
    console.log("message " + text);
    bus.publish(AgentEvent.statusUpdate({ ...ids, status: { state: TaskState.TASK_STATE_WORKING, message: say("thinking about " + text) } }));
    if (slow) await released;
    bus.publish(AgentEvent.artifactUpdate({ ...ids, artifact: { artifactId: "answer", name: "answer", parts: [{ content: { $case: "text", value: "echo: " + text } }] }, lastChunk: true }));
    bus.publish(AgentEvent.statusUpdate({ ...ids, status: { state: TaskState.TASK_STATE_COMPLETED } }));
    bus.finished();
  },
  async cancelTask(taskId, bus) {
    bus.finished();
  },
});

const server = createServer(async (req, res) => {
  const base = `http://127.0.0.1:${server.address().port}`;
  const slow = req.url.startsWith("/slow/");
  const cardJSON = {
    name: slow ? "sdk-slow-echo" : "sdk-echo",
    description: "An echo agent built with the A2A JS SDK.",
    version: "1.0.0",
    supportedInterfaces: [{ url: base + (slow ? "/slow/" : "/"), protocolBinding: "JSONRPC", protocolVersion: "1.0" }],
    capabilities: { streaming: !slow, pushNotifications: false },
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [{ id: "echo", name: "echo", description: "Repeats what it is told, prefixed with echo.", tags: ["echo"] }],
  };
  if (req.method === "GET" && (req.url === "/.well-known/agent-card.json" || req.url === "/slow/.well-known/agent-card.json")) {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify(cardJSON));
    return;
  }
  if (req.method === "GET" && req.url === "/release") {
    release();
    res.end("{}");
    return;
  }
  if (req.method === "GET" && req.url === "/count") {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ count }));
    return;
  }
  let body = "";
  for await (const chunk of req) body += chunk;
  const key = slow ? "slow" : "fast";
  handlers[key] ??= new JsonRpcTransportHandler(new DefaultRequestHandler(AgentCard.fromJSON(cardJSON), new InMemoryTaskStore(), executor(slow)));
  try {
    const rpc = JSON.parse(body);
    if (rpc.method === "SubscribeToTask") console.log("subscribed " + rpc.params?.id);
  } catch {}
  const out = await handlers[key].handle(body, new ServerCallContext({ requestedVersion: req.headers["a2a-version"] }));
  if (out && typeof out[Symbol.asyncIterator] === "function") {
    // A stream's first event, or its error as a JSON-RPC error (as the
    // SDK's express handler answers).
    const id = JSON.parse(body).id ?? null;
    const rpcError = (e) => ({ jsonrpc: "2.0", id, error: JsonRpcTransportHandler.mapToJSONRPCError(e) });
    let first;
    try {
      first = await out.next();
    } catch (e) {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify(rpcError(e)));
      return;
    }
    res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
    try {
      for (let r = first; !r.done; r = await out.next()) res.write(`data: ${JSON.stringify(r.value)}\n\n`);
    } catch (e) {
      res.write(`data: ${JSON.stringify(rpcError(e))}\n\n`);
    }
    res.end();
    return;
  }
  res.writeHead(200, { "Content-Type": "application/json" });
  res.end(JSON.stringify(out));
});
const handlers = {};
server.listen(0, "127.0.0.1", () => console.log(`http://127.0.0.1:${server.address().port}`));
