// Copied from shared/server/js_client_check.mjs (CLIENT-CONFORMANCE Layer 4).
// Only change: the SDK is resolved from the *working directory* (one of the
// sdk-<version>/ folders beside this file, each with its own node_modules from
// `npm ci`) instead of from this file's folder, so this one file runs against
// every pinned SDK version: `cd sdk-1.15.0 && node ../js_client_check.mjs URL`.
// The ESM entry (exports["."].import) is loaded, as a bare ESM import would.
// The checks and the closing "N passed, M failed" line are unchanged.
//
// Drive a LangGraph-API-compatible server with the official JS SDK
// (@langchain/langgraph-sdk 1.x, the line Agent Chat UI depends on) and
// print what the SDK saw. Written for this project; loopback only.
//
// Usage (from a folder where `npm ci` installed @langchain/langgraph-sdk):
//   node ../js_client_check.mjs http://127.0.0.1:2124
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

const sdkPkgPath = createRequire(join(process.cwd(), "package.json"))
  .resolve("@langchain/langgraph-sdk/package.json");
const sdkPkg = JSON.parse(readFileSync(sdkPkgPath, "utf8"));
const sdkEntry = sdkPkg.exports["."].import;
const { Client } = await import(
  pathToFileURL(join(dirname(sdkPkgPath), typeof sdkEntry === "string" ? sdkEntry : sdkEntry.default)).href);
console.log(`# @langchain/langgraph-sdk ${sdkPkg.version} from ${dirname(sdkPkgPath)}`);

const url = process.argv[2] ?? "http://127.0.0.1:2124";
const host = new URL(url).hostname;
if (!["127.0.0.1", "localhost", "[::1]"].includes(host)) {
  console.error("refusing to talk to a non-loopback host");
  process.exit(2);
}

const seen = [];
const client = new Client({
  apiUrl: url,
  // log every request the SDK makes (method, path, body) without changing it
  onRequest: (u, init) => {
    seen.push(`${init.method ?? "GET"} ${new URL(u).pathname}${new URL(u).search}` +
      (init.body ? `  ${String(init.body).slice(0, 300)}` : "") +
      (() => {
        const h = new Headers(init.headers ?? {});
        return h.get("last-event-id") ? `  Last-Event-ID=${h.get("last-event-id")}` : "";
      })());
    return init;
  },
});

const fails = [];
let passed = 0;
const check = (cond, what) => {
  if (cond) passed += 1; else fails.push(what);
  console.log(`${cond ? "ok  " : "FAIL"} ${what}`);
};

const assistants = await client.assistants.search({ graphId: "hitl", limit: 10 });
check(assistants.length >= 1 && assistants[0].graph_id === "hitl", "assistants.search finds the hitl assistant");

const thread = await client.threads.create({ metadata: { via: "js-check" } });
check(typeof thread.thread_id === "string", "threads.create returns a thread_id");

let created = null;
const events = [];
for await (const part of client.runs.stream(thread.thread_id, "hitl", {
  input: { messages: [{ type: "human", content: "hi from js" }] },
  streamMode: ["values", "messages-tuple", "updates"],
  streamSubgraphs: true,
  streamResumable: true,
  onDisconnect: "continue",
  onRunCreated: (meta) => { created = meta; },
})) {
  events.push(part.event);
}
check(created && created.run_id && created.thread_id === thread.thread_id, "onRunCreated got run_id/thread_id from Content-Location");
check(events[0] === "metadata", "first SSE event is metadata");
check(events.includes("messages"), "messages-tuple arrives as SSE event `messages`");
check(events.includes("values") && events.includes("updates"), "values and updates arrive");

const state = await client.threads.getState(thread.thread_id);
check(Array.isArray(state.next) && state.next[0] === "review", "getState shows next=[review] at the interrupt");
check(state.tasks?.[0]?.interrupts?.length === 1, "getState shows the pending interrupt on tasks[0]");

const history = await client.threads.getHistory(thread.thread_id, { limit: 10 });
check(history.length >= 2 && history[0].checkpoint?.checkpoint_id, "getHistory (POST /history) returns checkpoints newest first");

// Rejoin the finished resumable run from the start, as useStream does after a reload.
const replay = [];
for await (const part of client.runs.joinStream(thread.thread_id, created.run_id, { lastEventId: "-1" })) {
  replay.push([part.event, part.id]);
}
check(replay.length >= 2 && replay.every(([, id]) => typeof id === "string" && id.length > 0), "joinStream with Last-Event-ID -1 replays events that carry ids");

// Resume with a Command, as Agent Chat UI's interrupt panel does: it sends
// `input: {}` together with the command; the server must let the command win.
const resumed = [];
for await (const part of client.runs.stream(thread.thread_id, "hitl", {
  input: {},
  command: { resume: "approved-from-js" },
  streamMode: ["values"],
})) {
  resumed.push(part);
}
const last = resumed.filter((p) => p.event === "values").at(-1);
check(last?.data?.approved === "approved-from-js", "Command resume reaches the node (approved == resume value)");

const found = await client.threads.search({ metadata: { graph_id: "hitl" }, limit: 100 });
check(found.some((t) => t.thread_id === thread.thread_id), "threads.search by metadata finds the thread (Agent Chat UI sidebar)");

console.log("\nrequests issued by the SDK:");
for (const line of seen) console.log("  " + line.replaceAll(thread.thread_id, "<thread>").replaceAll(created?.run_id ?? "<none>", "<run>"));
console.log(`\n${passed} passed, ${fails.length} failed`);
process.exit(fails.length ? 1 : 0);
