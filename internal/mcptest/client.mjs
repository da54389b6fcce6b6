// The official TypeScript MCP SDK as a client of coorflow, for the Go
// tests (internal/mcptest.RunClient). It connects over stdio (starting the
// command it is given, as a desktop client does) or streamable HTTP,
// lists the tools, makes the calls of its plan, and prints one JSON
// object: what it saw.
//
//   MCPTEST_PLAN='{"stdio": ["coorflow", "mcp"], "calls": [...]}' node client.mjs NODE_MODULES
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const modules = process.argv[2];
const sdk = (p) => import(pathToFileURL(join(modules, "@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
const { ElicitRequestSchema } = await sdk("types.js");

const plan = JSON.parse(process.env.MCPTEST_PLAN);
const report = { tools: [], results: [], progress: [], elicitations: [], sent: [], responses: [], aborted: [], stderr: "" };

// A call with abort set is aborted when a line arrives on stdin (the test
// says the call is running), and the next calls wait for one more line
// (the test saw the server's side of the cancel).
let lines;
if ((plan.calls ?? []).some((c) => c.abort)) {
  const { createInterface } = await import("node:readline");
  lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
}

const capabilities = plan.elicit ? { elicitation: {} } : {};
const client = new Client({ name: "mcptest-ts-client", version: "1.0.0" }, { capabilities });
if (plan.elicit) {
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    report.elicitations.push(req.params);
    return plan.elicit;
  });
}

let transport;
if (plan.stdio) {
  transport = new StdioClientTransport({ command: plan.stdio[0], args: plan.stdio.slice(1), env: plan.env, stderr: "pipe" });
  transport.stderr?.on("data", (d) => { report.stderr += d.toString(); });
} else {
  transport = new StreamableHTTPClientTransport(new URL(plan.url), {
    requestInit: { headers: { ...plan.headers, Authorization: `Bearer ${plan.token}` } },
  });
}

try {
  await client.connect(transport);
  report.protocolVersion = transport.protocolVersion ?? ""; // negotiated (HTTP)
  // What crosses the transport, below the SDK: the requests and
  // notifications sent, and the id of every response received, even one
  // the SDK would drop as answering no pending request.
  const send = transport.send.bind(transport);
  transport.send = (msg, opts) => {
    report.sent.push({ id: msg.id, method: msg.method, requestId: msg.params?.requestId });
    return send(msg, opts);
  };
  const onmessage = transport.onmessage;
  transport.onmessage = (msg, extra) => {
    if (msg.id !== undefined && (msg.result !== undefined || msg.error !== undefined)) report.responses.push(msg.id);
    onmessage?.(msg, extra);
  };
  report.tools = (await client.listTools()).tools;
  for (const call of plan.calls ?? []) {
    const progress = [];
    if (call.abort) {
      const ctl = new AbortController();
      const pending = client.callTool({ name: call.name, arguments: call.arguments }, undefined, { timeout: 300000, signal: ctl.signal });
      const ended = await Promise.race([lines.next().then(() => false), pending.then((r) => JSON.stringify(r), (e) => String(e))]);
      if (ended) throw new Error(`the call to abort ended before it was aborted: ${ended}`);
      ctl.abort("the user cancelled");
      report.aborted.push(String(await pending.then(() => "answered", (e) => e)));
      await lines.next();
      continue;
    }
    const res = await client.callTool({ name: call.name, arguments: call.arguments }, undefined, {
      timeout: 300000,
      onprogress: (p) => progress.push(p),
    });
    report.results.push(res);
    report.progress.push(progress);
  }
} catch (e) {
  report.error = String(e?.stack ?? e);
} finally {
  // Over HTTP, end the session on the server too (DELETE), as a client
  // that is done should.
  await transport.terminateSession?.().catch(() => {});
  await client.close();
  lines?.return?.();
}
process.stdout.write(JSON.stringify(report) + "\n");
