// The OpenAI client scenario (internal/openaitest): the official JS
// client, openai on npm, against coorflow's OpenAI-compatible endpoint.
// Run by a Go test with OAI_URL (the base URL, ending in /openai/v1),
// OAI_KEY, OAI_MODEL (a workflow), OAI_QUESTION (asked twice, at once and
// streamed), and OAI_OTHER and OAI_FOLLOW_UP (the two messages of a
// conversation); OAI_BROKE_KEY, when set, is the token of an owner whose
// budget its first run spends. Each
// step checks what the client got with node:assert; the report on stdout
// (one JSON line) lets the Go test check it again.
//
//   OAI_URL=... node chat.mjs NODE_MODULES
import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const { default: OpenAI } = await import(pathToFileURL(join(process.argv[2], "openai/index.mjs")).href);

const { OAI_URL, OAI_KEY, OAI_BROKE_KEY, OAI_MODEL, OAI_QUESTION, OAI_OTHER, OAI_FOLLOW_UP } = process.env;
const client = new OpenAI({ baseURL: OAI_URL, apiKey: OAI_KEY, maxRetries: 0 });
const report = { steps: [] };
const step = (name) => report.steps.push(name);
const THREAD = "x-coorflow-thread";

// The models are the workflows.
const models = [];
for await (const m of client.models.list()) {
  models.push(m.id);
}
assert.ok(models.includes(OAI_MODEL), `${OAI_MODEL} is listed: ${models}`);
report.models = models;
const one = await client.models.retrieve(OAI_MODEL);
assert.equal(one.id, OAI_MODEL);
step("models");

// Not streamed.
const { data: done, response: doneResp } = await client.chat.completions
  .create({ model: OAI_MODEL, messages: [{ role: "user", content: OAI_QUESTION }] })
  .withResponse();
assert.equal(done.object, "chat.completion");
assert.equal(done.choices.length, 1);
assert.equal(done.choices[0].message.role, "assistant");
assert.equal(done.choices[0].finish_reason, "stop");
report.answer = done.choices[0].message.content;
report.usage = done.usage;
report.answerThread = doneResp.headers.get(THREAD);
step("create");

// Streamed, with the usage at the end.
const { data: stream, response: streamResp } = await client.chat.completions
  .create({ model: OAI_MODEL, messages: [{ role: "user", content: OAI_QUESTION }], stream: true, stream_options: { include_usage: true } })
  .withResponse();
let streamed = "";
let chunks = 0;
let finish = null;
for await (const chunk of stream) {
  assert.equal(chunk.object, "chat.completion.chunk");
  if (chunk.usage) {
    report.streamUsage = chunk.usage;
    continue;
  }
  const delta = chunk.choices[0].delta;
  if (delta.content) {
    streamed += delta.content;
    chunks++;
  }
  finish = chunk.choices[0].finish_reason ?? finish;
}
assert.equal(finish, "stop");
report.streamed = streamed;
report.streamChunks = chunks;
report.streamThread = streamResp.headers.get(THREAD);
step("stream");

// A conversation of two messages, its history resent, as chat UIs do:
// the second one streamed.
const { data: first, response: firstResp } = await client.chat.completions
  .create({ model: OAI_MODEL, messages: [{ role: "user", content: OAI_OTHER }] })
  .withResponse();
const { data: second, response: secondResp } = await client.chat.completions
  .create({
    model: OAI_MODEL,
    stream: true,
    messages: [
      { role: "user", content: OAI_OTHER },
      { role: "assistant", content: first.choices[0].message.content },
      { role: "user", content: OAI_FOLLOW_UP },
    ],
  })
  .withResponse();
report.secondAnswer = "";
for await (const chunk of second) {
  report.secondAnswer += chunk.choices[0]?.delta?.content ?? "";
}
report.firstAnswer = first.choices[0].message.content;
report.conversationThreads = [firstResp.headers.get(THREAD), secondResp.headers.get(THREAD)];
step("second turn");

// Errors come as the client's error classes.
async function failure(fn) {
  try {
    await fn();
  } catch (e) {
    return { class: e.constructor.name, status: e.status, type: e.type ?? null, code: e.code ?? null, param: e.param ?? null, message: String(e.message) };
  }
  assert.fail("the call succeeded; an error was expected");
}
report.errors = {
  unknownModel: await failure(() => client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] })),
  badKey: await failure(() =>
    new OpenAI({ baseURL: OAI_URL, apiKey: "wrong", maxRetries: 0 }).chat.completions.create({ model: OAI_MODEL, messages: [{ role: "user", content: "hi" }] }),
  ),
  twoChoices: await failure(() => client.chat.completions.create({ model: OAI_MODEL, n: 2, messages: [{ role: "user", content: "hi" }] })),
  lastNotUser: await failure(() => client.chat.completions.create({ model: OAI_MODEL, messages: [{ role: "assistant", content: "hi" }] })),
  streamUnknownModel: await failure(async () => {
    const s = await client.chat.completions.create({ model: "nope", stream: true, messages: [{ role: "user", content: "hi" }] });
    for await (const _ of s) {
      // never reached
    }
  }),
};
if (OAI_BROKE_KEY) {
  const broke = new OpenAI({ baseURL: OAI_URL, apiKey: OAI_BROKE_KEY, maxRetries: 0 });
  report.errors.budget = await failure(() => broke.chat.completions.create({ model: OAI_MODEL, messages: [{ role: "user", content: OAI_QUESTION }] }));
}
assert.ok(report.errors.unknownModel.class === "NotFoundError", JSON.stringify(report.errors.unknownModel));
step("errors");

process.stdout.write(JSON.stringify(report) + "\n");
