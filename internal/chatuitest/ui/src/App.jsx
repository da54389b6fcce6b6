// A chat on assistant-ui's LangGraph runtime, talking to a LangGraph
// Platform API server (coorflow serve) with the official SDK.
//
// Configured by the page's address:
//   ?api=URL          the server (default: this page's origin)
//   &assistant=ID     the assistant (graph) to run (default: coor)
//   &input=FIELD      the input channel the question goes to (default:
//                     input); "messages" sends LangChain messages instead
//   #key=TOKEN        the API key (sent as X-Api-Key; kept out of the
//                     address once read, held for the tab)
import {
  AssistantRuntimeProvider,
  ComposerPrimitive,
  MessagePrimitive,
  ThreadPrimitive,
  getExternalStoreMessages,
  useAuiState,
} from "@assistant-ui/react";
import {
  useLangGraphInterruptState,
  useLangGraphMessageMetadata,
  useLangGraphRuntime,
  useLangGraphSendCommand,
} from "@assistant-ui/react-langgraph";
import { Client } from "@langchain/langgraph-sdk";
import { useMemo, useState } from "react";

function settings() {
  const q = new URLSearchParams(window.location.search);
  const h = new URLSearchParams(window.location.hash.slice(1));
  let key = h.get("key");
  if (key) {
    sessionStorage.setItem("coorflow.chat.key", key);
    history.replaceState(null, "", window.location.pathname + window.location.search);
  } else {
    key = sessionStorage.getItem("coorflow.chat.key") ?? undefined;
  }
  return {
    apiUrl: q.get("api") || window.location.origin,
    assistant: q.get("assistant") || "coor",
    input: q.get("input") || "input",
    apiKey: key,
  };
}

// text is the text of a LangChain message's content.
function text(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((p) => (typeof p === "string" ? p : p?.type === "text" ? p.text : "")).join("");
}

// withoutConversation drops the "messages" a node's update writes: coorflow's
// conversation channel holds {role, content} entries without ids (the
// user's question, the final answer), which the runtime would add as new
// messages next to the ones it already shows (the question as typed, the
// answer as streamed). The chat is built from the streamed messages.
function withoutConversation(ev) {
  if (ev.event !== "updates" || ev.data == null || typeof ev.data !== "object") return ev;
  const data = {};
  for (const [node, writes] of Object.entries(ev.data)) {
    if (writes != null && typeof writes === "object" && !Array.isArray(writes) && "messages" in writes) {
      const { messages: _, ...rest } = writes;
      data[node] = rest;
    } else {
      data[node] = writes;
    }
  }
  return { ...ev, data };
}

export function App() {
  const cfg = useMemo(settings, []);
  const client = useMemo(() => new Client({ apiUrl: cfg.apiUrl, apiKey: cfg.apiKey }), [cfg]);
  const runtime = useLangGraphRuntime({
    create: async () => {
      const t = await client.threads.create({ graphId: cfg.assistant });
      return { externalId: t.thread_id };
    },
    stream: async function* (messages, { initialize, command, abortSignal }) {
      const { externalId } = await initialize();
      let input = null;
      if (messages.length > 0) {
        input = cfg.input === "messages" ? { messages } : { [cfg.input]: text(messages.at(-1).content) };
      }
      const events = client.runs.stream(externalId, cfg.assistant, {
        input,
        command,
        streamMode: ["messages-tuple", "updates"],
        signal: abortSignal,
      });
      for await (const ev of events) {
        if (ev.event === "messages" && Array.isArray(ev.data) && ev.data[0]?.id) agents.set(ev.data[0].id, agentOf(ev.data[1]));
        yield withoutConversation(ev);
      }
    },
  });
  return (
    <AssistantRuntimeProvider runtime={runtime}>
      <main className="chat">
        <header>
          <h1>coorflow chat</h1>
          <span className="where" data-testid="server">
            {cfg.assistant} @ {cfg.apiUrl}
          </span>
        </header>
        <Thread />
      </main>
    </AssistantRuntimeProvider>
  );
}

function Thread() {
  return (
    <ThreadPrimitive.Root className="thread">
      <ThreadPrimitive.Viewport className="viewport">
        <ThreadPrimitive.Empty>
          <p className="empty">Ask the workflow a question.</p>
        </ThreadPrimitive.Empty>
        <ThreadPrimitive.Messages>{({ message }) => <Message message={message} />}</ThreadPrimitive.Messages>
        <Review />
      </ThreadPrimitive.Viewport>
      <ComposerPrimitive.Root className="composer">
        <ComposerPrimitive.Input placeholder="Ask a question…" data-testid="composer-input" />
        <ComposerPrimitive.Send data-testid="send">Send</ComposerPrimitive.Send>
      </ComposerPrimitive.Root>
    </ThreadPrimitive.Root>
  );
}

// agents names the agent of each streamed message by its id, for the
// whole page: the runtime keeps the metadata of the current run's
// messages only.
const agents = new Map();

// agentOf names the agent a streamed message comes from: its
// langgraph_path below the graph's root.
function agentOf(meta) {
  const path = meta?.langgraph_path ?? meta?.langgraph_node ?? "";
  const i = path.indexOf("/");
  return i >= 0 ? path.slice(i + 1) : path;
}

// Message shows a turn. assistant-ui joins the AI messages of a turn into
// one; the turn shows each of them (a model call of an agent: the
// planner, the team's agents, the reporter) under its agent's name, from
// the LangChain messages the turn was made from.
function Message({ message }) {
  const metadata = useLangGraphMessageMetadata();
  const running = useAuiState((s) => s.thread.isRunning);
  const originals = getExternalStoreMessages(message);
  return (
    <MessagePrimitive.Root
      className={`message ${message.role}`}
      data-role={message.role}
      data-status={message.status?.type ?? "complete"}
      data-running={String(running)}
    >
      {originals.length === 0 ? (
        <div className="text">
          <MessagePrimitive.Parts />
        </div>
      ) : (
        originals.map((m, i) => {
          const agent = message.role === "assistant" ? (agents.get(m.id) ?? agentOf(metadata.get(m.id))) : "you";
          return (
            <div className="part" key={m.id ?? i} data-agent={agent} data-id={m.id}>
              <div className="who">{agent}</div>
              <div className="text">{text(m.content)}</div>
            </div>
          );
        })
      )}
    </MessagePrimitive.Root>
  );
}

// Review shows a pending interrupt (coorflow's plan review: the plan and
// its question) and answers it with a command: accept, or feedback.
function Review() {
  const interrupt = useLangGraphInterruptState();
  const send = useLangGraphSendCommand();
  const running = useAuiState((s) => s.thread.isRunning);
  const [feedback, setFeedback] = useState("");
  if (!interrupt || running) return null;
  const value = interrupt.value ?? {};
  const plan = value.plan;
  const answer = (resume) => send({ resume });
  return (
    <section className="review" data-testid="review">
      <h2>{value.question ?? "The workflow asks:"}</h2>
      {plan ? (
        <div className="plan">
          <h3 data-testid="plan-title">{plan.title}</h3>
          <ol>
            {(plan.steps ?? []).map((s) => (
              <li key={s.id} data-step={s.id}>
                <b>{s.title}</b> <span className="agent">({s.agent_name})</span>
              </li>
            ))}
          </ol>
        </div>
      ) : (
        <pre>{JSON.stringify(value, null, 2)}</pre>
      )}
      <div className="actions">
        <button data-testid="accept" onClick={() => answer("accept")}>
          Accept
        </button>
        <input
          data-testid="feedback"
          placeholder="…or say what to change"
          value={feedback}
          onChange={(e) => setFeedback(e.target.value)}
        />
        <button data-testid="send-feedback" disabled={!feedback.trim()} onClick={() => answer(feedback)}>
          Send feedback
        </button>
      </div>
    </section>
  );
}
