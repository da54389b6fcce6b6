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
  "agent_end", "model_call", "snapshot", "tool_call", "tool_result", "warning", "interrupt"]);

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
  conversation: null, // the thread's turns (loadConversation)
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
  for (const c of children.flat(Infinity)) {
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

// apiPost sends body as JSON to path and returns the answer; an error
// carries the server's message.
async function apiPost(path, body) {
  const resp = await fetch(path, { method: "POST", body: JSON.stringify(body),
    headers: { Authorization: "Bearer " + sessionStorage.getItem(TOKEN_KEY), "Content-Type": "application/json" } });
  const answer = await resp.json().catch(() => null);
  if (resp.status === 401) throw new Unauthorized("the token was refused");
  if (!resp.ok) throw new Error((answer && answer.error && answer.error.message) || resp.status + " " + resp.statusText);
  return answer;
}

// ---- formatting ----

function fmtTime(s) { return s ? new Date(s).toLocaleString() : ""; }

// timeMS reads an RFC 3339 time to the microsecond (Date.parse stops at
// the millisecond, and agents of a fast run start within one).
function timeMS(s) {
  const m = /^(.*T\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$/.exec(s || "");
  if (!m) return Date.parse(s);
  return Date.parse(m[1] + m[3]) + (m[2] ? Number("0" + m[2]) * 1000 : 0);
}
function fmtMS(ms) {
  if (ms >= 1000) return (ms / 1000).toFixed(1) + " s";
  return ms >= 10 || ms === 0 ? Math.round(ms) + " ms" : ms.toFixed(1) + " ms";
}
function fmtInt(n) { return (n || 0).toLocaleString("en-US"); }
function statusPill(s) { return el("span", { class: "status status-" + s, "data-status": s }, s); }

function pre(text, cls) {
  return el("pre", { class: cls || "text" }, text || "");
}

function block(title, ...content) {
  return el("section", { class: "block" }, el("h3", {}, title), ...content);
}

// plural says "1 model call", "2 model calls".
function plural(n, what) { return fmtInt(n) + " " + what + (n === 1 ? "" : "s"); }

// ---- Markdown ----
//
// Model output is untrusted. md renders a Markdown subset (headings,
// paragraphs, emphasis, code, lists, quotes, tables, rules, links) into
// elements built with createElement and text nodes: raw HTML in the text
// stays text, and a link keeps its address only when it is http, https or
// mailto (an image is shown as its link). Input is cut at MD_MAX_CHARS
// and nesting at MD_MAX_DEPTH.

const MD_MAX_CHARS = 200000;
const MD_MAX_DEPTH = 8;
// Lines and paragraphs longer than MD_MAX_LINE are shown as plain text:
// the patterns below stay fast on what is shorter.
const MD_MAX_LINE = 10000;
const MD_SAFE_PROTOCOLS = new Set(["http:", "https:", "mailto:"]);

// safeURL returns url when it is a link a page may follow, else "".
function safeURL(url) {
  try {
    const u = new URL(url, location.href);
    return MD_SAFE_PROTOCOLS.has(u.protocol) ? u.href : "";
  } catch (e) {
    return "";
  }
}

const MD_INLINE = /`([^`\n]+)`|(!?)\[([^\]\n]*)\]\(\s*([^()\s]*)(?:\s+"[^"\n]*")?\s*\)|<((?:https?|mailto):[^>\s]+)>|\*\*([^*\n]+?)\*\*|__([^_\n]+?)__|~~([^~\n]+?)~~|\*([^*\s][^*\n]*?)\*|\b_([^_\s][^_\n]*?)_\b/g;

// mdInline renders one paragraph's text: code, links, emphasis.
function mdInline(text, depth) {
  const out = [];
  if (depth > MD_MAX_DEPTH || text.length > MD_MAX_LINE) return [text];
  const re = new RegExp(MD_INLINE.source, "g");
  let at = 0, m;
  while ((m = re.exec(text)) !== null) {
    if (m.index > at) out.push(text.slice(at, m.index));
    at = re.lastIndex;
    if (m[1] !== undefined) out.push(el("code", {}, m[1]));
    else if (m[3] !== undefined) {
      const href = safeURL(m[4]);
      const label = m[2] ? (m[3] || m[4]) : mdInline(m[3], depth + 1);
      out.push(href ? el("a", { href, rel: "noopener noreferrer nofollow", target: "_blank" }, label)
        : el("span", { class: "unsafe-link", title: "link not followed: " + m[4] }, label));
    } else if (m[5] !== undefined) {
      const href = safeURL(m[5]);
      out.push(href ? el("a", { href, rel: "noopener noreferrer nofollow", target: "_blank" }, m[5]) : m[5]);
    } else if (m[6] !== undefined || m[7] !== undefined) out.push(el("strong", {}, mdInline(m[6] ?? m[7], depth + 1)));
    else if (m[8] !== undefined) out.push(el("del", {}, mdInline(m[8], depth + 1)));
    else out.push(el("em", {}, mdInline(m[9] ?? m[10], depth + 1)));
  }
  if (at < text.length) out.push(text.slice(at));
  // A line ending in two spaces or a backslash breaks the line.
  return out.flatMap((n) => typeof n === "string"
    ? n.split(/(?: {2,}|\\)\n/).flatMap((t, i) => (i ? [el("br"), t] : [t])) : [n]);
}

const MD_FENCE = /^\s{0,3}(`{3,}|~{3,})/;
const MD_HEADING = /^\s{0,3}(#{1,6})\s+(.*)$/;
const MD_RULE = /^\s{0,3}([-*_])(?:\s*\1){2,}\s*$/;
const MD_ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const MD_QUOTE = /^\s{0,3}>\s?(.*)$/;
const MD_TABLE_RULE = /^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?$/;

function mdTableRule(line) { return line !== undefined && line.length <= MD_MAX_LINE && MD_TABLE_RULE.test(line.trim()); }

function mdStartsBlock(line, next) {
  if (line.length > MD_MAX_LINE) return false;
  return MD_FENCE.test(line) || MD_HEADING.test(line) || MD_RULE.test(line) || MD_ITEM.test(line) ||
    MD_QUOTE.test(line) || (line.includes("|") && mdTableRule(next));
}

function mdCells(line) {
  return line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
}

// md renders text as Markdown into a div of class "markdown".
function md(text, depth) {
  depth = depth || 0;
  let src = String(text || "");
  const cut = src.length > MD_MAX_CHARS;
  if (cut) src = src.slice(0, MD_MAX_CHARS);
  const lines = src.replace(/\r\n?/g, "\n").split("\n");
  const out = el("div", { class: "markdown" });
  if (depth > MD_MAX_DEPTH) {
    out.append(el("p", {}, src));
    return out;
  }
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (line.trim() === "") { i++; continue; }
    if (line.length > MD_MAX_LINE) {
      out.append(el("p", {}, line));
      i++;
    } else if ((m = line.match(MD_FENCE))) {
      const body = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(m[1]); i++) body.push(lines[i]);
      i++;
      out.append(el("pre", { class: "code" }, el("code", {}, body.join("\n"))));
    } else if ((m = line.match(MD_HEADING))) {
      out.append(el("h" + m[1].length, {}, mdInline(m[2].trimEnd().replace(/\s#+$/, ""), depth)));
      i++;
    } else if (MD_RULE.test(line)) {
      out.append(el("hr"));
      i++;
    } else if (line.includes("|") && mdTableRule(lines[i + 1])) {
      const head = mdCells(line);
      const rows = [];
      for (i += 2; i < lines.length && lines[i].includes("|") && lines[i].trim() !== ""; i++) rows.push(mdCells(lines[i]));
      out.append(el("table", { class: "md-table" },
        el("thead", {}, el("tr", {}, head.map((c) => el("th", {}, mdInline(c, depth))))),
        el("tbody", {}, rows.map((r) => el("tr", {}, head.map((_, j) => el("td", {}, mdInline(r[j] || "", depth))))))));
    } else if (MD_QUOTE.test(line)) {
      const body = [];
      for (; i < lines.length && (m = lines[i].match(MD_QUOTE)); i++) body.push(m[1]);
      out.append(el("blockquote", {}, md(body.join("\n"), depth + 1)));
    } else if ((m = line.match(MD_ITEM))) {
      const ordered = /\d/.test(m[2]);
      const indent = m[1].length;
      const items = [];
      while (i < lines.length) {
        const im = lines[i].match(MD_ITEM);
        if (!im || im[1].length !== indent || /\d/.test(im[2]) !== ordered) break;
        const body = [im[3]];
        for (i++; i < lines.length; i++) {
          const l = lines[i];
          const sub = l.match(MD_ITEM);
          if (l.trim() === "" || (sub && sub[1].length <= indent) || (!sub && !/^\s/.test(l) && mdStartsBlock(l, lines[i + 1]))) break;
          body.push(l.slice(Math.min(indent + 2, l.length - l.trimStart().length)));
        }
        items.push(body.length === 1 ? el("li", {}, mdInline(body[0], depth)) : el("li", {}, md(body.join("\n"), depth + 1)));
      }
      out.append(el(ordered ? "ol" : "ul", {}, items));
    } else {
      const para = [line.trim()];
      for (i++; i < lines.length && lines[i].trim() !== "" && !mdStartsBlock(lines[i], lines[i + 1]); i++) para.push(lines[i].trim());
      out.append(el("p", {}, mdInline(para.join("\n"), depth)));
    }
  }
  if (cut) out.append(el("p", { class: "hint" }, "(cut: the text is longer than " + fmtInt(MD_MAX_CHARS) + " characters)"));
  return out;
}

// ---- readable values ----

// readable shows an agent's output or a tool's arguments for people: JSON
// objects as fields (names and values, nested), lists as lists, and text
// as Markdown.
function readable(text, cls) {
  const t = typeof text === "string" ? text.trim() : "";
  if (typeof text !== "string") return el("div", { class: "readable " + (cls || "") }, fields(text, 0));
  if (t.startsWith("{") || t.startsWith("[")) {
    try {
      return el("div", { class: "readable " + (cls || "") }, fields(JSON.parse(t), 0));
    } catch (e) { /* not JSON: Markdown */ }
  }
  const d = md(text);
  if (cls) d.classList.add(...cls.split(" "));
  return d;
}

// summaryLine shows the start of an output in one line: a JSON object's
// fields as "name: value · …", text as it is.
function summaryLine(text) {
  const t = text.trim();
  if (!t.startsWith("{")) return text;
  let v;
  try {
    v = JSON.parse(t);
  } catch (e) {
    // cut short: show what can be read of it
    return t.replace(/[{}"]/g, "").replace(/,(?=\w+:)/g, " · ").replace(/:/g, ": ");
  }
  return Object.entries(v).map(([k, x]) => k.replace(/_/g, " ") + ": " + (typeof x === "object" ? JSON.stringify(x) : x)).join(" · ");
}

// CODE_FIELDS name the arguments whose text is code (the python tool's
// "code", a shell command, a query in SQL): shown as written, not as
// Markdown, which would lose their line breaks and indentation.
const CODE_FIELDS = new Set(["code", "source", "source_code", "script", "program", "snippet", "sql", "command", "cmd", "shell"]);
// CODE_TOOLS name the tools whose output is a program's output: shown as
// written too.
const CODE_TOOLS = new Set(["python", "shell", "bash", "sql"]);

// codeBlock shows code or a program's output as written.
function codeBlock(text, lang) {
  return el("pre", { class: "code code-arg", "data-lang": lang || undefined }, el("code", {}, text));
}

function fields(v, depth) {
  if (v === null || v === undefined) return el("span", { class: "dim" }, "—");
  if (depth > MD_MAX_DEPTH) return el("code", {}, JSON.stringify(v));
  if (Array.isArray(v)) {
    if (v.length === 0) return el("span", { class: "dim" }, "none");
    if (v.every((x) => typeof x !== "object" || x === null)) return el("span", {}, v.map(String).join(", "));
    return el("ol", { class: "fields-list" }, v.map((x) => el("li", {}, fields(x, depth + 1))));
  }
  if (typeof v === "object") {
    return el("dl", { class: "fields" }, Object.entries(v).map(([k, x]) => [
      el("dt", { "data-field": k }, k.replace(/_/g, " ")),
      el("dd", { "data-field": k }, typeof x === "string" ? (CODE_FIELDS.has(k) ? codeBlock(x, k) : md(x, depth + 1)) : fields(x, depth + 1)),
    ]));
  }
  return el("span", {}, String(v));
}

// ---- runs list ----

// What a run without a recorded input did, by RunInfo.start.
const START_TEXT = { resume: "answered its thread's question", continue: "continued its thread" };

// showRuns lists the recorded runs, newest first, the runs of one thread
// together under it (the thread of the newest run first).
async function showRuns() {
  show("#runs", true);
  $("#run-title").textContent = "";
  await showEvals();
  const { runs } = await api("/v1/trace/runs?limit=200");
  const threads = new Map();
  for (const r of runs) {
    const key = r.thread_id || "";
    if (!threads.has(key)) threads.set(key, []);
    threads.get(key).push(r);
  }
  const groups = [...threads].map(([thread, rs]) => el("tbody", { class: "thread", "data-thread": thread },
    el("tr", { class: "thread-head" }, el("th", { colspan: 5 },
      thread ? ["Thread ", el("code", {}, thread)] : "Without a thread", " · ", plural(rs.length, "run"))),
    rs.map(runRow)));
  $("#runs-table").replaceChildren($("#runs-table thead"), ...groups);
  show("#runs-empty", runs.length === 0);
  document.body.dataset.state = "ready";
}

function runRow(r) {
  const input = r.input_text || START_TEXT[r.start] || "";
  return el("tr", { class: "run-row", "data-run": r.run_id },
    el("td", { class: "input" }, el("a", { href: "?run=" + encodeURIComponent(r.run_id), title: r.run_id },
      input || r.run_id), input ? el("div", { class: "dim" }, el("code", {}, r.run_id)) : null),
    el("td", { class: "workflow" }, r.graph || r.workflow || "", r.graph && r.workflow && r.workflow !== r.graph
      ? el("div", { class: "dim" }, r.workflow) : null),
    el("td", { class: "run-status" }, statusPill(r.status)),
    el("td", { class: "started" }, fmtTime(r.started_at)),
    el("td", { class: "num" }, fmtInt(r.events)));
}

// ---- eval runs (coorflow eval) ----

function fmtPct(x) { return (100 * x).toFixed(0) + "%"; }

// showEvals lists the eval runs above the recorded runs, when there are
// any.
async function showEvals() {
  const { evals } = await api("/v1/evals");
  if (!evals.length) return;
  const rows = evals.map((e) => el("tr", { class: "eval-row", "data-eval": e.id },
    el("td", {}, el("a", { href: "?eval=" + encodeURIComponent(e.id) }, e.label || e.id),
      e.label ? el("div", { class: "dim" }, el("code", {}, e.id)) : null),
    el("td", {}, e.workflow, el("div", { class: "dim" }, e.dataset)),
    el("td", {}, statusPill(e.status)),
    el("td", { class: "num" }, e.status === "done" ? fmtPct(e.total.pass_rate) : ""),
    el("td", {}, fmtTime(e.started))));
  $("#evals-table").replaceChildren($("#evals-table thead"), el("tbody", {}, rows));
  show("#evals", true);
}

// showEval shows one eval run as a table: a row per run of a case, each
// opening its recorded run, under a row per case with its summary.
async function showEval(id) {
  const res = await api("/v1/evals/" + encodeURIComponent(id));
  show("#eval", true);
  $("#run-title").textContent = "eval " + (res.label || res.id);
  $("#eval-title").textContent = (res.label ? res.label + " · " : "") + res.id;
  const t = res.total;
  $("#eval-summary").textContent = `${res.workflow} on ${res.dataset} · ${t.passed}/${t.trial_count} passed (${fmtPct(t.pass_rate)}, ` +
    `95% ${fmtPct(t.pass_ci[0])}–${fmtPct(t.pass_ci[1])}) · mean score ${t.mean_score.toFixed(2)} · ${fmtUsage(t.spend)}` +
    (t.judge_spend && t.judge_spend.calls ? ` · judges: ${fmtUsage(t.judge_spend)}` : "") +
    ` · p50 ${fmtMS(t.latency_p50_ms)}, p95 ${fmtMS(t.latency_p95_ms)}`;
  const bodies = res.cases.map((c) => el("tbody", { class: "eval-case", "data-case": c.case },
    el("tr", { class: "case-head" }, el("th", { colspan: 10 }, c.case, " · ", `${c.passed}/${c.trial_count} passed`,
      c.trial_count > 1 ? ` · score ${c.mean_score.toFixed(2)} (95% ${c.score_ci[0].toFixed(2)}–${c.score_ci[1].toFixed(2)})` : "")),
    c.trials.map((tr) => el("tr", { class: "trial-row", "data-status": tr.status },
      el("td", {}, "#" + (tr.repeat + 1)),
      el("td", {}, (tr.runs || []).map((r) => el("div", {}, el("a", { href: "?run=" + encodeURIComponent(r), class: "trial-run" }, el("code", {}, r)))),
        tr.replayed ? el("div", { class: "dim" }, "replayed") : null),
      el("td", {}, statusPill(tr.status), tr.error ? el("div", { class: "dim error-text" }, tr.error) : null,
        tr.diverged ? el("div", { class: "dim" }, "diverged: " + tr.diverged) : null),
      el("td", { class: "num" }, tr.score.toFixed(2)),
      el("td", {}, (tr.grades || []).map((g) => el("div", { class: g.pass ? "grade pass" : "grade fail", title: g.reason || "" },
        (g.pass ? "✓ " : "✗ ") + g.grader, g.reason && !g.pass ? el("span", { class: "dim" }, " " + g.reason) : null))),
      el("td", { class: "num" }, fmtInt(tr.spend.prompt_tokens + tr.spend.completion_tokens)),
      el("td", { class: "num" }, fmtUSD(tr.spend.cost_usd + (tr.judge_spend ? tr.judge_spend.cost_usd : 0))),
      el("td", { class: "num" }, fmtMS(tr.latency_ms)),
      el("td", { class: "num" }, fmtInt(tr.agents)),
      el("td", { class: "num" }, fmtInt(tr.steps))))));
  $("#eval-table").replaceChildren($("#eval-table thead"), ...bodies);
  document.body.dataset.state = "ready";
}

// ---- one run ----

async function showRun(id) {
  state.runID = id;
  show("#run", true);
  await refresh();
  const agent = Number(new URLSearchParams(location.search).get("agent"));
  if (agent) await selectAgent(agent);
  else renderOverview(state.timeline);
  if (state.timeline.run.status === "running") startLive();
  // The turns are extra: the run shows without them.
  await loadConversation(state.timeline.run).catch((e) => console.warn("coorflow: the thread's turns:", e));
  document.body.dataset.state = "ready";
}

// ---- the thread's turns ----

// MAX_TURNS bounds the runs of a thread the conversation shows (and the
// timelines it reads): the newest ones.
const MAX_TURNS = 20;

// loadConversation reads the turns of the run's thread: its recorded
// runs, oldest first, each with what it was given and what it answered
// or asked. The overview shows them.
async function loadConversation(run) {
  if (!run.thread_id) return;
  const { runs } = await api("/v1/trace/runs?thread=" + encodeURIComponent(run.thread_id) + "&limit=" + MAX_TURNS);
  const turns = await Promise.all(runs.reverse().map(async (r) => {
    const tl = r.run_id === state.runID ? state.timeline
      : await api("/v1/trace/runs/" + encodeURIComponent(r.run_id) + "/timeline").catch(() => null);
    return { run: r, answer: tl ? tl.answer : "", interrupts: tl && tl.run.status === "interrupted" ? tl.interrupts || [] : [] };
  }));
  const history = await api("/v1/threads/" + encodeURIComponent(run.thread_id) + "/history?limit=" + MAX_CHECKPOINTS).catch(() => null);
  state.conversation = { thread: run.thread_id, turns, more: runs.length === MAX_TURNS,
    checkpoints: history ? history.checkpoints || [] : null };
  // Added to the overview shown, leaving the rest of it as it is.
  if (state.agentID) return;
  for (const [id, b] of [["#conversation", conversationBlock()], ["#checkpoints", checkpointsBlock()]]) {
    if (!b) continue;
    const old = $(id);
    if (old) old.replaceWith(b);
    else $("#detail").append(b);
  }
}

// MAX_CHECKPOINTS bounds the thread's checkpoints shown: the newest.
const MAX_CHECKPOINTS = 50;

// checkpointsBlock shows the thread's state at each checkpoint, newest
// first, as what changed since its parent: channels added, changed and
// removed, with the value before and after.
function checkpointsBlock() {
  const c = state.conversation;
  if (!c || !c.checkpoints || c.checkpoints.length === 0) return null;
  const byID = new Map(c.checkpoints.map((cp) => [cp.checkpoint, cp]));
  return el("section", { class: "block checkpoints", id: "checkpoints" },
    el("h3", {}, "State at each checkpoint of thread ", el("code", {}, c.thread)),
    el("p", { class: "hint" }, "Newest first; each shows what changed since its parent checkpoint."),
    c.checkpoints.map((cp) => {
      const parent = cp.parent ? byID.get(cp.parent) : null;
      const now = cp.values || {}, before = parent ? parent.values || {} : {};
      const rows = [];
      for (const k of new Set([...Object.keys(before), ...Object.keys(now)])) {
        const change = !(k in before) ? "added" : !(k in now) ? "removed"
          : JSON.stringify(before[k]) === JSON.stringify(now[k]) ? "same" : "changed";
        if (change === "same") continue;
        rows.push(el("tr", { class: "change-" + change, "data-channel": k },
          el("td", { class: "channel" }, el("code", {}, k)), el("td", { class: "change" }, change),
          el("td", { class: "before" }, k in before ? fields(before[k], 1) : ""),
          el("td", { class: "after" }, k in now ? fields(now[k], 1) : "")));
      }
      return el("details", { class: "checkpoint", "data-checkpoint": cp.checkpoint, "data-step": cp.step },
        el("summary", {}, `Step ${cp.step}`, cp.source ? " · " + cp.source : "",
          cp.writers && cp.writers.length ? " · written by " + cp.writers.join(", ") : "",
          cp.next && cp.next.length ? " · next " + cp.next.join(", ") : "",
          " · ", plural(rows.length, "change"), cp.parent && !parent ? " (parent not loaded: all values)" : ""),
        el("div", { class: "dim" }, "checkpoint ", el("code", {}, cp.checkpoint), cp.parent ? [" · parent ", el("code", {}, cp.parent)] : null),
        checkpointActions(c.thread, cp),
        rows.length ? el("table", { class: "state-diff" },
          el("thead", {}, el("tr", {}, ["Channel", "Change", "Before", "After"].map((h) => el("th", {}, h)))),
          el("tbody", {}, rows)) : el("p", { class: "hint" }, "No channel changed."));
    }));
}

// checkpointActions are the buttons that start a run from checkpoint cp
// of thread (POST /v1/threads/{thread}/runs with "checkpoint"): replay
// runs the steps after it again; fork applies an input there first. The
// page then shows the new run.
function checkpointActions(thread, cp) {
  const msg = el("p", { class: "action-error", hidden: true });
  const input = el("textarea", { class: "fork-input", rows: 3, spellcheck: "false",
    placeholder: '{"channel": "value"}', "aria-label": "Input of the fork, JSON by channel" });
  const start = async (body) => {
    msg.hidden = true;
    try {
      const run = await apiPost("/v1/threads/" + encodeURIComponent(thread) + "/runs", { checkpoint: cp.checkpoint, ...body });
      location.assign("?run=" + encodeURIComponent(run.run_id));
    } catch (e) {
      msg.textContent = e.message;
      msg.hidden = false;
    }
  };
  const fork = el("div", { class: "fork", hidden: true }, input,
    el("button", { type: "button", class: "fork-run", onclick: () => {
      let value;
      try { value = JSON.parse(input.value || "{}"); } catch (e) {
        msg.textContent = "The input is not JSON: " + e.message;
        msg.hidden = false;
        return;
      }
      start({ input: value });
    } }, "Run the fork"));
  return el("div", { class: "checkpoint-actions" },
    el("button", { type: "button", class: "replay", title: "Run the steps after this checkpoint again", onclick: () => start({}) }, "Replay from here"),
    " ",
    el("button", { type: "button", class: "fork-open", title: "Apply an input at this checkpoint and go on from there",
      onclick: () => { fork.hidden = !fork.hidden; if (!fork.hidden) input.focus(); } }, "Fork from here…"),
    fork, msg);
}

function conversationBlock() {
  const c = state.conversation;
  if (!c || c.turns.length < 2) return null;
  return el("section", { class: "block conversation", id: "conversation" },
    el("h3", {}, "Conversation on thread ", el("code", {}, c.thread)),
    c.more ? el("p", { class: "hint" }, "The last " + MAX_TURNS + " turns.") : null,
    el("ol", { class: "turns" }, c.turns.map(({ run, answer, interrupts }) => {
      const asked = interrupts.map((q) => q.payload && typeof q.payload === "object" && typeof q.payload.question === "string"
        ? q.payload.question : JSON.stringify(q.payload));
      return el("li", { class: "turn" + (run.run_id === state.runID ? " current" : ""), "data-run": run.run_id },
        el("div", { class: "turn-in" }, el("span", { class: "who" }, "In"),
          el("a", { href: "?run=" + encodeURIComponent(run.run_id), title: run.run_id }, run.input_text || START_TEXT[run.start] || run.run_id)),
        el("div", { class: "turn-out" }, el("span", { class: "who" }, asked.length ? "Asked" : "Out"),
          asked.length ? el("div", { class: "turn-asked" }, asked.join(" · "))
            : answer ? el("div", { class: "turn-answer" }, md(answer)) : el("span", { class: "dim" }, run.status)));
    })));
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
  else renderOverview(tl);
  if (state.live && tl.last_seq < state.wantSeq) scheduleRefresh(300);
  if (tl.run.status !== "running") stopLive();
}

function scheduleRefresh(ms) {
  if (state.refreshTimer) return;
  state.refreshTimer = setTimeout(() => { state.refreshTimer = 0; refresh().catch(report); }, ms);
}

function renderHeader(run) {
  $("#run-title").textContent = (run.graph || run.workflow || "run") + " · " + run.run_id;
  const st = $("#run-status");
  st.textContent = run.status;
  st.className = "status status-" + run.status;
  st.dataset.status = run.status;
  st.hidden = false;
  document.title = "coorflow · " + (run.graph || run.workflow) + " · " + run.status;
}

function renderTimeline(tl) {
  const nav = $("#timeline");
  const meta = el("div", { class: "run-meta" },
    el("button", { type: "button", id: "overview", class: state.agentID ? "" : "selected", onclick: showOverview }, "Answer and time bars"),
    el("div", {}, "Thread ", el("code", {}, tl.run.thread_id || "—")),
    tl.run.input && tl.run.start !== "resume" ? el("div", { class: "run-input" }, "Input ", inputFields(tl.run.input)) : null,
    tl.run.start === "resume" ? el("div", { class: "run-answered" }, "Answered ", answersView(tl.run.input)) : null,
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
      numberRepeats(n.agents).map(agentButton)))));
  nav.replaceChildren(meta, ...steps);
  if (tl.steps.length === 0) nav.append(el("p", { class: "hint" }, "No step recorded yet."));
}

// numberRepeats tells apart the agents of a node that share a name and
// give no run id of their own: they are numbered #1, #2, … in order.
function numberRepeats(agents) {
  const count = new Map();
  for (const a of agents) if (!a.run) count.set(a.name, (count.get(a.name) || 0) + 1);
  const seen = new Map();
  return agents.map((a) => {
    if (a.run || count.get(a.name) < 2) return a;
    seen.set(a.name, (seen.get(a.name) || 0) + 1);
    return { ...a, nth: seen.get(a.name) };
  });
}

function agentButton(a) {
  return el("button", {
    type: "button", class: "agent" + (a.id === state.agentID ? " selected" : ""), "data-agent-id": a.id,
    "data-name": a.name, "data-status": a.status, title: a.path,
    onclick: () => selectAgent(a.id).catch(report),
  },
  el("span", { class: "agent-name" }, a.name, a.run ? el("span", { class: "agent-run dim", title: "the agent's run id (its step)" }, " · " + a.run)
    : a.nth ? el("span", { class: "agent-run dim", title: "the agent ran more than once in this node" }, " #" + a.nth) : null),
  statusPill(a.status),
  el("span", { class: "agent-meta" }, agentCounts(a) + (a.usage && a.usage.calls ? " · " + fmtCost(a.usage) : "")),
  a.summary ? el("span", { class: "agent-summary" }, summaryLine(a.summary)) : null);
}

// agentCounts says what an agent did, from its AgentSummary (counts) or
// its AgentDetail (the calls themselves): the one count of model calls per
// agent that trace gives and runs show prints.
function agentCounts(a) {
  const n = (x) => (Array.isArray(x) ? x.length : x || 0);
  return `${plural(n(a.model_calls), "model call")} · ${plural(n(a.tool_calls), "tool call")} · ` +
    `${fmtInt(a.prompt_tokens)}→${fmtInt(a.completion_tokens)} tokens`;
}

// answersView shows the answers a resume run was given (RunInfo.input of
// a resume run: {"resume": answer} or {"resume_each": {id: answer}}).
function answersView(raw) {
  if (!raw || typeof raw !== "object") return el("span", { class: "dim", "data-answer": "none" }, "(not recorded)");
  if ("resume" in raw) return el("div", { class: "answer-value", "data-answer": "resume" }, readable(raw.resume === null ? "null" : raw.resume));
  const each = raw.resume_each || {};
  return el("div", { class: "answer-value", "data-answer": "resume_each" }, Object.entries(each).map(([id, v]) =>
    el("div", { "data-interrupt": id }, el("span", { class: "dim" }, "interrupt ", el("code", {}, id), ": "), readable(v === null ? "null" : v))));
}

// inputFields shows a run's recorded input writes as fields.
function inputFields(raw) {
  const obj = {};
  for (const w of Array.isArray(raw) ? raw : []) obj[w.channel] = w.value;
  return fields(obj, 0);
}

function showOverview() {
  state.agentID = 0;
  const url = new URL(location.href);
  url.searchParams.delete("agent");
  history.replaceState(null, "", url.pathname + url.search);
  for (const b of document.querySelectorAll("button.agent")) b.classList.remove("selected");
  renderOverview(state.timeline);
}

// ---- the landing pane: the answer and the time bars ----

function renderOverview(tl) {
  const ov = $("#overview");
  if (ov) ov.classList.add("selected");
  const parts = [];
  if (tl.run.start === "resume") {
    parts.push(el("section", { class: "block answered", id: "answered" }, el("h3", {}, "Answered"),
      el("p", { class: "dim" }, "This run went on from the question its thread's previous run asked, with this answer:"),
      answersView(tl.run.input)));
  }
  if (tl.interrupts && tl.interrupts.length) parts.push(questionsBlock(tl));
  const asking = tl.run.status === "interrupted" && tl.interrupts && tl.interrupts.length;
  if (asking) {
    // The run has not answered: what an agent wrote so far is no answer.
    parts.push(block("Answer", el("p", { class: "hint", id: "no-answer" }, "No answer yet: the run waits for the answer to its question above."),
      tl.answer ? el("details", { class: "so-far" }, el("summary", {}, "Latest agent output so far"), md(tl.answer)) : null));
  } else {
    parts.push(block("Answer", tl.answer
      ? el("div", { id: "answer" }, md(tl.answer))
      : el("p", { class: "hint", id: "no-answer" }, tl.run.status === "running" ? "The run has not answered yet." : "The run recorded no answer.")));
  }
  parts.push(block("Time bars", gantt(tl)));
  const conv = conversationBlock();
  if (conv) parts.push(conv);
  const cps = checkpointsBlock();
  if (cps) parts.push(cps);
  $("#detail").replaceChildren(...parts);
}

// questionsBlock shows what an interrupted run asked: each question with
// what it is about (a plan under review, …), as fields, and the node that
// waits for the answer.
function questionsBlock(tl) {
  const waiting = tl.run.status === "interrupted";
  return el("section", { class: "block questions", id: "questions" },
    el("h3", {}, waiting ? "Waiting for an answer" : "Asked"),
    tl.interrupts.map((q) => el("div", { class: "question", "data-interrupt": q.id, "data-node": q.node },
      el("div", { class: "question-head" }, el("code", {}, q.node), " asks", waiting ? statusPill("waiting") : null,
        el("span", { class: "dim" }, " · interrupt ", el("code", {}, q.id))),
      readable(q.payload === undefined ? "" : q.payload, "question-payload"))),
    waiting ? el("p", { class: "hint" }, "Answer it with a run on thread ", el("code", {}, tl.run.thread_id || "—"),
      ' whose body is {"resume": …}.') : null);
}

// gantt draws a bar per step and per agent on one time axis, from the
// recorded start and end events: bars that overlap ran at the same time.
function gantt(tl) {
  const t0 = timeMS(tl.run.started_at);
  let t1 = tl.run.ended_at ? timeMS(tl.run.ended_at) : Date.now();
  const rows = [];
  for (const s of tl.steps) {
    rows.push({ kind: "step", label: "Step " + s.step, start: s.start, end: s.end, step: s.step, status: stepStatus(s) });
    for (const n of s.nodes) {
      for (const a of numberRepeats(n.agents)) rows.push({ kind: "agent", label: a.name + (a.run ? " · " + a.run : a.nth ? " #" + a.nth : ""), start: a.start, end: a.end, step: s.step, agent: a, status: a.status });
    }
  }
  for (const r of rows) if (r.end) t1 = Math.max(t1, timeMS(r.end));
  const span = Math.max(t1 - t0, 0.001);
  const pct = (ms) => Math.min(100, Math.max(0, (ms / span) * 100));
  if (rows.length === 0) return el("p", { class: "hint" }, "No step recorded yet.");
  return el("div", { class: "gantt", "data-span-ms": span },
    el("div", { class: "gantt-axis" }, el("span", {}, "0"), el("span", {}, fmtMS(span))),
    rows.map((r) => {
      const start = r.start ? timeMS(r.start) - t0 : 0;
      const end = (r.end ? timeMS(r.end) : t1) - t0;
      const bar = el("div", {
        class: "gantt-bar status-" + r.status, title: `${r.label}: ${fmtMS(start)} → ${fmtMS(end)} (${fmtMS(end - start)})`,
        "data-start-ms": start.toFixed(3), "data-end-ms": end.toFixed(3),
      });
      // Set through the CSSOM: the page's CSP refuses style attributes.
      bar.style.left = pct(start).toFixed(3) + "%";
      bar.style.width = Math.max(pct(end) - pct(start), 0.4).toFixed(3) + "%";
      const label = r.kind === "agent"
        ? el("button", { type: "button", class: "gantt-label link", onclick: () => selectAgent(r.agent.id).catch(report) }, r.label)
        : el("span", { class: "gantt-label" }, r.label);
      return el("div", { class: "gantt-row gantt-" + r.kind, "data-step": r.step, "data-agent-id": r.agent ? r.agent.id : undefined,
        "data-name": r.agent ? r.agent.name : undefined },
      label, el("div", { class: "gantt-track" }, bar), el("span", { class: "dim gantt-took" }, fmtMS(end - start)));
    }));
}

function stepStatus(s) {
  const st = s.nodes.map((n) => n.status);
  for (const k of ["failed", "running", "waiting", "unfinished"]) if (st.includes(k)) return k;
  return "done";
}

async function selectAgent(id) {
  state.agentID = id;
  const ov = $("#overview");
  if (ov) ov.classList.remove("selected");
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
      // What it did and spent, once: its calls, then their tokens and cost.
      el("span", { class: "counts agent-usage" }, d.usage && d.usage.calls
        ? `${plural(d.model_calls.length, "model call")} · ${plural(d.tool_calls.length, "tool call")} · ${fmtTokens(d.usage)}`
        : agentCounts(d))));
  const parts = [head];
  if (d.task) parts.push(block("Task", readable(d.task, "task")));
  parts.push(block("What it saw", d.snapshots.length
    ? d.snapshots.map((s, i) => snapshotView(s, i, d.snapshots.length, d.name))
    : el("p", { class: "hint" }, "No context snapshot was recorded for this agent.")));
  parts.push(block("Tool calls", d.tool_calls.length ? toolTable(d.tool_calls) : el("p", { class: "hint" }, "No tool call.")));
  parts.push(block("Model calls", d.model_calls.length ? d.model_calls.map(modelCallView) : el("p", { class: "hint" }, "No model call.")));
  if (d.status === "running") {
    parts.push(block("Streaming now", el("pre", { id: "live-tokens", class: "text", "data-path": d.path }, keepLive)));
  }
  if (d.reasoning) parts.push(block("Reasoning", pre(d.reasoning, "text reasoning")));
  if (d.output) parts.push(block("Output", readable(d.output, "output")));
  if (d.error) parts.push(block("Error", pre(d.error, "text error-text")));
  if (d.warnings && d.warnings.length) parts.push(block("Warnings", el("ul", {}, d.warnings.map((w) => el("li", {}, w)))));
  $("#detail").replaceChildren(...parts);
}

// snapshotView shows one snapshot; one labelled by another caller (the
// meta-prompt stage of a builder, a summarizer) says whose it is.
function snapshotView(entry, i, n, name) {
  // A snapshot too large for the detail comes cut, as text (trace.AgentDetail).
  if (typeof entry.snapshot === "string") {
    return el("div", { class: "snapshot", "data-seq": entry.seq }, el("h4", {}, `Call ${i + 1} of ${n}`), pre(entry.snapshot));
  }
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
    el("h4", {}, `Call ${i + 1} of ${n}`, s.agent && s.agent !== name ? " (" + s.agent + ")" : "", `: ${budget}, ${plural(s.messages || 0, "message")}`,
      s.forced ? " · rebuilt after an overflow" : ""),
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
      el("td", { class: "tool-args" }, c.args ? readable(c.args) : ""),
      el("td", {}, c.status ? statusPill(c.status) : statusPill("running")),
      el("td", { class: "tool-output" }, CODE_TOOLS.has(c.name) && c.output ? codeBlock(c.output, "output") : readable(c.output || "")),
      el("td", { class: "num" }, c.duration_ms ? fmtMS(c.duration_ms) : "")))));
}

function modelCallView(c, i) {
  return el("details", { class: "model-call", "data-seq": c.seq, open: false },
    el("summary", {}, `#${i + 1} ${c.model || ""} ${c.tier ? "(" + c.tier + ")" : ""} · ${fmtInt(c.prompt_tokens)}→${fmtInt(c.completion_tokens)} tokens` +
      (c.cached_tokens ? ` (${fmtInt(c.cached_tokens)} cached)` : "") + (c.reasoning_tokens ? ` (${fmtInt(c.reasoning_tokens)} reasoning)` : "") +
      (c.estimated ? " (estimated)" : "") + ` · ${c.cost_usd === undefined ? "cost unknown" : fmtUSD(c.cost_usd)} · ${fmtMS(c.duration_ms)}`,
      c.replayed ? " · from the journal" : "", c.error ? " · failed" : ""),
    el("div", { class: "dim" }, "request hash ", el("code", {}, c.hash || "—")),
    c.error ? pre(c.error, "text error-text") : null,
    c.reasoning ? el("div", {}, el("h5", {}, "Reasoning"), pre(c.reasoning)) : null,
    c.content ? el("div", {}, el("h5", {}, "Answer"), readable(c.content, "model-answer")) : null,
    c.tool_calls && c.tool_calls.length ? el("div", {}, el("h5", {}, "Asked for"),
      el("ul", {}, c.tool_calls.map((t) => el("li", {}, el("code", {}, t.name), readable(t.arguments || ""))))) : null);
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
  const params = new URLSearchParams(location.search);
  const run = params.get("run"), evalID = params.get("eval");
  try {
    if (run) await showRun(run);
    else if (evalID) await showEval(evalID);
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
  return plural(u.calls, "call") + " · " + fmtTokens(u);
}

// fmtTokens says a usage's tokens and cost, without its count of calls.
function fmtTokens(u) {
  let s = `${fmtInt(u.prompt_tokens)} tokens in`;
  if (u.cached_tokens) s += ` (${fmtInt(u.cached_tokens)} cached)`;
  s += `, ${fmtInt(u.completion_tokens)} out`;
  if (u.reasoning_tokens) s += ` (${fmtInt(u.reasoning_tokens)} reasoning)`;
  if (u.estimated_calls) s += ` · ${fmtInt(u.estimated_calls)} estimated`;
  s += " · " + fmtCost(u);
  if (u.unpriced_models && u.unpriced_models.length) s += ` (no price for ${u.unpriced_models.join(", ")})`;
  return s;
}
