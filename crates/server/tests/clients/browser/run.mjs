// CLIENT-CONFORMANCE Layer 5: `useStream` (@langchain/langgraph-sdk/react) in
// Debian's Chromium against a stategraph server, driven by playwright-core.
//
//   STATEGRAPH_SERVER_URL=http://127.0.0.1:PORT node run.mjs
//   STATEGRAPH_SERVER_BIN=path/to/server node run.mjs   # starts its own (--port 0 --database-url memory)
//
// Other settings: STATEGRAPH_BROWSER_OUT (screenshots, default ./out),
// CHROMIUM_PATH (default /usr/bin/chromium), STATEGRAPH_BROWSER_TIMEOUT_S
// (the whole run, default 240).
//
// Builds the page in src/ with Vite into dist/, serves it on a free loopback
// port, runs the five scenarios, prints one line per scenario and
// `browser: N passed, M failed`; exit code 0 only when nothing failed.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const outDir = path.resolve(process.env.STATEGRAPH_BROWSER_OUT ?? path.join(here, "out"));
const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const totalTimeoutMs = Number(process.env.STATEGRAPH_BROWSER_TIMEOUT_S ?? 240) * 1000;
const SCENARIO_TIMEOUT_MS = 45_000;
const FINAL_TEXT = "Hello from the fake model";

const cleanups = [];
async function cleanup() {
  while (cleanups.length > 0) {
    const fn = cleanups.pop();
    try {
      await withTimeout(Promise.resolve().then(fn), 10_000, "cleanup");
    } catch (err) {
      console.error(`# cleanup: ${err.message}`);
    }
  }
}

const watchdog = setTimeout(async () => {
  console.log(`FAIL run: did not finish within ${totalTimeoutMs / 1000} s`);
  console.log("browser: 0 passed, 1 failed");
  await cleanup();
  process.exit(2);
}, totalTimeoutMs);

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: timed out after ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------- server

async function startServer() {
  if (process.env.STATEGRAPH_SERVER_URL) return process.env.STATEGRAPH_SERVER_URL.replace(/\/$/, "");
  const bin = process.env.STATEGRAPH_SERVER_BIN;
  if (!bin) throw new Error("set STATEGRAPH_SERVER_URL (or STATEGRAPH_SERVER_BIN to start one)");
  const child = spawn(bin, ["--port", "0", "--database-url", "memory"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  cleanups.push(async () => {
    if (child.exitCode == null) {
      child.kill("SIGTERM");
      await withTimeout(once(child, "exit"), 5000, "server exit").catch(() => child.kill("SIGKILL"));
    }
  });
  const lines = createInterface({ input: child.stdout });
  const first = await withTimeout(
    new Promise((resolve, reject) => {
      lines.once("line", resolve);
      child.once("exit", (code) => reject(new Error(`server exited with ${code}`)));
    }),
    30_000,
    "server start",
  );
  const match = /listening on (http:\/\/\S+)/.exec(first);
  if (!match) throw new Error(`unexpected first server line: ${first}`);
  return match[1];
}

// ---------------------------------------------------------------- page

async function buildPage() {
  const { build } = await import("vite");
  await build({
    root: here,
    configFile: path.join(here, "vite.config.js"),
    logLevel: "error",
    build: {
      rollupOptions: {
        onwarn(warning, warn) {
          // "use client" directives in the SDK and zod's comment placement.
          if (warning.code === "MODULE_LEVEL_DIRECTIVE" || warning.code === "INVALID_ANNOTATION") return;
          warn(warning);
        },
      },
    },
  });
}

const CONTENT_TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json",
};

async function servePage() {
  const root = path.join(here, "dist");
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, "http://x");
    const rel = url.pathname === "/" ? "index.html" : decodeURIComponent(url.pathname).replace(/^\/+/, "");
    const file = path.resolve(root, rel);
    if (!file.startsWith(root + path.sep) || !existsSync(file)) {
      res.writeHead(404).end("not found");
      return;
    }
    res.writeHead(200, {
      "content-type": CONTENT_TYPES[path.extname(file)] ?? "application/octet-stream",
      "cache-control": "no-store",
    });
    res.end(readFileSync(file));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  cleanups.push(
    () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  );
  return `http://127.0.0.1:${server.address().port}/`;
}

// ---------------------------------------------------------------- helpers

async function api(serverUrl, method, pathname, body) {
  const res = await fetch(serverUrl + pathname, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${pathname}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

function recordRequests(context, serverUrl) {
  const log = [];
  context.on("request", (req) => {
    if (!req.url().startsWith(serverUrl)) return;
    if (req.method() === "OPTIONS") return;
    const url = new URL(req.url());
    let body = null;
    const raw = req.postData();
    if (raw != null) {
      try {
        body = JSON.parse(raw);
      } catch {
        body = raw;
      }
    }
    log.push({ method: req.method(), path: url.pathname + url.search, body, raw });
  });
  return log;
}

function describe(requests) {
  return requests.map((r) => `${r.method} ${r.path}${r.raw ? " " + r.raw : ""}`).join("\n    ");
}

const tid = (page) => page.getByTestId("thread-id").textContent();

async function messageTexts(page) {
  return page.$$eval('[data-testid="message"]', (items) =>
    items.map((li) => `${li.dataset.type}: ${li.querySelector('[data-testid="content"]').textContent}`),
  );
}

async function waitIdle(page, timeout = 15_000) {
  await page.waitForFunction(
    () => document.querySelector('[data-testid="status"]')?.textContent === "idle",
    null,
    { timeout },
  );
}

async function expectText(page, testId, expected, timeout = 15_000) {
  try {
    await page.waitForFunction(
      ([id, want]) => document.querySelector(`[data-testid="${id}"]`)?.textContent === want,
      [testId, expected],
      { timeout },
    );
  } catch {
    const got = await page
      .getByTestId(testId)
      .first()
      .textContent({ timeout: 100 })
      .catch(() => "(absent)");
    throw new Error(`${testId}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(got)}`);
  }
}

function pageUrl(base, serverUrl, extra) {
  const q = new URLSearchParams({ apiUrl: serverUrl, ...extra });
  return `${base}?${q}`;
}

async function submit(page, text) {
  await page.getByTestId("input").fill(text);
  await page.getByTestId("send").click();
}

// ---------------------------------------------------------------- scenarios

function scenarios(serverUrl, base, state) {
  return [
    {
      name: "1 submit 'hi': the AI message grows token by token, then settles",
      async run({ page, requests }) {
        await page.goto(pageUrl(base, serverUrl, { assistantId: "hitl" }));
        await submit(page, "hi");
        await page.waitForFunction(
          (want) =>
            [...document.querySelectorAll('[data-type="ai"] [data-testid="content"]')].some(
              (el) => el.textContent === want,
            ),
          FINAL_TEXT,
          { timeout: 15_000 },
        );
        await waitIdle(page);
        const threadId = await tid(page);
        check(threadId.length > 0, "no thread id shown (onThreadId)");
        check(new URL(page.url()).searchParams.get("threadId") === threadId, `URL has no ?threadId=${threadId}`);
        const texts = await messageTexts(page);
        check(
          JSON.stringify(texts) === JSON.stringify(["human: hi", `ai: ${FINAL_TEXT}`]),
          `messages: ${JSON.stringify(texts)}`,
        );
        const dom = await page.evaluate(() => window.__sg.domStates);
        const aiId = await page.locator('[data-type="ai"]').getAttribute("data-id");
        const states = dom.filter((s) => s.id === aiId).map((s) => s.text);
        const intermediate = states.filter((s) => s.length > 0 && s !== FINAL_TEXT);
        check(
          intermediate.length >= 2,
          `expected >= 2 intermediate DOM states, got ${JSON.stringify(states)}`,
        );
        for (let i = 1; i < states.length; i += 1) {
          check(
            states[i].startsWith(states[i - 1]),
            `DOM text did not grow: ${JSON.stringify(states[i - 1])} -> ${JSON.stringify(states[i])}`,
          );
        }
        check(states.at(-1) === FINAL_TEXT, `settled on ${JSON.stringify(states.at(-1))}`);
        const custom = await page.evaluate(() => window.__sg.custom);
        check(
          custom.some((e) => e?.progress === "agent-start"),
          `onCustomEvent got ${JSON.stringify(custom)}`,
        );
        const run = requests.find((r) => r.method === "POST" && r.path === `/threads/${threadId}/runs/stream`);
        check(run, `no POST /threads/${threadId}/runs/stream in\n    ${describe(requests)}`);
        const modes = run.body.stream_mode ?? [];
        for (const mode of ["values", "messages-tuple", "custom"]) {
          check(modes.includes(mode), `stream_mode ${JSON.stringify(modes)} lacks ${mode}`);
        }
        check(run.body.stream_subgraphs === true, "stream_subgraphs not sent");
        check(run.body.stream_resumable === true, "stream_resumable not sent");
        check(run.body.on_disconnect === "continue", `on_disconnect ${run.body.on_disconnect}`);
        return `${states.length} DOM states: ${states.map((s) => JSON.stringify(s)).join(" -> ")}`;
      },
    },
    {
      name: "2 hitl interrupt: 'approve?' rendered, approve resumes to the end",
      async run({ page, requests }) {
        await page.goto(pageUrl(base, serverUrl, { assistantId: "hitl" }));
        await submit(page, "hi");
        await waitIdle(page);
        await expectText(page, "interrupt-question", "approve?");
        await expectText(page, "interrupt-count", "1");
        await expectText(page, "count", "1");
        const threadId = await tid(page);
        await page.getByTestId("approve").click();
        await expectText(page, "count", "101");
        await waitIdle(page);
        await expectText(page, "count", "101");
        const approved = await page.getByTestId("approved").textContent();
        check(approved.includes("approve"), `approved is ${JSON.stringify(approved)}`);
        check((await page.getByTestId("interrupt").count()) === 0, "the interrupt is still shown");
        const texts = await messageTexts(page);
        check(
          JSON.stringify(texts) === JSON.stringify(["human: hi", `ai: ${FINAL_TEXT}`]),
          `messages: ${JSON.stringify(texts)}`,
        );
        const resume = requests.find(
          (r) => r.method === "POST" && r.path === `/threads/${threadId}/runs/stream` && r.body?.command,
        );
        check(resume, `no resume request in\n    ${describe(requests)}`);
        check(resume.body.command.resume?.decisions?.[0]?.type === "approve", `resume body ${resume.raw}`);
        const serverState = await api(serverUrl, "GET", `/threads/${threadId}/state`);
        check(serverState.values.count === 101, `server state count ${serverState.values.count}`);
        check((serverState.next ?? []).length === 0, `server state next ${JSON.stringify(serverState.next)}`);
        state.thread = { id: threadId, texts, approved };
        return `thread ${threadId}: count 101, approved ${approved}`;
      },
    },
    {
      name: "3 reload with ?threadId=: one POST /history {\"limit\":10}, same messages",
      async run({ page, requests }) {
        check(state.thread, "needs scenario 2's thread");
        check(
          new URL(page.url()).searchParams.get("threadId") === state.thread.id,
          `the URL before reload is ${page.url()}`,
        );
        requests.length = 0;
        await page.reload();
        await page.waitForFunction(
          () => document.querySelectorAll('[data-testid="message"]').length >= 2,
          null,
          { timeout: 15_000 },
        );
        await waitIdle(page);
        await expectText(page, "count", "101");
        await sleep(500); // let any further request show up
        const texts = await messageTexts(page);
        check(JSON.stringify(texts) === JSON.stringify(state.thread.texts), `messages: ${JSON.stringify(texts)}`);
        await expectText(page, "approved", state.thread.approved);
        check((await page.getByTestId("interrupt").count()) === 0, "an interrupt is shown");
        check((await tid(page)) === state.thread.id, "thread id not taken from the URL");
        const expected = [`POST /threads/${state.thread.id}/history {"limit":10}`];
        const got = requests.map((r) => `${r.method} ${r.path}${r.raw ? " " + r.raw : ""}`);
        check(
          JSON.stringify(got) === JSON.stringify(expected),
          `requests on load:\n    ${got.join("\n    ")}\n  expected exactly:\n    ${expected[0]}`,
        );
        return got[0];
      },
    },
    {
      name: "4 regenerate from parent_checkpoint: a new branch, branch options switch",
      async run({ page, requests }) {
        check(state.thread, "needs scenario 2's thread");
        const ai = page.locator('[data-type="ai"]');
        const firstSeenBefore = await ai.getAttribute("data-first-seen");
        check(firstSeenBefore, "the AI message has no firstSeenState (getMessagesMetadata)");
        const history = await api(serverUrl, "POST", `/threads/${state.thread.id}/history`, { limit: 10 });
        const firstSeenState = history.find((s) => s.checkpoint.checkpoint_id === firstSeenBefore);
        check(firstSeenState?.parent_checkpoint, `no parent_checkpoint for ${firstSeenBefore}`);
        requests.length = 0;
        await page.getByTestId("regenerate").click();
        await expectText(page, "interrupt-question", "approve?");
        await waitIdle(page);
        await expectText(page, "count", "1");
        const run = requests.find((r) => r.method === "POST" && r.path.endsWith("/runs/stream"));
        check(run, `no run request in\n    ${describe(requests)}`);
        check(
          run.body.checkpoint?.checkpoint_id === firstSeenState.parent_checkpoint.checkpoint_id,
          `regenerate sent checkpoint ${JSON.stringify(run.body.checkpoint)}, expected ${firstSeenState.parent_checkpoint.checkpoint_id}`,
        );
        try {
          await expectText(page, "branch-position", "2 / 2", 5000);
        } catch (err) {
          const firstSeenAfter = await ai.getAttribute("data-first-seen");
          const ids = await page.$$eval('[data-type="ai"]', (els) => els.map((e) => e.dataset.id));
          // getMessagesMetadata finds a message's firstSeenState by message id:
          // show where in the history each AI message id is.
          const after = await api(serverUrl, "POST", `/threads/${state.thread.id}/history`, { limit: 10 });
          const seen = after
            .map((s) => {
              const aiIds = (s.values?.messages ?? []).filter((m) => m.type === "ai").map((m) => m.id);
              return `${s.checkpoint.checkpoint_id} (parent ${s.parent_checkpoint?.checkpoint_id ?? "-"}): ai ${JSON.stringify(aiIds)}`;
            })
            .join("\n    ");
          throw new Error(
            `${err.message}\nAI message ids shown ${JSON.stringify(ids)}, firstSeenState ${firstSeenAfter} (before regenerate ${firstSeenBefore}); history:\n    ${seen}`,
          );
        }
        const texts = await messageTexts(page);
        check(
          JSON.stringify(texts) === JSON.stringify(["human: hi", `ai: ${FINAL_TEXT}`]),
          `messages on the new branch: ${JSON.stringify(texts)}`,
        );
        await page.screenshot({ path: path.join(outDir, "4-new-branch.png"), fullPage: true });
        await page.getByTestId("branch-prev").click();
        await expectText(page, "branch-position", "1 / 2");
        await expectText(page, "count", "101");
        check((await page.getByTestId("interrupt").count()) === 0, "the old branch shows an interrupt");
        await page.screenshot({ path: path.join(outDir, "4-old-branch.png"), fullPage: true });
        await page.getByTestId("branch-next").click();
        await expectText(page, "branch-position", "2 / 2");
        await expectText(page, "count", "1");
        await expectText(page, "interrupt-question", "approve?");
        return "2 branches at the AI message; 1/2 count 101, 2/2 count 1 at the interrupt";
      },
    },
    {
      name: "5 stop mid-run with onDisconnect cancel: UI stops, run ends interrupted",
      async run({ page, requests }) {
        // `simple` sleeps count/10 s: 100 -> 10 s.
        await page.goto(
          pageUrl(base, serverUrl, { assistantId: "simple", count: "100", onDisconnect: "cancel" }),
        );
        await submit(page, "take your time");
        await page.waitForFunction(() => window.__sg.runs.length > 0, null, { timeout: 10_000 });
        await expectText(page, "status", "loading");
        const { run_id: runId, thread_id: threadId } = await page.evaluate(() => window.__sg.runs[0]);
        // Stop once the run is running on the server and past its first
        // checkpoint (a queued run that is cancelled never writes one).
        let before;
        for (let i = 0; i < 50; i += 1) {
          before = await api(serverUrl, "GET", `/threads/${threadId}/runs/${runId}`);
          if (before.status !== "pending") break;
          await sleep(100);
        }
        check(before.status === "running", `run status before stop: ${before.status}`);
        await sleep(500);
        check((await page.getByTestId("stop").count()) === 1, "no stop button while the run streams");
        await page.screenshot({ path: path.join(outDir, "5-running.png"), fullPage: true });
        const stoppedAt = Date.now();
        await page.getByTestId("stop").click();
        await expectText(page, "status", "idle", 5000);
        check((await page.getByTestId("stop").count()) === 0, "the stop button is still shown");
        check((await page.getByTestId("send").count()) === 1, "no send button after stop");
        let status;
        for (let i = 0; i < 40; i += 1) {
          status = (await api(serverUrl, "GET", `/threads/${threadId}/runs/${runId}`)).status;
          if (!["pending", "running"].includes(status)) break;
          await sleep(100);
        }
        const took = Date.now() - stoppedAt;
        const runs = await api(serverUrl, "GET", `/threads/${threadId}/runs`);
        const sent = requests.find((r) => r.method === "POST" && r.path === `/threads/${threadId}/runs/stream`);
        check(sent?.body?.on_disconnect === "cancel", `on_disconnect sent: ${sent?.body?.on_disconnect}`);
        check(
          status === "interrupted",
          `run ${runId} is ${status} ${took} ms after stop (GET /threads/${threadId}/runs: ${JSON.stringify(
            runs.map((r) => [r.run_id, r.status]),
          )})`,
        );
        const texts = await messageTexts(page);
        check(texts[0] === "human: take your time", `messages after stop: ${JSON.stringify(texts)}`);
        // The node never finished: the state shown after stop is the input's.
        await expectText(page, "count", "100");
        if ((await page.getByTestId("error").count()) > 0) {
          throw new Error(`error shown: ${await page.getByTestId("error").textContent()}`);
        }
        return `run ${status} ${took} ms after stop`;
      },
    },
  ];
}

// ---------------------------------------------------------------- main

async function main() {
  const started = Date.now();
  mkdirSync(outDir, { recursive: true });
  for (const name of readdirSync(outDir)) {
    if (/^\d-.*\.png$/.test(name)) rmSync(path.join(outDir, name));
  }
  const serverUrl = await startServer();
  await buildPage();
  const base = await servePage();
  const { chromium } = await import("playwright-core");
  console.log(`# server ${serverUrl}, page ${base}, chromium ${chromiumPath}, screenshots ${outDir}`);
  const browser = await withTimeout(
    chromium.launch({
      executablePath: chromiumPath,
      headless: true,
      chromiumSandbox: false,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
      timeout: 30_000,
    }),
    40_000,
    "chromium launch",
  );
  cleanups.push(() => browser.close());
  console.log(`# chromium ${browser.version()}`);
  const context = await browser.newContext({ viewport: { width: 900, height: 640 } });
  const requests = recordRequests(context, serverUrl);
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  const pageErrors = [];
  page.on("pageerror", (err) => pageErrors.push(`pageerror: ${err.message}`));
  page.on("console", (msg) => {
    if (msg.type() === "error") pageErrors.push(`console.error: ${msg.text()}`);
  });

  const state = {};
  let passed = 0;
  let failed = 0;
  for (const [i, scenario] of scenarios(serverUrl, base, state).entries()) {
    requests.length = 0;
    pageErrors.length = 0;
    const t0 = Date.now();
    let detail;
    let error;
    try {
      detail = await withTimeout(scenario.run({ page, requests }), SCENARIO_TIMEOUT_MS, "scenario");
    } catch (err) {
      error = err;
    }
    const shot = path.join(outDir, `${i + 1}-${error ? "fail" : "ok"}.png`);
    await page.screenshot({ path: shot, fullPage: true, timeout: 10_000 }).catch(() => {});
    const secs = ((Date.now() - t0) / 1000).toFixed(1);
    if (error) {
      failed += 1;
      console.log(`FAIL ${scenario.name} (${secs} s)\n  ${error.message.replace(/\n/g, "\n  ")}`);
      if (pageErrors.length) console.log(`  page: ${pageErrors.join("\n  page: ")}`);
      console.log(`  requests:\n    ${describe(requests)}`);
    } else {
      passed += 1;
      console.log(`ok   ${scenario.name} (${secs} s)${detail ? `\n     ${detail}` : ""}`);
    }
  }
  console.log(`# wall time ${((Date.now() - started) / 1000).toFixed(1)} s`);
  console.log(`browser: ${passed} passed, ${failed} failed`);
  return failed === 0 ? 0 : 1;
}

let code = 1;
try {
  code = await main();
} catch (err) {
  console.log(`FAIL setup: ${err.stack ?? err}`);
  console.log("browser: 0 passed, 1 failed");
  code = 1;
}
await cleanup();
clearTimeout(watchdog);
process.exit(code);
