// coorflow run viewer: a timeline of a recorded run's steps and agents,
// and, for the agent selected, what each of its model calls saw, the tools
// it called and what it answered. Live while the run goes on.
//
// The token: opened as /viewer/#token=T, the page keeps T in sessionStorage
// (this tab only), removes it from the address, and sends it as
// "Authorization: Bearer T" with every API call. The fragment never leaves
// the browser; a token in the query (?token=T) would reach the server's and
// proxies' logs, so the page never uses one, and drops it from the address.
"use strict";

const TOKEN_KEY = "coorflow.token";
// Event kinds the timeline is built from; other kinds do not change it.
const VIEW_KINDS = new Set(["run_start", "step_start", "node_start", "node_end", "agent_created", "agent_start",
  "agent_end", "model_call", "snapshot", "tool_call", "tool_result", "warning"]);

const state = {
  runID: "",
  timeline: null,
  agentID: 0,
  live: null,       // AbortController of the event stream
  wantSeq: 0,       // the newest timeline event announced by the stream
  refreshTimer: 0,
  refreshing: null, // the reload under way
  again: false,     // reload once more after it
  pollTimer: 0,
};

const $ = (sel) => document.querySelector(sel);

// el builds an element; text and children never go through innerHTML.
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("data-")) e.setAttribute(k, String(v));
    else if (k === "onclick") e.addEventListener("click", v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function show(id, on) { $(id).hidden = !on; }

function fail(msg) {
  const p = $("#error");
  p.textContent = msg;
  p.hidden = false;
  document.body.dataset.state = "error";
}

// ---- token ----

// takeToken moves a token from the address's fragment to sessionStorage and
// returns the tab's token. It reports whether the query held one, unused.
function takeToken() {
  const url = new URL(location.href);
  const hash = new URLSearchParams(url.hash.slice(1));
  const tok = hash.get("token");
  const inQuery = url.searchParams.has("token");
  if (tok || inQuery) {
    if (tok) sessionStorage.setItem(TOKEN_KEY, tok);
    hash.delete("token");
    url.searchParams.delete("token");
    url.hash = hash.toString();
    history.replaceState(null, "", url.pathname + url.search + (url.hash.length > 1 ? url.hash : ""));
  }
  return { token: sessionStorage.getItem(TOKEN_KEY) || "", inQuery };
}

function askToken() {
  show("#login", true);
  show("#runs", false);
  show("#run", false);
  document.body.dataset.state = "login";
  $("#token-form").onsubmit = (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("#token-input").value.trim());
    show("#login", false);
    start();
  };
}

class Unauthorized extends Error {}

async function api(path) {
  const resp = await fetch(path, { headers: { Authorization: "Bearer " + sessionStorage.getItem(TOKEN_KEY) } });
  const body = await resp.json().catch(() => null);
  if (resp.status === 401) throw new Unauthorized("the token was refused");
  if (!resp.ok) throw new Error((body && body.error && body.error.message) || resp.status + " " + resp.statusText);
  return body;
}

// ---- formatting ----

function fmtTime(s) { return s ? new Date(s).toLocaleString() : ""; }
function fmtMS(ms) { return ms >= 1000 ? (ms / 1000).toFixed(1) + " s" : Math.round(ms) + " ms"; }
function fmtInt(n) { return (n || 0).toLocaleString("en-US"); }
function statusPill(s) { return el("span", { class: "status status-" + s, "data-status": s }, s); }

function pre(text, cls) {
  return el("pre", { class: cls || "text" }, text || "");
}

function block(title, ...content) {
  return el("section", { class: "block" }, el("h3", {}, title), ...content);
}

// ---- runs list ----

async function showRuns() {
  show("#runs", true);
  $("#run-title").textContent = "";
  const { runs } = await api("/v1/trace/runs?limit=200");
  const body = $("#runs-table tbody");
  body.replaceChildren(...runs.map((r) => el("tr", { "data-run": r.run_id },
    el("td", {}, el("a", { href: "?run=" + encodeURIComponent(r.run_id) }, r.run_id)),
    el("td", {}, r.workflow || r.graph || ""),
    el("td", {}, r.thread_id || ""),
    el("td", {}, statusPill(r.status)),
    el("td", {}, fmtTime(r.started_at)),
    el("td", { class: "num" }, fmtInt(r.events)))));
  show("#runs-empty", runs.length === 0);
  document.body.dataset.state = "ready";
}

// ---- one run ----

async function showRun(id) {
  state.runID = id;
  show("#run", true);
  await refresh();
  const agent = Number(new URLSearchParams(location.search).get("agent"));
  if (agent) await selectAgent(agent);
  if (state.timeline.run.status === "running") startLive();
  document.body.dataset.state = "ready";
}

// refresh reloads the timeline (and the agent shown); while the store is
// behind what the stream announced, it tries again shortly. Calls made
// while one is under way run once after it.
function refresh() {
  if (state.refreshing) {
    state.again = true;
    return state.refreshing;
  }
  clearTimeout(state.refreshTimer);
  state.refreshTimer = 0;
  state.refreshing = reload().finally(() => {
    state.refreshing = null;
    if (state.again) {
      state.again = false;
      scheduleRefresh(0);
    }
  });
  return state.refreshing;
}

async function reload() {
  const tl = await api("/v1/trace/runs/" + encodeURIComponent(state.runID) + "/timeline");
  state.timeline = tl;
  renderHeader(tl.run);
  renderTimeline(tl);
  if (state.agentID) await loadAgent(state.agentID);
  if (state.live && tl.last_seq < state.wantSeq) scheduleRefresh(300);
  if (tl.run.status !== "running") stopLive();
}

function scheduleRefresh(ms) {
  if (state.refreshTimer) return;
  state.refreshTimer = setTimeout(() => { state.refreshTimer = 0; refresh().catch(report); }, ms);
}

function renderHeader(run) {
  $("#run-title").textContent = (run.workflow || run.graph || "run") + " · " + run.run_id;
  const st = $("#run-status");
  st.textContent = run.status;
  st.className = "status status-" + run.status;
  st.dataset.status = run.status;
  st.hidden = false;
  document.title = "coorflow · " + (run.workflow || run.graph) + " · " + run.status;
}

function renderTimeline(tl) {
  const nav = $("#timeline");
  const meta = el("div", { class: "run-meta" },
    el("div", {}, "Thread ", el("code", {}, tl.run.thread_id || "—")),
    el("div", {}, "Started ", fmtTime(tl.run.started_at)),
    tl.run.ended_at ? el("div", {}, "Ended ", fmtTime(tl.run.ended_at)) : null,
    tl.usage ? el("div", { class: "run-usage" }, "Usage ", fmtUsage(tl.usage)) : null,
    tl.run.error ? el("div", { class: "error-text" }, tl.run.error) : null);
  const steps = tl.steps.map((s) => el("section", { class: "step", "data-step": s.step },
    el("h2", {}, "Step " + s.step),
    s.nodes.map((n) => el("div", { class: "node status-" + n.status, "data-node": n.node },
      el("div", { class: "node-head" },
        el("span", { class: "node-name" }, n.node),
        n.duration_ms ? el("span", { class: "dim" }, fmtMS(n.duration_ms)) : null,
        n.attempt > 1 ? el("span", { class: "dim" }, "attempt " + n.attempt) : null,
        n.usage && n.usage.calls ? el("span", { class: "dim node-cost" }, fmtCost(n.usage)) : null,
        statusPill(n.status)),
      n.error ? el("div", { class: "error-text" }, n.error) : null,
      n.created && n.created.length ? el("div", { class: "dim" }, "built: " + n.created.join(", ")) : null,
      n.agents.map(agentButton)))));
  nav.replaceChildren(meta, ...steps);
  if (tl.steps.length === 0) nav.append(el("p", { class: "hint" }, "No step recorded yet."));
}

function agentButton(a) {
  return el("button", {
    type: "button", class: "agent" + (a.id === state.agentID ? " selected" : ""), "data-agent-id": a.id,
    "data-name": a.name, "data-status": a.status, title: a.path,
    onclick: () => selectAgent(a.id).catch(report),
  },
  el("span", { class: "agent-name" }, a.name),
  statusPill(a.status),
  el("span", { class: "agent-meta" },
    `${a.model_calls} calls · ${a.tool_calls} tools · ${fmtInt(a.prompt_tokens)}→${fmtInt(a.completion_tokens)} tokens` +
    (a.usage && a.usage.calls ? " · " + fmtCost(a.usage) : "")),
  a.summary ? el("span", { class: "agent-summary" }, a.summary) : null);
}

async function selectAgent(id) {
  state.agentID = id;
  const url = new URL(location.href);
  url.searchParams.set("agent", String(id));
  history.replaceState(null, "", url.pathname + url.search);
  for (const b of document.querySelectorAll("button.agent")) b.classList.toggle("selected", Number(b.dataset.agentId) === id);
  await loadAgent(id);
}

async function loadAgent(id) {
  const d = await api("/v1/trace/runs/" + encodeURIComponent(state.runID) + "/agents/" + id);
  if (state.agentID === id) renderAgent(d);
}

// ---- one agent ----

function renderAgent(d) {
  const live = $("#live-tokens");
  const keepLive = live && live.dataset.path === d.path && d.status === "running" ? live.textContent : "";
  const head = el("header", { class: "agent-head", "data-agent-id": d.id },
    el("h2", {}, d.name, " ", statusPill(d.status)),
    el("div", { class: "dim" }, el("code", {}, d.path)),
    el("div", { class: "facts" },
      d.run ? el("span", {}, "run " + d.run) : null,
      d.role ? el("span", {}, "role " + d.role) : null,
      d.tier ? el("span", {}, "tier " + d.tier) : null,
      d.tools && d.tools.length ? el("span", {}, "tools: " + d.tools.join(", ")) : null,
      el("span", {}, `${fmtInt(d.prompt_tokens)} tokens in, ${fmtInt(d.completion_tokens)} out`),
      d.usage && d.usage.calls ? el("span", { class: "agent-usage" }, fmtUsage(d.usage)) : null));
  const parts = [head];
  if (d.task) parts.push(block("Task", pre(d.task, "text task")));
  parts.push(block("What it saw", d.snapshots.length
    ? d.snapshots.map((s, i) => snapshotView(s, i, d.snapshots.length))
    : el("p", { class: "hint" }, "No context snapshot was recorded for this agent.")));
  parts.push(block("Tool calls", d.tool_calls.length ? toolTable(d.tool_calls) : el("p", { class: "hint" }, "No tool call.")));
  parts.push(block("Model calls", d.model_calls.length ? d.model_calls.map(modelCallView) : el("p", { class: "hint" }, "No model call.")));
  if (d.status === "running") {
    parts.push(block("Streaming now", el("pre", { id: "live-tokens", class: "text", "data-path": d.path }, keepLive)));
  }
  if (d.reasoning) parts.push(block("Reasoning", pre(d.reasoning, "text reasoning")));
  if (d.output) parts.push(block("Output", pre(d.output, "text output")));
  if (d.error) parts.push(block("Error", pre(d.error, "text error-text")));
  if (d.warnings && d.warnings.length) parts.push(block("Warnings", el("ul", {}, d.warnings.map((w) => el("li", {}, w)))));
  $("#detail").replaceChildren(...parts);
}

function snapshotView(entry, i, n) {
  const s = entry.snapshot || {};
  const budget = s.limit ? `${fmtInt(s.total_tokens)} of ${fmtInt(s.limit)} tokens` : `${fmtInt(s.total_tokens)} tokens`;
  const rows = (s.parts || []).map((p) => {
    const fate = p.omitted ? "omitted" : p.truncated ? "truncated" : p.included ? "included" : "—";
    return el("tr", { class: "part part-" + fate, "data-part": p.name },
      el("td", { class: "part-name" }, p.name),
      el("td", {}, p.kind),
      el("td", {}, p.priority || ""),
      el("td", { class: "num tokens" }, fmtInt(p.tokens)),
      el("td", { class: "num full-tokens" }, fmtInt(p.full_tokens)),
      el("td", { class: "fate" }, fate, p.required ? " (required)" : ""),
      el("td", { class: "reason" }, p.reason || ""));
  });
  const policies = (s.policies || []).map((a) => el("li", {}, el("b", {}, a.policy), a.part ? " · " + a.part : "", " — ", a.detail,
    ` (${fmtInt(a.tokens_before)} → ${fmtInt(a.tokens_after)} tokens)`));
  return el("div", { class: "snapshot", "data-seq": entry.seq },
    el("h4", {}, `Call ${i + 1} of ${n}: ${budget}, ${s.messages || 0} messages`, s.forced ? " · rebuilt after an overflow" : ""),
    el("table", { class: "snapshot" },
      el("thead", {}, el("tr", {}, ["Part", "Kind", "Priority", "Tokens", "As given", "Fate", "Why"].map((h) => el("th", {}, h)))),
      el("tbody", {}, rows)),
    policies.length ? el("ul", { class: "policies" }, policies) : null);
}

function toolTable(calls) {
  return el("table", { class: "tools" },
    el("thead", {}, el("tr", {}, ["Tool", "Arguments", "Status", "Output", "Took"].map((h) => el("th", {}, h)))),
    el("tbody", {}, calls.map((c) => el("tr", { class: "tool-call", "data-tool": c.name, "data-call": c.id },
      el("td", { class: "tool-name" }, c.name),
      el("td", {}, pre(c.args ? JSON.stringify(c.args) : "", "code")),
      el("td", {}, c.status ? statusPill(c.status) : statusPill("running")),
      el("td", { class: "tool-output" }, pre(c.output, "text")),
      el("td", { class: "num" }, c.duration_ms ? fmtMS(c.duration_ms) : "")))));
}

function modelCallView(c, i) {
  return el("details", { class: "model-call", "data-seq": c.seq, open: i === 0 ? false : false },
    el("summary", {}, `#${i + 1} ${c.model || ""} ${c.tier ? "(" + c.tier + ")" : ""} · ${fmtInt(c.prompt_tokens)}→${fmtInt(c.completion_tokens)} tokens` +
      (c.cached_tokens ? ` (${fmtInt(c.cached_tokens)} cached)` : "") + (c.reasoning_tokens ? ` (${fmtInt(c.reasoning_tokens)} reasoning)` : "") +
      (c.estimated ? " (estimated)" : "") + ` · ${c.cost_usd === undefined ? "cost unknown" : fmtUSD(c.cost_usd)} · ${fmtMS(c.duration_ms)}`,
      c.replayed ? " · from the journal" : "", c.error ? " · failed" : ""),
    el("div", { class: "dim" }, "request hash ", el("code", {}, c.hash || "—")),
    c.error ? pre(c.error, "text error-text") : null,
    c.reasoning ? el("div", {}, el("h5", {}, "Reasoning"), pre(c.reasoning)) : null,
    c.content ? el("div", {}, el("h5", {}, "Answer"), pre(c.content)) : null,
    c.tool_calls && c.tool_calls.length ? el("div", {}, el("h5", {}, "Asked for"),
      el("ul", {}, c.tool_calls.map((t) => el("li", {}, el("code", {}, t.name), " ", t.arguments)))) : null);
}

// ---- live ----

// startLive follows the run's events over the server's SSE stream, read
// with fetch so that the token goes in a header. Without a stream (the run
// is not in this server's memory) it polls.
async function startLive() {
  if (state.live) return;
  const run = state.timeline.run;
  const ctl = new AbortController();
  state.live = ctl;
  show("#live", true);
  const url = "/v1/threads/" + encodeURIComponent(run.thread_id) + "/runs/" + encodeURIComponent(run.run_id) +
    "/stream?after=" + state.timeline.last_seq;
  let resp;
  try {
    resp = run.thread_id ? await fetch(url, { headers: { Authorization: "Bearer " + sessionStorage.getItem(TOKEN_KEY) }, signal: ctl.signal }) : null;
  } catch (e) {
    resp = null;
  }
  if (!resp || !resp.ok || !resp.body) {
    poll();
    return;
  }
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let at;
      while ((at = buf.indexOf("\n\n")) >= 0) {
        onFrame(buf.slice(0, at));
        buf = buf.slice(at + 2);
      }
    }
  } catch (e) {
    if (ctl.signal.aborted) return;
  }
  if (state.live === ctl) {
    state.live = null;
    show("#live", false);
    refresh().catch(report);
  }
}

function onFrame(frame) {
  let name = "message", data = "", id = 0;
  for (const line of frame.split("\n")) {
    if (line.startsWith("event: ")) name = line.slice(7);
    else if (line.startsWith("data: ")) data += line.slice(6);
    else if (line.startsWith("id: ")) id = Number(line.slice(4));
  }
  if (name === "token") {
    const ev = JSON.parse(data);
    const live = $("#live-tokens");
    if (live && (ev.path === live.dataset.path || ev.path.startsWith(live.dataset.path + "/"))) live.textContent += ev.data;
    return;
  }
  if (name === "end" || name === "truncated") {
    scheduleRefresh(0);
    return;
  }
  if (!data) return;
  if (VIEW_KINDS.has(name)) state.wantSeq = Math.max(state.wantSeq, id);
  scheduleRefresh(200);
}

function poll() {
  clearTimeout(state.pollTimer);
  state.pollTimer = setTimeout(async () => {
    try {
      await refresh();
    } catch (e) {
      report(e);
      return;
    }
    if (state.timeline.run.status === "running") poll();
    else stopLive();
  }, 2000);
}

function stopLive() {
  if (state.live) state.live.abort();
  state.live = null;
  clearTimeout(state.pollTimer);
  show("#live", false);
}

// ---- start ----

function report(e) {
  if (e instanceof Unauthorized) {
    sessionStorage.removeItem(TOKEN_KEY);
    stopLive();
    askToken();
    fail("The token was refused: enter another one.");
    return;
  }
  fail(String(e.message || e));
}

async function start() {
  show("#error", false);
  const { token, inQuery } = takeToken();
  if (!token) {
    askToken();
    if (inQuery) fail("A token in the address's query (?token=) is not used: it would end up in logs. Open the viewer as /viewer/#token=… or enter the token here.");
    return;
  }
  show("#logout", true);
  $("#logout").onclick = () => {
    sessionStorage.removeItem(TOKEN_KEY);
    location.reload();
  };
  const run = new URLSearchParams(location.search).get("run");
  try {
    if (run) await showRun(run);
    else await showRuns();
  } catch (e) {
    report(e);
  }
}

start();

// ---- usage and cost ----

function fmtUSD(v) {
  return "$" + v.toFixed(4);
}

// fmtCost is the cost of a usage: unknown when a call had no price.
function fmtCost(u) {
  if (u.unpriced_calls === u.calls) return "cost unknown";
  return fmtUSD(u.cost_usd) + (u.unpriced_calls ? " + unknown" : "");
}

// fmtUsage says a usage (llm.Spend) in one line.
function fmtUsage(u) {
  if (!u.calls) return "no model calls";
  let s = `${fmtInt(u.calls)} calls · ${fmtInt(u.prompt_tokens)} tokens in`;
  if (u.cached_tokens) s += ` (${fmtInt(u.cached_tokens)} cached)`;
  s += `, ${fmtInt(u.completion_tokens)} out`;
  if (u.reasoning_tokens) s += ` (${fmtInt(u.reasoning_tokens)} reasoning)`;
  if (u.estimated_calls) s += ` · ${fmtInt(u.estimated_calls)} estimated`;
  s += " · " + fmtCost(u);
  if (u.unpriced_models && u.unpriced_models.length) s += ` (no price for ${u.unpriced_models.join(", ")})`;
  return s;
}
