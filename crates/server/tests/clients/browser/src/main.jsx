// A chat page that uses `useStream` the way Agent Chat UI does
// (src/providers/Stream.tsx and src/components/thread/ of agent-chat-ui):
// history fetched with the thread, submits with `streamMode: ["values"]`,
// `streamSubgraphs` and `streamResumable`, the thread id written to the URL,
// regenerate from a message's `parent_checkpoint`, branch switching, stop.
//
// Query parameters:
//   apiUrl        the server (required)
//   assistantId   graph or assistant id (default "hitl")
//   threadId      a thread to open (written here by onThreadId)
//   onDisconnect  "cancel" or "continue", passed to every submit when given
//                 (Agent Chat UI passes none: the SDK then sends "continue"
//                 because streamResumable is on)
//   count         a number added to the submitted input as `count` (the
//                 `simple` fixture sleeps count/10 s)
//
// Every element the driver reads has a data-testid. `window.__sg` keeps what
// the driver can't read off the page afterwards: each committed DOM text of
// each AI message, the custom events and the runs created.
import { useLayoutEffect, useRef, useState } from "react";
import { createRoot } from "react-dom/client";
import { useStream } from "@langchain/langgraph-sdk/react";

const params = new URLSearchParams(window.location.search);
const apiUrl = params.get("apiUrl") ?? "http://127.0.0.1:8123";
const assistantId = params.get("assistantId") ?? "hitl";
const onDisconnect = params.get("onDisconnect") ?? undefined;
const extraCount = params.has("count") ? Number(params.get("count")) : undefined;

window.__sg = { domStates: [], custom: [], runs: [], errors: [] };

function contentString(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .filter((block) => block && block.type === "text")
      .map((block) => block.text)
      .join("");
  }
  return "";
}

function uuid() {
  return crypto.randomUUID();
}

// Agent Chat UI keeps the thread id in the query string (nuqs, replace mode).
function useQueryThreadId() {
  const [threadId, setThreadIdState] = useState(params.get("threadId"));
  const setThreadId = (id) => {
    const url = new URL(window.location.href);
    if (id == null) url.searchParams.delete("threadId");
    else url.searchParams.set("threadId", id);
    window.history.replaceState(null, "", url);
    setThreadIdState(id);
  };
  return [threadId, setThreadId];
}

function submitOptions(extra) {
  return {
    streamMode: ["values"],
    streamSubgraphs: true,
    streamResumable: true,
    ...(onDisconnect ? { onDisconnect } : {}),
    ...extra,
  };
}

function BranchSwitcher({ branch, branchOptions, onSelect, isLoading }) {
  if (!branchOptions || !branch) return null;
  const index = branchOptions.indexOf(branch);
  return (
    <span data-testid="branch-switcher">
      <button
        data-testid="branch-prev"
        disabled={isLoading || index <= 0}
        onClick={() => onSelect(branchOptions[index - 1])}
      >
        ‹
      </button>{" "}
      <span data-testid="branch-position">
        {index + 1} / {branchOptions.length}
      </span>{" "}
      <button
        data-testid="branch-next"
        disabled={isLoading || index >= branchOptions.length - 1}
        onClick={() => onSelect(branchOptions[index + 1])}
      >
        ›
      </button>
    </span>
  );
}

function AiMessage({ stream, message, index, onRegenerate }) {
  const text = contentString(message.content);
  const ref = useRef(null);
  // Record every committed DOM text of this message (the driver asserts that
  // it grew token by token).
  useLayoutEffect(() => {
    const shown = ref.current?.textContent ?? "";
    const states = window.__sg.domStates;
    const last = [...states].reverse().find((s) => s.id === message.id);
    if (!last || last.text !== shown) {
      states.push({ id: message.id, text: shown, t: performance.now() });
    }
  });
  const meta = stream.getMessagesMetadata(message, index);
  const parentCheckpoint = meta?.firstSeenState?.parent_checkpoint;
  return (
    <li
      className="message"
      data-testid="message"
      data-type="ai"
      data-id={message.id}
      data-first-seen={meta?.firstSeenState?.checkpoint?.checkpoint_id ?? ""}
    >
      <div className="role">assistant</div>
      <div className="content" data-testid="content" ref={ref}>
        {text}
      </div>
      <div className="tools">
        <BranchSwitcher
          branch={meta?.branch}
          branchOptions={meta?.branchOptions}
          onSelect={(branch) => stream.setBranch(branch)}
          isLoading={stream.isLoading}
        />
        <button
          data-testid="regenerate"
          disabled={stream.isLoading || parentCheckpoint == null}
          onClick={() => onRegenerate(parentCheckpoint)}
        >
          regenerate
        </button>
      </div>
    </li>
  );
}

function HumanMessage({ message }) {
  return (
    <li className="message" data-testid="message" data-type="human" data-id={message.id}>
      <div className="role">you</div>
      <div className="content" data-testid="content">
        {contentString(message.content)}
      </div>
    </li>
  );
}

function App() {
  const [threadId, setThreadId] = useQueryThreadId();
  const [custom, setCustom] = useState([]);
  const [input, setInput] = useState("");

  const stream = useStream({
    apiUrl,
    assistantId,
    threadId: threadId ?? null,
    fetchStateHistory: true,
    onCustomEvent: (event) => {
      window.__sg.custom.push(event);
      setCustom((prev) => [...prev, event]);
    },
    onThreadId: (id) => setThreadId(id),
    onCreated: (run) => window.__sg.runs.push(run),
    onError: (error) => window.__sg.errors.push(String(error?.message ?? error)),
  });

  const messages = stream.messages;
  const isLoading = stream.isLoading;
  const interrupt = stream.interrupt;
  const values = stream.values ?? {};

  const handleSubmit = (e) => {
    e.preventDefault();
    if (input.trim().length === 0 || isLoading) return;
    const newHumanMessage = {
      id: uuid(),
      type: "human",
      content: [{ type: "text", text: input }],
    };
    const submitted = { messages: [newHumanMessage] };
    if (extraCount !== undefined) submitted.count = extraCount;
    stream.submit(
      submitted,
      submitOptions({
        optimisticValues: (prev) => ({
          ...prev,
          messages: [...(prev.messages ?? []), newHumanMessage],
        }),
      }),
    );
    setInput("");
  };

  const handleRegenerate = (parentCheckpoint) => {
    stream.submit(undefined, submitOptions({ checkpoint: parentCheckpoint }));
  };

  const handleApprove = () => {
    // The resume value Agent Chat UI's inbox sends for "approve".
    stream.submit(
      {},
      {
        command: { resume: { decisions: [{ type: "approve" }] } },
        ...(onDisconnect ? { onDisconnect } : {}),
      },
    );
  };

  const question = interrupt && !Array.isArray(interrupt) ? interrupt.value?.question : undefined;

  return (
    <main>
      <header>
        <span>
          assistant <code data-testid="assistant-id">{assistantId}</code>
        </span>
        <span>
          thread <code data-testid="thread-id">{threadId ?? ""}</code>
        </span>
        <span>
          status <code data-testid="status">{isLoading ? "loading" : "idle"}</code>
        </span>
        <span>
          history <code data-testid="thread-loading">{stream.isThreadLoading ? "loading" : "ready"}</code>
        </span>
      </header>

      <ol id="messages" data-testid="messages">
        {messages.map((message, index) =>
          message.type === "ai" ? (
            <AiMessage
              key={message.id ?? index}
              stream={stream}
              message={message}
              index={index}
              onRegenerate={handleRegenerate}
            />
          ) : (
            <HumanMessage key={message.id ?? index} message={message} />
          ),
        )}
      </ol>

      {question !== undefined && !isLoading && (
        <div id="interrupt" data-testid="interrupt">
          <div>
            interrupt: <span data-testid="interrupt-question">{String(question)}</span> (count{" "}
            <span data-testid="interrupt-count">{String(interrupt.value?.count)}</span>)
          </div>
          <button data-testid="approve" onClick={handleApprove}>
            approve
          </button>
        </div>
      )}

      <div id="values">
        count <code data-testid="count">{values.count ?? ""}</code> · approved{" "}
        <code data-testid="approved">{values.approved ?? ""}</code>
      </div>
      <div id="custom">
        custom events <code data-testid="custom">{custom.map((e) => JSON.stringify(e)).join(" ")}</code>
      </div>

      <form onSubmit={handleSubmit}>
        <input
          data-testid="input"
          value={input}
          placeholder="Type your message..."
          onChange={(e) => setInput(e.target.value)}
        />
        {isLoading ? (
          <button type="button" data-testid="stop" onClick={() => stream.stop()}>
            stop
          </button>
        ) : (
          <button type="submit" data-testid="send" disabled={input.trim().length === 0}>
            send
          </button>
        )}
      </form>
      {stream.error != null && (
        <div id="error" data-testid="error">
          {String(stream.error?.message ?? stream.error)}
        </div>
      )}
    </main>
  );
}

createRoot(document.getElementById("root")).render(<App />);
