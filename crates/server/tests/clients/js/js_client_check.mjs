// Copied from shared/server/js_client_check.mjs (CLIENT-CONFORMANCE Layer 4).
// Only change: the SDK is resolved from the *working directory* (one of the
// sdk-<version>/ folders beside this file, each with its own node_modules from
// `npm ci`) instead of from this file's folder, so this one file runs against
// every pinned SDK version: `cd sdk-1.15.0 && node ../js_client_check.mjs URL`.
// The ESM entry (exports["."].import) is loaded, as a bare ESM import would.
// The first 12 checks and the closing "N passed, M failed" line are unchanged.
//
// Extended (CLIENT-CONFORMANCE Layer 4, "extend with ..."): runs.wait (hitl
// interrupt in `__interrupt__`, resume with `command`, stateless, `__error__`),
// runs.cancel (wait=true) of a background `simple` run, the store calls,
// assistants create/get/update/getVersions/setLatest/delete, and the Client's
// retry path: a tiny loopback proxy (node:http, below) answers 503 once to a
// chosen request and forwards everything else; a second Client points at it.
// Every new check catches its own exception, so one failure does not hide the
// others and the number of check lines stays the same.
//
// Drive a LangGraph-API-compatible server with the official JS SDK
// (@langchain/langgraph-sdk 1.x, the line Agent Chat UI depends on) and
// print what the SDK saw. Written for this project; loopback only.
//
// Usage (from a folder where `npm ci` installed @langchain/langgraph-sdk):
//   node ../js_client_check.mjs http://127.0.0.1:2124
import { createRequire } from "node:module";
import http from "node:http";
import { isDeepStrictEqual } from "node:util";
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


// ---------------------------------------------------------------------------
// Extended checks. `evaluate` runs one check's body, which may throw: a throw
// makes it fail with the error text in its line, never a crash. `attempt`
// evaluates and prints at once.
const evaluate = async (what, body) => {
  try {
    return [(await body()) === true, what];
  } catch (err) {
    const text = String(err?.message ?? err).slice(0, 200);
    const status = err?.status && !text.startsWith(`HTTP ${err.status}`) ? `HTTP ${err.status} ` : "";
    return [false, `${what}  (threw ${status}${text})`];
  }
};
const attempt = async (what, body) => check(...(await evaluate(what, body)));
const uuidLike = (x) => typeof x === "string" && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(x);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// --- runs.wait -------------------------------------------------------------
let waitThread = null;
let waitCreated = null;
await attempt("runs.wait (POST /threads/{id}/runs/wait) returns the values with __interrupt__ at the hitl interrupt", async () => {
  waitThread = await client.threads.create({ metadata: { via: "js-check-wait" } });
  const values = await client.runs.wait(waitThread.thread_id, "hitl", {
    input: { messages: [{ type: "human", content: "wait from js" }] },
    onRunCreated: (meta) => { waitCreated = meta; },
  });
  return values?.__interrupt__?.[0]?.value?.question === "approve?" &&
    values.count === 1 && values.messages?.length === 2 && values.messages[1].type === "ai";
});
check(uuidLike(waitCreated?.run_id) && waitCreated?.thread_id === waitThread?.thread_id,
  "runs.wait onRunCreated got run_id/thread_id from Content-Location");
await attempt("runs.wait resuming with command returns the final values (approved, count 101, no __interrupt__)", async () => {
  const values = await client.runs.wait(waitThread.thread_id, "hitl", {
    command: { resume: "approved-by-wait" },
  });
  return values?.approved === "approved-by-wait" && values.count === 101 && !("__interrupt__" in values);
});
await attempt("stateless runs.wait (POST /runs/wait) on simple returns {count: 2}", async () => {
  const values = await client.runs.wait(null, "simple", { input: { count: 1 } });
  return values?.count === 2;
});
await attempt("runs.wait on boom rejects with `ValueError: boom...` (HTTP 200 + __error__)", async () => {
  try {
    await client.runs.wait(null, "boom", { input: {} });
  } catch (err) {
    return !err?.status && String(err?.message).startsWith("ValueError: boom");
  }
  return false;
});

// --- runs.cancel -----------------------------------------------------------
let cancelThread = null;
let cancelRun = null;
await attempt("runs.create of a background simple run (count 50) returns a pending run", async () => {
  cancelThread = await client.threads.create({ metadata: { via: "js-check-cancel" } });
  cancelRun = await client.runs.create(cancelThread.thread_id, "simple", { input: { count: 50 } });
  return uuidLike(cancelRun?.run_id) && cancelRun.status === "pending";
});
await attempt("runs.cancel(wait=true) of the running run returns well before its 5 s sleep ends", async () => {
  // let it start (the official dev server's queue polls every 0.5 s)
  for (let i = 0; i < 60; i += 1) {
    const run = await client.runs.get(cancelThread.thread_id, cancelRun.run_id);
    if (run.status !== "pending") break;
    await sleep(50);
  }
  const t0 = Date.now();
  await client.runs.cancel(cancelThread.thread_id, cancelRun.run_id, true);
  return Date.now() - t0 < 3000;
});
await attempt("runs.get after the cancel shows status interrupted", async () => {
  const run = await client.runs.get(cancelThread.thread_id, cancelRun.run_id);
  return run?.status === "interrupted";
});

// --- store -----------------------------------------------------------------
const ns = ["jscheck", `n${Date.now()}${Math.floor(Math.random() * 1e6)}`];
await attempt("store.putItem then getItem returns the item (namespace, key, value, createdAt)", async () => {
  const put = await client.store.putItem(ns, "prefs", { theme: "dark", lang: "en" });
  await client.store.putItem(ns, "other", { theme: "light" });
  const item = await client.store.getItem(ns, "prefs");
  return put === undefined && item?.key === "prefs" &&
    isDeepStrictEqual(item.namespace, ns) &&
    // key order inside a JSON object carries no meaning: compare as values
    isDeepStrictEqual(item.value, { theme: "dark", lang: "en" }) &&
    typeof item.createdAt === "string" && typeof item.updatedAt === "string";
});
await attempt("store.getItem of a missing key resolves to null", async () =>
  (await client.store.getItem(ns, "missing")) === null);
await attempt("store.searchItems with a filter finds only the matching item", async () => {
  const { items } = await client.store.searchItems(ns, { filter: { theme: "dark" } });
  const all = await client.store.searchItems(ns);
  return items.length === 1 && items[0].key === "prefs" && items[0].value.lang === "en" &&
    all.items.length === 2;
});
await attempt("store.listNamespaces with a prefix returns {namespaces: [[...]]}", async () => {
  const res = await client.store.listNamespaces({ prefix: ns });
  return isDeepStrictEqual(res?.namespaces, [ns]);
});
await attempt("store.deleteItem removes the item (getItem then resolves to null)", async () => {
  const del = await client.store.deleteItem(ns, "prefs");
  await client.store.deleteItem(ns, "other");
  return del === undefined && (await client.store.getItem(ns, "prefs")) === null;
});

// --- assistants ------------------------------------------------------------
let asst = null;
await attempt("assistants.create returns a new assistant (version 1, graph_id, name, metadata)", async () => {
  asst = await client.assistants.create({
    graphId: "simple",
    name: "js-check-assistant",
    config: { configurable: { model: "fake" } },
    metadata: { via: "js-check" },
  });
  return uuidLike(asst?.assistant_id) && asst.graph_id === "simple" && asst.version === 1 &&
    asst.name === "js-check-assistant" && asst.metadata?.via === "js-check";
});
await attempt("assistants.get returns it", async () => {
  const got = await client.assistants.get(asst.assistant_id);
  return got?.assistant_id === asst.assistant_id && got.name === "js-check-assistant" && got.version === 1;
});
await attempt("assistants.update (PATCH) gives version 2 with the new metadata", async () => {
  const upd = await client.assistants.update(asst.assistant_id, { metadata: { via: "js-check", v: 2 } });
  return upd?.version === 2 && upd.metadata?.v === 2 && upd.name === "js-check-assistant";
});
await attempt("assistants.getVersions lists versions 2 and 1, newest first", async () => {
  const versions = await client.assistants.getVersions(asst.assistant_id);
  return versions.length === 2 && versions[0].version === 2 && versions[1].version === 1 &&
    versions[0].metadata?.v === 2 && versions[1].metadata?.v === undefined;
});
await attempt("assistants.setLatest(1) makes version 1 current again", async () => {
  const latest = await client.assistants.setLatest(asst.assistant_id, 1);
  const got = await client.assistants.get(asst.assistant_id);
  return latest?.version === 1 && got.version === 1 && got.metadata?.v === undefined;
});
await attempt("assistants.delete, then get rejects with 404", async () => {
  const del = await client.assistants.delete(asst.assistant_id);
  try {
    await client.assistants.get(asst.assistant_id);
  } catch (err) {
    return del === undefined && err?.status === 404;
  }
  return false;
});

// --- retry path through a fault-injecting loopback proxy --------------------
// Which 5xx the installed SDK retries is read from its own AsyncCaller
// (dist/utils/async_caller.js): in 1.15.0 `callWithRetry` sets
// `retryAnyFailure = method === undefined || IDEMPOTENT_METHODS.includes(method)`
// with IDEMPOTENT_METHODS = GET, HEAD, OPTIONS, PUT, DELETE, and ends
// `onFailedAttempt` with `if (!retryAnyFailure && !isConnectError(error)) throw error`,
// so a 503 on a POST is not retried; 2.0.0's `call` retries every status not in
// STATUS_NO_RETRY (400-409, 422) whatever the method. Both retry after 1-2 s
// (p-retry minTimeout 1000, randomize), so the two calls below run together.
const callerSrc = readFileSync(join(dirname(sdkPkgPath), "dist", "utils", "async_caller.js"), "utf8");
const retriesPost5xx = !callerSrc.includes("IDEMPOTENT_METHODS");
console.log(`# this SDK's AsyncCaller retries a 5xx on POST: ${retriesPost5xx ? "yes" : "no (idempotent methods only)"}`);

function startFaultProxy(target) {
  const up = new URL(target);
  const log = [];
  const faults = []; // {method, path, left}: answer 503 to the next `left` matches
  const server = http.createServer((req, res) => {
    const path = req.url.split("?")[0];
    const fault = faults.find((f) => f.method === req.method && f.path === path && f.left > 0);
    if (fault) {
      fault.left -= 1;
      log.push(`${req.method} ${req.url} -> 503 injected`);
      req.resume();
      req.on("end", () => {
        res.writeHead(503, { "content-type": "application/json" });
        res.end(JSON.stringify({ detail: "injected by js_client_check proxy" }));
      });
      return;
    }
    const fwd = http.request({
      host: up.hostname.replace(/^\[|\]$/g, ""),
      port: up.port || 80,
      method: req.method,
      path: req.url,
      headers: { ...req.headers, host: up.host },
    }, (upRes) => {
      log.push(`${req.method} ${req.url} -> ${upRes.statusCode} forwarded`);
      res.writeHead(upRes.statusCode, upRes.headers);
      upRes.pipe(res);
    });
    fwd.on("error", (err) => {
      log.push(`${req.method} ${req.url} -> 502 (${err.message})`);
      if (!res.headersSent) res.writeHead(502, { "content-type": "application/json" });
      res.end(JSON.stringify({ detail: `proxy: ${err.message}` }));
    });
    req.pipe(fwd);
  });
  return new Promise((resolve, reject) => {
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => resolve({
      url: `http://127.0.0.1:${server.address().port}`,
      log,
      failOnce: (method, path) => faults.push({ method, path, left: 1 }),
      hits: (method, path) => log.filter((l) => l.startsWith(`${method} ${path}`) &&
        (l[`${method} ${path}`.length] === " " || l[`${method} ${path}`.length] === "?")).length,
      close: () => new Promise((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
    }));
  });
}

const getWhat = "retry: GET /threads/{id} answered 503 once is retried and succeeds (proxy saw 2 requests)";
const postWhat = retriesPost5xx
  ? "retry: POST /threads/search answered 503 once is retried and succeeds (proxy saw 2 requests)"
  : "retry: POST /threads/search answered 503 is not retried by this SDK (rejects with status 503, proxy saw 1 request)";
let proxy = null;
try {
  proxy = await startFaultProxy(url);
} catch (err) {
  for (const what of [getWhat, postWhat]) check(false, `${what}  (the proxy did not start: ${err.message})`);
}
if (proxy) {
  try {
    const viaProxy = new Client({ apiUrl: proxy.url });
    const getPath = `/threads/${thread.thread_id}`;
    proxy.failOnce("GET", getPath);
    proxy.failOnce("POST", "/threads/search");
    const getCheck = evaluate(getWhat, async () => {
      const got = await viaProxy.threads.get(thread.thread_id);
      return got?.thread_id === thread.thread_id && proxy.hits("GET", getPath) === 2;
    });
    const postCheck = evaluate(postWhat, async () => {
      let res;
      try {
        res = await viaProxy.threads.search({ metadata: { graph_id: "hitl" }, limit: 100 });
      } catch (err) {
        if (retriesPost5xx) throw err;
        return err?.status === 503 && proxy.hits("POST", "/threads/search") === 1;
      }
      return retriesPost5xx && res.some((t) => t.thread_id === thread.thread_id) &&
        proxy.hits("POST", "/threads/search") === 2;
    });
    // both wait out the SDK's 1-2 s backoff at once; lines print in a fixed order
    for (const result of await Promise.all([getCheck, postCheck])) check(...result);
  } finally {
    await proxy.close();
  }
}
if (proxy) {
  console.log("\nrequests seen by the retry proxy:");
  for (const line of proxy.log) console.log("  " + line.replaceAll(thread.thread_id, "<thread>"));
}

// Ids in the listing: the first thread and run keep their old names, every
// other UUID gets a short label in order of appearance.
const labels = new Map([[thread.thread_id, "<thread>"], [created?.run_id, "<run>"]]);
const label = (id) => {
  if (!labels.has(id)) labels.set(id, `<id${labels.size - 1}>`);
  return labels.get(id);
};
console.log("\nrequests issued by the SDK:");
for (const line of seen) {
  console.log("  " + line.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, label));
}
console.log(`\n${passed} passed, ${fails.length} failed`);
process.exit(fails.length ? 1 : 0);
