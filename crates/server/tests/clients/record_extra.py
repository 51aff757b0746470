#!/usr/bin/env python3
"""Record extra request/response shapes from a LangGraph-API-compatible server.

Complements shared/server/TRANSCRIPTS.md: failed-run threads, 404 texts, if_exists,
state/history of fresh threads, update_state (busy and idle), stateless runs,
heartbeats, thread search/count, run lists, copy/patch, 422 texts and multitask.

It talks to ONE loopback base URL (--url), uses the fixture graphs of
shared/server/fixture (hitl, simple, parent, boom) and prints Markdown to stdout.
Raw exchanges use httpx directly; scenario f also drives the official Python SDK
(langgraph_sdk) and logs every HTTP request it makes.

Usage:
    python record_extra.py --url http://127.0.0.1:2124 > official-extra.md
    python record_extra.py --url http://127.0.0.1:2124 --normalize   # ids/timestamps -> placeholders
    python record_extra.py --url ... --only a,b                      # some scenarios only

Note: the official in-memory server has ONE background worker, so runs on different
threads are executed one after another; every scenario waits for its runs to end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
import uuid
from typing import Any

import httpx

LINES: list[str] = []
NORMALIZE = False
_IDS: dict[str, str] = {}
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TS = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:\+00:00|Z)?")
_HEX32 = re.compile(r"\b[0-9a-f]{32}\b")
_EID = re.compile(r"\b\d{13}-\d+\b")


def out(s: str = "") -> None:
    LINES.append(s)
    if s.startswith("## "):
        print(s, file=sys.stderr, flush=True)


def n(s: str) -> str:
    """Normalise ids and timestamps when --normalize is given."""
    if not NORMALIZE:
        return s
    s = _UUID.sub(lambda m: _IDS.setdefault(m.group(0), f"<id{len(_IDS) + 1}>"), s)
    s = _HEX32.sub(lambda m: _IDS.setdefault(m.group(0), f"<iid{len(_IDS) + 1}>"), s)
    s = _EID.sub("<eid>", s)
    return _TS.sub("<ts>", s)


def shorten(v: Any, max_list: int = 6, max_str: int = 300) -> Any:
    if isinstance(v, dict):
        return {k: shorten(x, max_list, max_str) for k, x in v.items()}
    if isinstance(v, list):
        res = [shorten(x, max_list, max_str) for x in v[:max_list]]
        if len(v) > max_list:
            res.append(f"...(+{len(v) - max_list} more items)")
        return res
    if isinstance(v, str) and len(v) > max_str:
        return v[:max_str] + f"...(+{len(v) - max_str} chars)"
    return v


def pj(v: Any, indent: int | None = 2) -> str:
    return json.dumps(v, indent=indent, ensure_ascii=False, default=str)


HEADERS = ("content-type", "location", "content-location", "x-pagination-total",
           "x-pagination-next", "cache-control", "x-accel-buffering")


def note(s: str) -> None:
    out(n(s))
    out()


class Rec:
    def __init__(self, c: httpx.AsyncClient):
        self.c = c

    # ------------------------------------------------------------ plain request
    async def req(self, method: str, path: str, body: Any = None, *, params: Any = None,
                  raw: bool = False, max_list: int = 6, show: bool = True,
                  content: bytes | None = None) -> httpx.Response:
        if show:
            self._show_req(method, path, body, params, content)
        for attempt in range(2):
            try:
                if content is not None:
                    r = await self.c.request(method, path, content=content, params=params,
                                             headers={"content-type": "application/json"})
                else:
                    r = await self.c.request(method, path, json=body, params=params)
                break
            except (httpx.ReadError, httpx.RemoteProtocolError) as exc:
                # the official server drops the keep-alive connection after a 500
                if attempt:
                    raise
                if show:
                    note(f"({type(exc).__name__} on a reused connection: request sent again on a new one)")
        if show:
            self._show_resp(r, raw=raw, max_list=max_list)
        return r

    def _show_req(self, method, path, body, params, content=None, extra_headers=None):
        q = ("?" + str(httpx.QueryParams(params))) if params else ""
        out("```http")
        out(n(f"{method} {path}{q}"))
        for k, v in (extra_headers or {}).items():
            out(f"{k}: {v}")
        if content is not None:
            out("content-type: application/json")
            out("")
            out(n(content.decode()))
        elif body is not None:
            out("content-type: application/json")
            out("")
            out(n(pj(body)))
        out("```")

    def _show_head(self, r: httpx.Response):
        out("```http")
        out(f"HTTP/1.1 {r.status_code} {r.reason_phrase}")
        for h in HEADERS:
            if h in r.headers:
                out(n(f"{h}: {r.headers[h]}"))

    def _show_resp(self, r: httpx.Response, raw: bool, max_list: int):
        self._show_head(r)
        out("")
        if not r.content:
            out("(empty body)")
        else:
            try:
                # error texts are shown in full
                ms = 10**9 if r.status_code >= 400 else 300
                out(n(pj(shorten(r.json(), max_list=max_list, max_str=ms))))
            except ValueError:
                out(n(r.text[:1500]))
            if raw and (r.status_code >= 400 or len(r.content) <= 600):
                out(n(f"raw body bytes: {r.content!r}"))
        out("```")
        out("")

    # ------------------------------------------------------------ timed raw body (wait/join)
    async def timed_body(self, method: str, path: str, body: Any = None) -> httpx.Response | None:
        """Show when each chunk of a (possibly slow) JSON body arrives."""
        self._show_req(method, path, body, None)
        t0 = time.monotonic()
        chunks: list[tuple[float, bytes]] = []
        async with self.c.stream(method, path, json=body) as r:
            self._show_head(r)
            out("")
            async for ch in r.aiter_raw():
                chunks.append((time.monotonic() - t0, ch))
        out("body chunks as they arrived (python repr, +seconds since request):")
        for t, ch in chunks:
            out(n(f"[+{t:5.2f}s] {ch[:400]!r}"))
        out("```")
        out("")
        return r

    # ------------------------------------------------------------ SSE
    async def sse(self, method: str, path: str, body: Any = None, *, params: Any = None,
                  headers: dict | None = None, timing: bool = False, collapse_after: int = 3,
                  stop_after: float | None = None) -> tuple[httpx.Response, list[tuple[str, str]]]:
        hdrs = {"Accept": "text/event-stream", **(headers or {})}
        self._show_req(method, path, body, params, extra_headers=hdrs)
        t0 = time.monotonic()
        events: list[tuple[str, str]] = []
        shown: list[str] = []
        first_raw: bytes | None = None
        first_comment: bytes | None = None
        run_name, run_len = None, 0
        async with self.c.stream(method, path, json=body, params=params, headers=hdrs) as r:
            self._show_head(r)
            out("```")
            if r.status_code >= 300:
                await r.aread()
                out("```text")
                out(n(f"body: {r.text[:1500]}"))
                out("```")
                out("")
                return r, events
            buf = b""
            closed_by_client = False

            def flush_collapsed():
                nonlocal run_len
                if run_len > collapse_after:
                    shown.append(f"(... {run_len - collapse_after} more `{run_name}` event(s) of the same kind)")
                    shown.append("")

            async for chunk in r.aiter_raw():
                buf += chunk
                while True:
                    m = re.search(rb"\r\n\r\n|\n\n|\r\r", buf)
                    if not m:
                        break
                    block, buf = buf[:m.start()], buf[m.end():]
                    el = time.monotonic() - t0
                    if first_raw is None and not block.startswith(b":"):
                        first_raw = block + m.group(0)
                    if first_comment is None and block.startswith(b":"):
                        first_comment = block + m.group(0)
                    text = block.decode("utf-8", "replace")
                    lines = re.split(r"\r\n|\n|\r", text)
                    name = ""
                    for ln in lines:
                        if ln.startswith("event:"):
                            name = ln[6:].strip()
                    if not name and all(ln.startswith(":") for ln in lines):
                        name = "(comment)"
                    events.append((name, text))
                    if name == run_name and name != "(comment)":
                        run_len += 1
                        if run_len > collapse_after:
                            continue
                    else:
                        flush_collapsed()
                        run_name, run_len = name, 1
                    prefix = f"[+{el:5.2f}s] " if timing else ""
                    for i, ln in enumerate(lines):
                        if ln.startswith("data:") and len(ln) > 700:
                            ln = ln[:700] + f"...(+{len(ln) - 700} chars)"
                        shown.append(n((prefix if i == 0 else " " * len(prefix)) + ln))
                    shown.append("")
                if stop_after is not None and time.monotonic() - t0 > stop_after:
                    closed_by_client = True
                    break
            flush_collapsed()
            el = time.monotonic() - t0
        if first_raw is not None:
            out("```text")
            out("first event, raw bytes: " + n(repr(first_raw[:300])))
            out("```")
        if first_comment is not None:
            out("```text")
            out("first comment block, raw bytes: " + repr(first_comment))
            out("```")
        out("```text")
        out("\n".join(shown).rstrip())
        if closed_by_client:
            out(f"(client closed the connection after {el:.1f}s)")
        else:
            out(f"(server closed the stream after {el:.2f}s; {len(events)} blocks incl. comments)")
        out("```")
        out("")
        return r, events

    # ------------------------------------------------------------ helpers
    async def rq(self, method: str, path: str, **kw) -> httpx.Response:
        """Unprinted request, sent again once if a reused connection was dropped."""
        try:
            return await self.c.request(method, path, **kw)
        except (httpx.ReadError, httpx.RemoteProtocolError):
            return await self.c.request(method, path, **kw)

    async def thread(self, **meta) -> str:
        r = await self.c.post("/threads", json={"metadata": meta} if meta else {})
        r.raise_for_status()
        return r.json()["thread_id"]

    async def run_status(self, tid: str, rid: str) -> str:
        r = await self.c.get(f"/threads/{tid}/runs/{rid}")
        return str(r.status_code) if r.status_code != 200 else r.json()["status"]

    async def wait_for(self, tid: str, rid: str, want: set[str], timeout: float = 20.0) -> str:
        t0 = time.monotonic()
        st = ""
        while time.monotonic() - t0 < timeout:
            st = await self.run_status(tid, rid)
            if st in want or st == "404":
                return st
            await asyncio.sleep(0.05)
        return st

    async def settle(self, tid: str, timeout: float = 30.0) -> None:
        """Wait until no run of the thread is pending/running."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            r = await self.c.get(f"/threads/{tid}/runs", params={"limit": 100})
            if r.status_code != 200 or not any(x["status"] in ("pending", "running") for x in r.json()):
                return
            await asyncio.sleep(0.1)

    async def brief(self, what: str, tid: str, rid: str | None = None) -> None:
        """One line: thread status (and run status)."""
        t = await self.c.get(f"/threads/{tid}")
        ts = t.json().get("status") if t.status_code == 200 else f"HTTP {t.status_code}"
        s = f"{what}: thread status = `{ts}`"
        if rid:
            s += f"; run {rid} status = `{await self.run_status(tid, rid)}`"
        note(s)


HUMAN = {"messages": [{"role": "user", "content": "hi there"}]}
SIMPLE = "simple"


def heading(s: str) -> None:
    out()
    out(s)
    out()


# =========================================================================== scenarios
async def sc_a(R: Rec) -> None:
    heading("## a. Thread whose run failed (graph `boom`)")
    out("### a1. via POST /threads/{tid}/runs/wait")
    tid = await R.thread()
    r = await R.req("POST", f"/threads/{tid}/runs/wait", {"assistant_id": "boom", "input": {"count": 0}}, raw=True)
    rid = r.headers.get("content-location", "").rsplit("/", 1)[-1]
    await R.req("GET", f"/threads/{tid}")
    await R.req("GET", f"/threads/{tid}/runs/{rid}")
    await R.req("GET", f"/threads/{tid}/runs/{rid}/join", raw=True)
    await R.req("GET", f"/threads/{tid}/state")

    out("### a2. via background run + join")
    tid = await R.thread()
    r = await R.req("POST", f"/threads/{tid}/runs", {"assistant_id": "boom", "input": {"count": 0}})
    rid = r.json()["run_id"]
    await R.req("GET", f"/threads/{tid}/runs/{rid}/join", raw=True)
    await R.req("GET", f"/threads/{tid}")
    await R.req("GET", f"/threads/{tid}/runs/{rid}")
    await R.req("GET", f"/threads/{tid}/state")
    out("Join the finished failed run's stream (no Last-Event-ID), and with `Last-Event-ID: -1`:")
    await R.sse("GET", f"/threads/{tid}/runs/{rid}/stream")
    await R.sse("GET", f"/threads/{tid}/runs/{rid}/stream", headers={"Last-Event-ID": "-1"})

    out("### a3. via POST /threads/{tid}/runs/stream, then the thread")
    tid = await R.thread()
    await R.sse("POST", f"/threads/{tid}/runs/stream", {"assistant_id": "boom", "input": {"count": 0}})
    await R.req("GET", f"/threads/{tid}")
    out("A later successful run on the failed thread (does `status`/`error` reset?):")
    await R.req("POST", f"/threads/{tid}/runs/wait", {"assistant_id": SIMPLE, "input": {"count": 0}})
    await R.req("GET", f"/threads/{tid}")


async def sc_b(R: Rec) -> None:
    heading("## b. 404 texts")
    tid = await R.thread()
    unk = str(uuid.uuid4())
    unk_t = str(uuid.uuid4())
    note(f"existing thread {tid}; unknown uuid used for runs {unk}; unknown thread {unk_t}")
    await R.req("GET", f"/threads/{tid}/runs/{unk}")
    await R.req("GET", f"/threads/{tid}/runs/{unk}/join")
    await R.sse("GET", f"/threads/{tid}/runs/{unk}/stream")
    await R.req("POST", f"/threads/{tid}/runs/{unk}/cancel")
    await R.req("DELETE", f"/threads/{tid}/runs/{unk}")
    await R.req("GET", f"/threads/{tid}/runs/not-a-uuid")
    body = {"assistant_id": SIMPLE, "input": {"count": 0}}
    await R.req("POST", f"/threads/{unk_t}/runs", body)
    await R.req("POST", f"/threads/{unk_t}/runs/wait", body)
    await R.sse("POST", f"/threads/{unk_t}/runs/stream", body)
    await R.req("GET", f"/threads/{unk_t}/runs")
    await R.req("GET", f"/threads/{unk_t}/state")
    await R.req("GET", f"/threads/{unk_t}/history")
    await R.req("POST", f"/threads/{unk_t}/history", {"limit": 10})
    await R.req("POST", f"/threads/{unk_t}/state", {"values": {"count": 1}})
    await R.req("PATCH", f"/threads/{unk_t}", {"metadata": {"x": 1}})
    await R.req("POST", f"/threads/{unk_t}/copy")
    await R.req("GET", "/threads/not-a-uuid")
    await R.req("GET", f"/threads/{unk_t}")
    await R.req("DELETE", f"/threads/{unk_t}")
    await R.req("DELETE", "/threads/not-a-uuid")
    await R.req("GET", f"/assistants/{unk}")
    await R.req("POST", f"/threads/{tid}/runs", {"assistant_id": unk, "input": {}})
    await R.req("POST", f"/threads/{tid}/runs", {"assistant_id": "no-such-graph", "input": {}})


async def sc_c(R: Rec) -> None:
    heading("## c. POST /threads with the id of an existing thread")
    tid = str(uuid.uuid4())
    await R.req("POST", "/threads", {"thread_id": tid, "metadata": {"orig": 1}})
    await R.req("POST", "/threads", {"thread_id": tid, "metadata": {"second": 2}, "if_exists": "raise"})
    await R.req("POST", "/threads", {"thread_id": tid, "metadata": {"second": 2}})
    out("`do_nothing` with different metadata:")
    r = await R.req("POST", "/threads", {"thread_id": tid, "metadata": {"second": 2}, "if_exists": "do_nothing"})
    g = await R.req("GET", f"/threads/{tid}")
    same = r.json() == g.json()
    note(f"do_nothing body == GET /threads/{tid} body: **{same}**")
    out("`do_nothing` on a thread that has run (values set, status interrupted):")
    await R.c.post(f"/threads/{tid}/runs/wait", json={"assistant_id": "hitl", "input": HUMAN})
    r = await R.req("POST", "/threads", {"thread_id": tid, "if_exists": "do_nothing"}, max_list=2)
    g = await R.c.get(f"/threads/{tid}")
    note(f"do_nothing body == GET /threads/{tid} body: **{r.json() == g.json()}**")
    out("`if_exists: \"bogus\"`:")
    await R.req("POST", "/threads", {"thread_id": tid, "if_exists": "bogus"})


async def sc_d(R: Rec) -> None:
    heading("## d. State and history of a thread with no run")
    tid = await R.thread()
    await R.req("GET", f"/threads/{tid}")
    await R.req("GET", f"/threads/{tid}/state")
    await R.req("GET", f"/threads/{tid}/history")
    await R.req("POST", f"/threads/{tid}/history", {})
    await R.req("POST", f"/threads/{tid}/history", {"limit": 10})
    await R.req("POST", f"/threads/{tid}/state/checkpoint", {"checkpoint": {"thread_id": tid}})
    out("Thread created with metadata:")
    r = await R.req("POST", "/threads", {"metadata": {"user": "demo", "n": 1}})
    t2 = r.json()["thread_id"]
    await R.req("GET", f"/threads/{t2}/state")
    await R.req("GET", f"/threads/{t2}/history")


async def sc_e(R: Rec) -> None:
    heading("## e. POST /threads/{tid}/state (update_state)")
    out("### e1. while a run is busy on the thread")
    out("`simple` sleeps count/10 s; count=30 keeps the run `running` for 3 s.")
    tid = await R.thread()
    r = (await R.c.post(f"/threads/{tid}/runs", json={"assistant_id": SIMPLE, "input": {"count": 30}})).json()
    rid = r["run_id"]
    st = await R.wait_for(tid, rid, {"running"})
    await R.brief("before update_state", tid, rid)
    t0 = time.monotonic()
    await R.req("POST", f"/threads/{tid}/state", {"values": {"count": 5}})
    note(f"(answered after {time.monotonic() - t0:.2f}s; run status at that time: `{await R.run_status(tid, rid)}`)")
    await R.req("POST", f"/threads/{tid}/state", {"values": {"count": 6}, "as_node": "slow"})
    await R.brief("after update_state attempts", tid, rid)
    await R.wait_for(tid, rid, {"success", "error", "interrupted"})
    await R.req("GET", f"/threads/{tid}/state")
    h = (await R.c.get(f"/threads/{tid}/history", params={"limit": 10})).json()
    note("history afterwards (newest first): " + pj([(x["values"], x["metadata"].get("source"),
                                                       x["metadata"].get("step")) for x in h], None))
    if st != "running":
        note(f"NOTE: could not observe the first run as running (status {st}).")

    out("### e2. with as_node on an idle thread (after one completed run)")
    tid = await R.thread()
    await R.c.post(f"/threads/{tid}/runs/wait", json={"assistant_id": SIMPLE, "input": {"count": 0}})
    before = (await R.req("GET", f"/threads/{tid}")).json()
    await asyncio.sleep(0.3)
    await R.req("POST", f"/threads/{tid}/state", {"values": {"count": 42}, "as_node": "slow"})
    after = (await R.req("GET", f"/threads/{tid}")).json()
    note("thread before → after: " + pj({k: [before.get(k), after.get(k)] for k in
                                         ("status", "values", "created_at", "updated_at", "state_updated_at")}))
    await R.req("GET", f"/threads/{tid}/state")

    out("### e3. update_state without as_node on the same idle thread")
    await R.req("POST", f"/threads/{tid}/state", {"values": {"count": 43}})

    out("### e4. update_state on a fresh thread (no checkpoint yet), with and without as_node")
    t2 = await R.thread()
    await R.req("POST", f"/threads/{t2}/state", {"values": {"count": 1}})
    t3 = await R.thread()
    r = await R.req("POST", f"/threads/{t3}/state", {"values": {"count": 1}, "as_node": "slow"})
    await R.req("GET", f"/threads/{t3}")
    await R.req("GET", f"/threads/{t3}/state")

    out("### e5. update_state on an interrupted thread (hitl) as `review`")
    t4 = await R.thread()
    await R.c.post(f"/threads/{t4}/runs/wait", json={"assistant_id": "hitl", "input": HUMAN})
    await R.req("POST", f"/threads/{t4}/state", {"values": {"approved": "manual"}, "as_node": "review"})
    g = (await R.c.get(f"/threads/{t4}")).json()
    note("thread after: " + pj({k: g.get(k) for k in ("status", "interrupts", "updated_at", "state_updated_at")}))
    st = (await R.c.get(f"/threads/{t4}/state")).json()
    note("state after: " + pj({k: st.get(k) for k in ("values", "next", "tasks", "interrupts")}))


async def sc_f(R: Rec, url: str) -> None:
    heading("## f. Stateless runs")
    out("### f1. Python SDK `client.runs.stream(None, \"simple\", input={\"count\": 0})`: every HTTP request it makes")
    from langgraph_sdk import get_client
    log: list[str] = []

    async def on_req(req: httpx.Request) -> None:
        hd = {k: v for k, v in req.headers.items() if k.lower() in ("accept", "last-event-id", "content-type")}
        log.append(f"-> {req.method} {req.url.raw_path.decode()}  headers={hd}  body={(req.content or b'').decode()[:300]}")

    async def on_resp(resp: httpx.Response) -> None:
        hd = {k: resp.headers[k] for k in HEADERS if k in resp.headers}
        log.append(f"<- {resp.status_code} for {resp.request.method} {resp.request.url.raw_path.decode()}  headers={hd}")

    client = get_client(url=url, api_key=None)
    client.http.client.event_hooks["request"].append(on_req)
    client.http.client.event_hooks["response"].append(on_resp)
    parts = []
    async for part in client.runs.stream(None, SIMPLE, input={"count": 0}):
        parts.append({"event": part.event, "data": part.data})
    log.append("(stream iterator finished; waiting 1.5 s to catch any late request)")
    await asyncio.sleep(1.5)
    out("```text")
    for ln in log:
        out(n(ln))
    out("```")
    out("StreamParts yielded:")
    out("```json")
    out(n(pj(parts, None)))
    out("```")
    out("")
    out("Same with `stream_mode=[\"values\",\"updates\"]` and `on_completion=\"keep\"`:")
    log.clear()
    async for part in client.runs.stream(None, SIMPLE, input={"count": 0}, stream_mode=["values", "updates"],
                                         on_completion="keep"):
        pass
    await asyncio.sleep(1.0)
    out("```text")
    for ln in log:
        out(n(ln))
    out("```")
    out("")

    out("### f2. raw POST /runs/stream, then GET its Location / Content-Location")
    r, evs = await R.sse("POST", "/runs/stream", {"assistant_id": SIMPLE, "input": {"count": 0}})
    rid = None
    for name, text in evs:
        if name == "metadata":
            rid = json.loads(text.split("data:", 1)[1])["run_id"]
            break
    loc, cloc = r.headers.get("location"), r.headers.get("content-location")
    await R.req("GET", f"/runs/{rid}")
    await R.sse("GET", f"/runs/{rid}/stream")
    if cloc and cloc != f"/runs/{rid}":
        await R.req("GET", cloc)
    if loc and loc != f"/runs/{rid}/stream":
        await R.sse("GET", loc)
    out("(`POST /runs/stream` does not reveal the temporary thread id; f3 uses a background run to see it.)")

    out("### f3. POST /runs (background, stateless), then GET what Content-Location says")
    r = await R.req("POST", "/runs", {"assistant_id": SIMPLE, "input": {"count": 5}})
    run = r.json()
    rid, ttid = run["run_id"], run["thread_id"]
    cloc = r.headers.get("content-location")
    if cloc:
        await R.req("GET", cloc)
    if cloc != f"/runs/{rid}":
        await R.req("GET", f"/runs/{rid}")
    await R.req("GET", f"/threads/{ttid}/runs/{rid}")
    await R.req("GET", f"/threads/{ttid}")
    await R.req("GET", f"/threads/{ttid}/runs/{rid}/join")
    await asyncio.sleep(0.5)
    out("After the run ended:")
    await R.req("GET", f"/threads/{ttid}/runs/{rid}")
    await R.req("GET", f"/threads/{ttid}")
    out("### f4. POST /runs with on_completion=keep, after the end")
    r = await R.req("POST", "/runs", {"assistant_id": SIMPLE, "input": {"count": 0}, "on_completion": "keep"})
    run = r.json()
    await R.c.get(f"/threads/{run['thread_id']}/runs/{run['run_id']}/join")
    await asyncio.sleep(0.3)
    await R.req("GET", f"/threads/{run['thread_id']}/runs/{run['run_id']}")
    await R.req("GET", f"/threads/{run['thread_id']}", max_list=3)
    out("### f5. POST /runs/wait (stateless) headers")
    r = await R.req("POST", "/runs/wait", {"assistant_id": SIMPLE, "input": {"count": 0}})
    loc = r.headers.get("content-location")
    if loc:
        await asyncio.sleep(0.3)
        await R.req("GET", loc)


async def sc_g(R: Rec) -> None:
    heading("## g. Heartbeats (runs lasting > 5 s: `simple` with count=70 sleeps 7 s)")
    out("Each block is prefixed with the seconds since the request was sent.")
    out("### g1. POST /threads/{tid}/runs/stream")
    tid = await R.thread()
    await R.sse("POST", f"/threads/{tid}/runs/stream", {"assistant_id": SIMPLE, "input": {"count": 70},
                                                         "stream_mode": ["values"]}, timing=True)
    out("### g2. POST /runs/stream (stateless)")
    await R.sse("POST", "/runs/stream", {"assistant_id": SIMPLE, "input": {"count": 70}}, timing=True)
    out("### g3. GET /threads/{tid}/runs/{rid}/stream (join_stream) of a live background run")
    tid = await R.thread()
    rid = (await R.c.post(f"/threads/{tid}/runs", json={"assistant_id": SIMPLE, "input": {"count": 70},
                                                         "stream_mode": ["values", "updates"]})).json()["run_id"]
    await R.wait_for(tid, rid, {"running"})
    await R.sse("GET", f"/threads/{tid}/runs/{rid}/stream", timing=True)
    out("### g4. POST /threads/{tid}/runs/wait lasting 7 s (raw body chunks)")
    tid = await R.thread()
    await R.timed_body("POST", f"/threads/{tid}/runs/wait", {"assistant_id": SIMPLE, "input": {"count": 70}})
    out("### g5. GET .../join of a live background run lasting 7 s (raw body chunks)")
    tid = await R.thread()
    rid = (await R.c.post(f"/threads/{tid}/runs", json={"assistant_id": SIMPLE, "input": {"count": 70}})).json()["run_id"]
    await R.wait_for(tid, rid, {"running"})
    await R.timed_body("GET", f"/threads/{tid}/runs/{rid}/join")
    out("### g6. GET /threads/{tid}/stream (thread stream) for 6 s with no run")
    tid = await R.thread()
    await R.sse("GET", f"/threads/{tid}/stream", timing=True, stop_after=6.0)


async def sc_h(R: Rec) -> None:
    heading("## h. Threads search and count")
    tag = uuid.uuid4().hex[:8]
    out(f"Setup (metadata `suite: {tag}` marks this scenario's threads): t1 = hitl run → interrupted; "
        "t2 = simple count=3 → values {count: 4}; t3 = fresh idle thread. Created in that order.")
    t1 = await R.thread(suite=tag, n=1)
    await R.c.post(f"/threads/{t1}/runs/wait", json={"assistant_id": "hitl", "input": HUMAN})
    t2 = await R.thread(suite=tag, n=2)
    await R.c.post(f"/threads/{t2}/runs/wait", json={"assistant_id": SIMPLE, "input": {"count": 3}})
    t3 = await R.thread(suite=tag, n=3)
    note(f"t1={t1} t2={t2} t3={t3}")
    sel = ["thread_id", "status", "metadata"]
    S = "/threads/search"
    await R.req("POST", S, {"status": "interrupted", "metadata": {"suite": tag}, "select": sel})
    await R.req("POST", S, {"status": "interrupted", "limit": 2, "select": ["thread_id", "status"]})
    await R.req("POST", S, {"values": {"count": 4}, "metadata": {"suite": tag}, "select": ["thread_id", "status", "values"]})
    await R.req("POST", "/threads/count", {"values": {"count": 4}}, raw=True)
    out("The in-memory runtime raises `TypeError: argument of type 'NoneType' is not iterable` in "
        "`is_jsonb_contained` (server log) when any thread on the server has `values: null` (a thread with no run), "
        "whatever the other filters. To see the containment semantics, the recorder now deletes every thread whose "
        "`values` is null (t3 included) and repeats.")
    deleted = 0
    for _ in range(50):
        rows = (await R.rq("POST", S, json={"limit": 100, "offset": 0, "select": ["thread_id", "values"],
                                        "sort_by": "created_at"})).json()
        nulls = [x["thread_id"] for x in rows if x.get("values") is None]
        if not nulls:
            break
        for t in nulls:
            await R.rq("DELETE", f"/threads/{t}")
            deleted += 1
    note(f"(deleted {deleted} thread(s) with null values)")
    await R.req("POST", S, {"values": {"count": 4}, "metadata": {"suite": tag}, "select": ["thread_id", "status", "values"]})
    await R.req("POST", S, {"values": {"count": 4}, "select": ["thread_id"], "limit": 3})
    await R.req("POST", S, {"values": {"messages": [{"type": "human"}]}, "metadata": {"suite": tag}, "select": ["thread_id"]})
    await R.req("POST", S, {"values": {"messages": [{"type": "human", "content": "hi there"}]}, "metadata": {"suite": tag}, "select": ["thread_id"]})
    await R.req("POST", S, {"values": {"approved": None}, "metadata": {"suite": tag}, "select": ["thread_id"]})
    t3 = await R.thread(suite=tag, n=3)
    note(f"t3 re-created as a new fresh thread: {t3} (values null again from here on)")
    await R.req("POST", S, {"metadata": {"graph_id": "hitl"}, "limit": 1, "select": ["thread_id", "metadata"]})
    await R.req("POST", S, {"metadata": {"suite": tag}, "sort_by": "created_at", "sort_order": "asc", "select": sel})
    await R.req("POST", S, {"metadata": {"suite": tag}, "select": sel})
    out("Default `select` (full thread objects), limit 1:")
    await R.req("POST", S, {"metadata": {"suite": tag}, "limit": 1}, max_list=2)
    out("Pagination: limit 1 at offsets 0, 1, 2 and 3 (3 matching threads):")
    for off in (0, 1, 2, 3):
        await R.req("POST", S, {"metadata": {"suite": tag}, "limit": 1, "offset": off,
                                "sort_by": "created_at", "sort_order": "asc", "select": ["thread_id"]})
    await R.req("POST", S, {"metadata": {"suite": tag}, "limit": 2, "offset": 0, "select": ["thread_id"]})
    await R.req("POST", S, {"metadata": {"suite": tag}, "limit": 3, "offset": 0, "select": ["thread_id"]})
    await R.req("POST", S, {"ids": [t1, t3], "select": ["thread_id"]})
    out("Unknown select field / unknown sort_by / unknown status:")
    await R.req("POST", S, {"select": ["thread_id", "bogus"]})
    await R.req("POST", S, {"sort_by": "bogus"})
    await R.req("POST", S, {"status": "bogus"})
    out("Count (raw bodies shown):")
    await R.req("POST", "/threads/count", {"metadata": {"suite": tag}}, raw=True)
    await R.req("POST", "/threads/count", {"metadata": {"suite": tag}, "status": "interrupted"}, raw=True)
    await R.req("POST", "/threads/count", {"metadata": {"suite": tag}, "values": {"count": 4}}, raw=True)
    await R.req("POST", "/threads/count", {"metadata": {"suite": tag}, "status": "idle"}, raw=True)
    await R.req("POST", "/threads/count", {"metadata": {"suite": "no-such"}}, raw=True)
    await R.req("POST", "/threads/count", {}, raw=True)


async def sc_i(R: Rec) -> None:
    heading("## i. Runs list; delete a pending/running run")
    tid = await R.thread()
    for i in range(3):
        await R.c.post(f"/threads/{tid}/runs/wait", json={"assistant_id": SIMPLE, "input": {"count": i}})
    await R.c.post(f"/threads/{tid}/runs/wait", json={"assistant_id": "boom", "input": {}})
    note("Setup: 3 successful `simple` runs, then one failed `boom` run, on one thread.")
    P = f"/threads/{tid}/runs"
    await R.req("GET", P, params={"status": "success", "limit": 1, "offset": 1})
    await R.req("GET", P, params={"status": "success", "limit": 1, "offset": 1,
                                  "select": ["run_id", "status"]})
    await R.req("GET", P, params=[("select", "run_id"), ("select", "status"), ("select", "created_at")])
    await R.req("GET", P, params={"status": "error"})
    await R.req("GET", P, params={"limit": 2, "offset": 3, "select": "run_id"})
    await R.req("GET", P, params={"status": "bogus"})
    await R.req("GET", P, params={"select": "bogus"})
    await R.req("GET", P, params={"limit": "x"})

    out("### DELETE a running run")
    tid = await R.thread()
    rid = (await R.c.post(f"/threads/{tid}/runs", json={"assistant_id": SIMPLE, "input": {"count": 30}})).json()["run_id"]
    note(f"run {rid}: status `{await R.wait_for(tid, rid, {'running'})}` (3 s sleep)")
    await R.req("DELETE", f"/threads/{tid}/runs/{rid}")
    await R.brief("right after", tid, rid)
    await watch_thread(R, tid, 6.0)
    await R.req("GET", f"/threads/{tid}")
    await R.req("GET", f"/threads/{tid}/runs")
    h = (await R.c.get(f"/threads/{tid}/history", params={"limit": 10})).json()
    note("history: " + pj([(x["values"], x["metadata"].get("step")) for x in h], None))
    out("A new run on that thread afterwards:")
    r = await R.req("POST", f"/threads/{tid}/runs/wait", {"assistant_id": SIMPLE, "input": {"count": 0}})
    await R.brief("after the new run", tid)

    out("### DELETE a pending run (queued behind a running one on the same thread)")
    tid = await R.thread()
    r1 = (await R.c.post(f"/threads/{tid}/runs", json={"assistant_id": SIMPLE, "input": {"count": 30}})).json()["run_id"]
    await R.wait_for(tid, r1, {"running"})
    r2 = (await R.c.post(f"/threads/{tid}/runs", json={"assistant_id": SIMPLE, "input": {"count": 1},
                                                       "multitask_strategy": "enqueue"})).json()["run_id"]
    note(f"run1 {r1}: `{await R.run_status(tid, r1)}`; run2 {r2}: `{await R.run_status(tid, r2)}`")
    await R.req("DELETE", f"/threads/{tid}/runs/{r2}")
    await R.brief("right after (run2)", tid, r2)
    await R.settle(tid)
    await R.brief("after run1 ended (run2)", tid, r2)
    await R.brief("(run1)", tid, r1)


async def sc_j(R: Rec) -> None:
    heading("## j. Copy and patch")
    tid = await R.thread(owner="j", n=1)
    await R.c.post(f"/threads/{tid}/runs/wait", json={"assistant_id": SIMPLE, "input": {"count": 1}})
    note(f"source thread {tid}: metadata {{owner: j, n: 1}}, one `simple` run (count 1 → 2)")
    await R.req("GET", f"/threads/{tid}")
    r = await R.req("POST", f"/threads/{tid}/copy")
    cid = r.json()["thread_id"]
    await R.req("GET", f"/threads/{cid}")
    await R.req("GET", f"/threads/{cid}/state")
    await R.req("GET", f"/threads/{cid}/runs")
    h = (await R.c.get(f"/threads/{cid}/history", params={"limit": 10})).json()
    hs = (await R.c.get(f"/threads/{tid}/history", params={"limit": 10})).json()
    note(f"history length: source {len(hs)}, copy {len(h)}; checkpoint ids equal: "
         f"{[x['checkpoint']['checkpoint_id'] for x in hs] == [x['checkpoint']['checkpoint_id'] for x in h]}")
    out("Copy of a fresh thread (no checkpoint):")
    f = await R.thread(fresh=True)
    await R.req("POST", f"/threads/{f}/copy")
    out("PATCH:")
    await R.req("PATCH", f"/threads/{tid}", {"metadata": {"n": 2, "added": "yes"}})
    await R.req("PATCH", f"/threads/{tid}", {"metadata": {"n": None}})
    await R.req("PATCH", f"/threads/{tid}", {})
    await R.req("PATCH", f"/threads/{tid}", {"metadata": 5})


async def sc_k(R: Rec) -> None:
    heading("## k. Validation errors (raw bodies shown)")
    tid = await R.thread()
    P = f"/threads/{tid}/runs"
    for body in ({"assistant_id": "hitl", "multitask_strategy": "bogus"},
                 {"assistant_id": "hitl", "stream_mode": "bogus"},
                 {"assistant_id": "hitl", "stream_mode": ["values", "bogus"]},
                 {"assistant_id": "hitl", "input": 5},
                 {"input": {}},
                 {},
                 {"assistant_id": "hitl", "if_not_exists": "bogus"},
                 {"assistant_id": "hitl", "on_disconnect": "bogus"},
                 {"assistant_id": "hitl", "durability": "bogus"},
                 {"assistant_id": 5}):
        r = await R.req("POST", P, body, raw=True)
        if r.status_code == 200:
            rid = r.json()["run_id"]
            out("(accepted; how that run ended:)")
            await R.req("GET", f"/threads/{tid}/runs/{rid}/join", raw=True)
            await R.brief("then", tid, rid)
        await R.settle(tid)
    await R.req("POST", P, content=b"{not json", raw=True)
    await R.req("POST", P, content=b"[]", raw=True)
    await R.req("POST", "/threads", {"metadata": 5}, raw=True)
    await R.req("POST", "/threads", {"thread_id": "not-a-uuid"}, raw=True)
    await R.req("POST", "/threads/search", {"limit": -1}, raw=True)
    await R.req("POST", "/threads/search", {"limit": "x"}, raw=True)
    await R.req("POST", "/threads/search", {"limit": 0}, raw=True)
    await R.req("POST", "/threads/search", {"offset": -1}, raw=True)
    await R.req("POST", f"/threads/{tid}/history", {"limit": 0}, raw=True)
    await R.req("POST", f"/threads/{tid}/history", {"limit": -1}, raw=True)
    await R.req("POST", f"/threads/{tid}/history", {"limit": "x"}, raw=True)
    await R.req("GET", f"/threads/{tid}/history", params={"limit": 0}, raw=True)
    await R.req("POST", f"/threads/{tid}/state", {"values": 5}, raw=True)


async def watch_thread(R: Rec, tid: str, secs: float) -> None:
    """Poll the thread's status and log each change."""
    t0 = time.monotonic()
    seen, last = [], None
    while time.monotonic() - t0 < secs:
        g = (await R.c.get(f"/threads/{tid}")).json()
        cur = (g.get("status"), json.dumps(g.get("values")))
        if cur != last:
            seen.append(f"+{time.monotonic() - t0:.2f}s status={cur[0]} values={cur[1]}")
            last = cur
        await asyncio.sleep(0.1)
    note(f"thread watched for {secs:.0f} s: " + "; ".join(seen))


async def multitask_case(R: Rec, strat: str, first_pending: bool) -> None:
    tid = await R.thread()
    blocker = None
    if first_pending:
        blocker = await R.thread()
        b_rid = (await R.c.post(f"/threads/{blocker}/runs", json={"assistant_id": SIMPLE, "input": {"count": 20}})).json()["run_id"]
        await R.wait_for(blocker, b_rid, {"running"})
        r1 = (await R.c.post(f"/threads/{tid}/runs", json={"assistant_id": SIMPLE, "input": {"count": 10}})).json()["run_id"]
        note(f"A run on another thread occupies the single worker (2 s); first run {r1} on this thread: "
             f"`{await R.run_status(tid, r1)}`")
    else:
        r1 = (await R.c.post(f"/threads/{tid}/runs", json={"assistant_id": SIMPLE, "input": {"count": 20}})).json()["run_id"]
        note(f"first run {r1}: `{await R.wait_for(tid, r1, {'running'})}` (2 s sleep)")
    await R.brief("before the second create", tid, r1)
    r = await R.req("POST", f"/threads/{tid}/runs", {"assistant_id": SIMPLE, "input": {"count": 1},
                                                      "multitask_strategy": strat})
    r2 = r.json().get("run_id")
    await R.brief("immediately after (first run)", tid, r1)
    if r2:
        await R.brief("immediately after (second run)", tid, r2)
        polls = []
        t0 = time.monotonic()
        last = None
        while time.monotonic() - t0 < 15:
            cur = (await R.run_status(tid, r1), await R.run_status(tid, r2))
            if cur != last:
                polls.append(f"+{time.monotonic() - t0:.2f}s run1={cur[0]} run2={cur[1]}")
                last = cur
            if cur[1] in ("success", "error", "interrupted", "404") and cur[0] not in ("pending", "running"):
                break
            await asyncio.sleep(0.05)
        note("status changes: " + "; ".join(polls))
    await R.settle(tid)
    if blocker:
        await R.settle(blocker)
    await R.req("GET", f"/threads/{tid}/runs", params=[("select", "run_id"), ("select", "status"),
                                                        ("select", "multitask_strategy")])
    await R.req("GET", f"/threads/{tid}/runs/{r1}")
    g = (await R.c.get(f"/threads/{tid}")).json()
    note("thread afterwards: " + pj({k: g.get(k) for k in ("status", "values", "error")}, None))
    st = (await R.c.get(f"/threads/{tid}/state")).json()
    h = (await R.c.get(f"/threads/{tid}/history", params={"limit": 20})).json()
    note(f"state values: {pj(st['values'], None)}; history: "
         + pj([(x["values"].get("count"), x["metadata"].get("source"), x["metadata"].get("run_id")) for x in h], None))


async def sc_l(R: Rec) -> None:
    heading("## l. Multitask interrupt / rollback against a pending or running first run")
    for strat in ("interrupt", "rollback"):
        for pend in (False, True):
            out(f"### multitask_strategy={strat}, first run {'pending' if pend else 'running'}")
            await multitask_case(R, strat, pend)
    out("### multitask_strategy=interrupt on /runs/wait while a run is running")
    tid = await R.thread()
    r1 = (await R.c.post(f"/threads/{tid}/runs", json={"assistant_id": SIMPLE, "input": {"count": 20}})).json()["run_id"]
    await R.wait_for(tid, r1, {"running"})
    await R.req("POST", f"/threads/{tid}/runs/wait", {"assistant_id": SIMPLE, "input": {"count": 1},
                                                       "multitask_strategy": "interrupt"})
    await R.brief("afterwards", tid, r1)
    out("### multitask_strategy=reject on /runs/stream while a run is running")
    r1 = (await R.c.post(f"/threads/{tid}/runs", json={"assistant_id": SIMPLE, "input": {"count": 20}})).json()["run_id"]
    await R.wait_for(tid, r1, {"running"})
    await R.sse("POST", f"/threads/{tid}/runs/stream", {"assistant_id": SIMPLE, "input": {"count": 1},
                                                         "multitask_strategy": "reject"})
    await R.settle(tid)


SCENARIOS = "abcdefghijkl"


async def main() -> None:
    global NORMALIZE
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--normalize", action="store_true")
    ap.add_argument("--only", default=SCENARIOS, help="comma-separated scenario letters")
    a = ap.parse_args()
    NORMALIZE = a.normalize
    if httpx.URL(a.url).host not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("refusing to talk to a non-loopback host")
    only = [x for x in a.only.replace(",", "") if x in SCENARIOS]
    async with httpx.AsyncClient(base_url=a.url, timeout=httpx.Timeout(60.0)) as c:
        R = Rec(c)
        info = (await c.get("/info")).json()
        try:
            from importlib.metadata import version
            sdk = version("langgraph-sdk")
        except Exception:
            sdk = "?"
        out(f"Recorded {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} against {a.url}: "
            f"/info says version={info.get('version')}, langgraph_py_version={info.get('langgraph_py_version')}; "
            f"Python SDK langgraph-sdk {sdk}; scenarios: {','.join(only)}.")
        for letter in only:
            fn = globals()[f"sc_{letter}"]
            try:
                if letter == "f":
                    await fn(R, a.url)
                else:
                    await fn(R)
            except Exception as exc:  # keep going; say what broke
                out(f"\n**scenario {letter} could not be completed: {type(exc).__name__}: {exc}**\n")
    sys.stdout.write("\n".join(LINES) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
