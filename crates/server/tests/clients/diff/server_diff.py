#!/usr/bin/env python3
"""Layer 3 of CLIENT-CONFORMANCE.md: a differential run of stategraph's server
against the official LangGraph server.

The same scripted exchanges (the scenarios of shared/server/TRANSCRIPTS.md, on the
fixture graphs hitl, simple, parent and boom) are sent to both servers at the same
time; every exchange is then compared *structurally*:

* plain requests: status code; presence of Location, Content-Location and the
  pagination headers, their value with ids replaced by placeholders; content-type;
  the recursive key set and JSON type of every body value (strings are typed further
  as uuid, timestamp, `lc_run--` id, ...); list lengths; and the *values* of a few
  enumeration-like keys (status, next, type, name, step, ... see VALUE_KEYS);
* streams: the same head checks, then the sequence of SSE event names (runs of
  token events collapsed to one), the key sets/types of each event's data, whether
  events carry `id:` lines, duplicate ids, how the stream ended, and the raw framing
  of the first event (field order, line ends, compact JSON).

Every difference must match a rule of allow.toml (with its reason) or it is
"unexplained"; the script exits 1 when there is any unexplained difference.

    server_diff.py --official URL|PATH-TO-langgraph --ours URL|PATH-TO-server \
                   --report report.md [--allow allow.toml] [--sections 3-8,12]

A URL is used as is (loopback only); a path starts that server on a free loopback
port (the official one from a temporary copy of ./fixture) and stops it at the end.
Written for this project; it follows the exchanges of record_transcripts.py but
shares no code with it.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import fnmatch
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable

import httpx

HERE = Path(__file__).resolve().parent

# --------------------------------------------------------------------------- normalising
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
UUID_RE = re.compile(UUID)
TS_RE = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[+-]\d{2}:\d{2}|Z)?")
HEX32_RE = re.compile(r"\b[0-9a-f]{32}\b")
LC_RUN_RE = re.compile(rf"lc_run--{UUID}(?:-\d+)?")
EID_RE = re.compile(r"\b\d{13}-\d+\b")

# Full-string formats: a string value's JSON type is refined by the first match.
STR_FORMATS = [
    ("uuid", re.compile(rf"{UUID}")),
    # langchain-core ids a streamed reply 'lc_run--<uuid>' and an invoked
    # one 'lc_run--<uuid>-<index>': one format.
    ("lc_run--uuid", re.compile(rf"lc_run--{UUID}(?:-\d+)?")),
    ("run-uuid", re.compile(rf"run-{UUID}(?:-\d+)?")),
    ("timestamp+00:00", re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?\+00:00")),
    ("timestampZ", re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z")),
    ("timestamp", re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?")),
    ("hex32", re.compile(r"[0-9a-f]{32}")),
    ("event-id", re.compile(r"\d{13}-\d+")),
]


def norm_text(s: str) -> str:
    """Ids and timestamps to placeholders (not numbered: the two servers may create
    ids in a different order). A langchain-core message id is one placeholder
    whether streamed ('lc_run--<uuid>') or invoked ('lc_run--<uuid>-0')."""
    s = LC_RUN_RE.sub("lc_run--<uuid>", s)
    s = UUID_RE.sub("<uuid>", s)
    s = HEX32_RE.sub("<hex32>", s)
    s = EID_RE.sub("<eid>", s)
    return TS_RE.sub("<ts>", s)


def jtype(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        for name, rx in STR_FORMATS:
            if rx.fullmatch(v):
                return f"str<{name}>"
        return "str"
    if isinstance(v, list):
        return "list"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


# Keys whose (normalised) scalar values are compared, not just their types: the
# enumerations and counters a client branches on. Free texts (`detail`, `message`)
# are compared too so that they show up as allowed differences, not silently.
VALUE_KEYS = {
    "status", "next", "type", "name", "source", "step", "count", "approved",
    "graph_id", "attempt", "chunk_position", "error", "event", "request",
    "multitask_strategy", "checkpoint_ns", "on_completion", "first_status",
    "second_status", "detail", "message", "path", "when", "resumable", "writes",
}


# --------------------------------------------------------------------------- captures
@dataclass
class Capture:
    """What one server answered to one exchange."""
    xid: str
    kind: str = "http"                  # http | sse | data (a derived value, e.g. SDK output)
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    body_is_json: bool = True
    events: list[tuple[str, Any, str | None]] = field(default_factory=list)
    raw_first: bytes | None = None
    ended: str = ""                     # closed | client-stop | timeout
    error: str | None = None            # transport error / exception in the scenario

    def summary(self) -> str:
        if self.error:
            return f"error: {self.error}"
        if self.kind == "data":
            return "derived value"
        s = f"HTTP {self.status}"
        if self.kind == "sse" and self.status == 200:
            s += f", {len(self.events)} events: " + " ".join(collapsed_names(self.events))
        return s


TOKEN_EVENTS = ("messages", "messages/partial", "messages/complete", "events")


def is_token(name: str) -> bool:
    return name.split("|", 1)[0] in TOKEN_EVENTS


def collapse(events: list[tuple[str, Any, str | None]]) -> list[tuple[str, list[Any]]]:
    """Runs of the same token event collapse to one item holding the run's data."""
    out: list[tuple[str, list[Any]]] = []
    for name, data, _ in events:
        nname = norm_text(name)
        if out and out[-1][0] == nname and is_token(nname):
            out[-1][1].append(data)
        else:
            out.append((nname, [data]))
    return out


def collapsed_names(events) -> list[str]:
    return [n + ("*" if len(d) > 1 else "") for n, d in collapse(events)]


SHOWN_HEADERS = ("content-type", "location", "content-location", "x-pagination-total",
                 "x-pagination-next", "cache-control", "x-accel-buffering")


class Session:
    """Sends the scenario's requests to one server and keeps every capture."""

    def __init__(self, label: str, url: str):
        self.label = label
        self.url = url
        self.captures: dict[str, Capture] = {}
        self.c = httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(30.0, connect=5.0))

    async def close(self):
        await self.c.aclose()

    def _put(self, cap: Capture) -> Capture:
        if cap.xid in self.captures:
            raise RuntimeError(f"duplicate exchange id {cap.xid}")
        self.captures[cap.xid] = cap
        return cap

    def data(self, xid: str, value: Any) -> Capture:
        return self._put(Capture(xid, kind="data", body=value))

    def fail(self, xid: str, exc: BaseException) -> Capture:
        return self._put(Capture(xid, error=f"{type(exc).__name__}: {exc}"[:300]))

    async def http(self, xid: str, method: str, path: str, body: Any = None, *,
                   params: Any = None, headers: dict | None = None) -> Resp:
        cap = Capture(xid)
        try:
            for attempt in range(2):
                try:
                    r = await self.c.request(method, path, json=body, params=params,
                                             headers=headers)
                    break
                except (httpx.RemoteProtocolError, httpx.ReadError):
                    # a server may close a kept-alive connection after an error answer
                    if attempt:
                        raise
            cap.status = r.status_code
            cap.headers = {k: r.headers[k] for k in SHOWN_HEADERS if k in r.headers}
            if r.content:
                try:
                    cap.body = r.json()
                except ValueError:
                    cap.body, cap.body_is_json = r.text[:500], False
            else:
                cap.body, cap.body_is_json = None, False
        except Exception as exc:  # noqa: BLE001 - recorded as the exchange's result
            cap.error = f"{type(exc).__name__}: {exc}"[:300]
        self._put(cap)
        return Resp(cap)

    async def sse(self, xid: str, method: str, path: str, body: Any = None, *,
                  params: Any = None, headers: dict | None = None,
                  stop_after: float | None = None, timeout: float = 30.0) -> Resp:
        cap = Capture(xid, kind="sse")
        hdrs = {"Accept": "text/event-stream", **(headers or {})}
        t0 = time.monotonic()
        try:
            async with self.c.stream(method, path, json=body, params=params,
                                     headers=hdrs) as r:
                cap.status = r.status_code
                cap.headers = {k: r.headers[k] for k in SHOWN_HEADERS if k in r.headers}
                if r.status_code >= 300:
                    raw = await r.aread()
                    try:
                        cap.body = json.loads(raw) if raw else None
                    except ValueError:
                        cap.body, cap.body_is_json = raw.decode(errors="replace")[:500], False
                    cap.ended = "closed"
                else:
                    cap.ended = await self._read_events(r, cap, t0, stop_after, timeout)
        except Exception as exc:  # noqa: BLE001
            cap.error = f"{type(exc).__name__}: {exc}"[:300]
        self._put(cap)
        return Resp(cap)

    @staticmethod
    async def _read_events(r: httpx.Response, cap: Capture, t0: float,
                           stop_after: float | None, timeout: float) -> str:
        buf = b""
        it = r.aiter_raw().__aiter__()
        while True:
            left = timeout - (time.monotonic() - t0)
            if stop_after is not None:
                left = min(left, stop_after - (time.monotonic() - t0))
            if left <= 0:
                return "client-stop" if stop_after is not None else "timeout"
            try:
                chunk = await asyncio.wait_for(it.__anext__(), left)
            except StopAsyncIteration:
                return "closed"
            except asyncio.TimeoutError:
                return "client-stop" if stop_after is not None else "timeout"
            buf += chunk
            while True:
                m = re.search(rb"\r\n\r\n|\n\n|\r\r", buf)
                if not m:
                    break
                block, sep_all = buf[:m.start()], m.group(0)
                buf = buf[m.end():]
                sep = sep_all[: len(sep_all) // 2]
                lines = block.split(sep)
                if all(ln.startswith(b":") for ln in lines if ln):
                    continue                                    # comment / heartbeat
                if cap.raw_first is None:
                    cap.raw_first = block + sep_all
                name, data, eid = "message", [], None
                for ln in lines:
                    if ln.startswith(b":"):
                        continue
                    k, _, v = ln.partition(b":")
                    v = v[1:] if v.startswith(b" ") else v
                    if k == b"event":
                        name = v.decode()
                    elif k == b"data":
                        data.append(v.decode())
                    elif k == b"id":
                        eid = v.decode()
                text = "\n".join(data)
                try:
                    payload = json.loads(text) if text else None
                except ValueError:
                    payload = text
                cap.events.append((name, payload, eid))


class Resp:
    """A capture with the few accessors a scenario needs to go on."""

    def __init__(self, cap: Capture):
        self.cap = cap

    @property
    def status(self) -> int | None:
        return self.cap.status

    @property
    def ok(self) -> bool:
        return self.cap.error is None and self.cap.status is not None and self.cap.status < 300

    def json(self) -> Any:
        return self.cap.body

    def get(self, *keys, default=None):
        v = self.cap.body
        for k in keys:
            try:
                v = v[k]
            except (KeyError, IndexError, TypeError):
                return default
        return v

    def event_ids(self) -> list[str]:
        return [e[2] for e in self.cap.events if e[2]]


# --------------------------------------------------------------------------- scenarios
HUMAN = {"messages": [{"role": "user", "content": "hi there"}]}


class Abort(Exception):
    """A section cannot go on on this server (an earlier answer lacks a needed id)."""


def need(v: Any, what: str) -> Any:
    if v is None:
        raise Abort(f"no {what}")
    return v


async def poll_status(s: Session, tid: str, rid: str, want: set[str], timeout: float = 15.0) -> str:
    t0, st = time.monotonic(), ""
    while time.monotonic() - t0 < timeout:
        r = await s.c.get(f"/threads/{tid}/runs/{rid}")
        if r.status_code == 404:
            return "404"
        if r.status_code == 200:
            st = r.json().get("status", "")
            if st in want:
                return st
        await asyncio.sleep(0.05)
    return st or "timeout"


async def fresh_thread(s: Session, **meta) -> str:
    r = await s.c.post("/threads", json={"metadata": meta} if meta else {})
    if r.status_code != 200:
        raise Abort(f"POST /threads answered {r.status_code}")
    return r.json()["thread_id"]


class Ctx(dict):
    """Values that later sections take from earlier ones (per server)."""


async def sec_1(s: Session, ctx: Ctx):
    await s.http("01.1 GET /ok", "GET", "/ok")
    await s.http("01.2 GET /info", "GET", "/info")


async def sec_2(s: Session, ctx: Ctx):
    await s.http("02.1 POST /assistants/search (graph_id)", "POST", "/assistants/search",
                 {"graph_id": "hitl", "limit": 10, "offset": 0})
    r = await s.http("02.2 POST /assistants", "POST", "/assistants",
                     {"graph_id": "hitl", "name": "my-hitl",
                      "config": {"configurable": {"model": "fake"}}, "context": {},
                      "metadata": {"team": "docs"}, "if_exists": "raise"})
    # without a created assistant the remaining exchanges still run, on the graph name
    aid = r.get("assistant_id") or "hitl"
    await s.http("02.3 PATCH /assistants/{aid}", "PATCH", f"/assistants/{aid}",
                 {"metadata": {"team": "docs", "v": 2}})
    await s.http("02.4 POST /assistants/{aid}/versions", "POST", f"/assistants/{aid}/versions",
                 {"limit": 10})
    await s.http("02.5 POST /assistants/{aid}/latest?version=1", "POST",
                 f"/assistants/{aid}/latest", params={"version": 1})
    await s.http("02.6 POST /assistants/{aid}/latest {version:1}", "POST",
                 f"/assistants/{aid}/latest", {"version": 1})
    await s.http("02.7 GET /assistants/{aid}", "GET", f"/assistants/{aid}")
    await s.http("02.8 GET /assistants/{aid}/graph", "GET", f"/assistants/{aid}/graph")
    await s.http("02.9 GET /assistants/parent/graph?xray=true", "GET",
                 "/assistants/parent/graph", params={"xray": "true"})
    await s.http("02.10 GET /assistants/{aid}/schemas", "GET", f"/assistants/{aid}/schemas")
    await s.http("02.11 GET /assistants/parent/subgraphs?recurse=true", "GET",
                 "/assistants/parent/subgraphs", params={"recurse": "true"})
    await s.http("02.12 POST /assistants/count", "POST", "/assistants/count", {"graph_id": "hitl"})
    if aid != "hitl":
        await s.http("02.13 DELETE /assistants/{aid}", "DELETE", f"/assistants/{aid}")
        await s.http("02.14 GET /assistants/{aid} (deleted)", "GET", f"/assistants/{aid}")


async def sec_3(s: Session, ctx: Ctx):
    # `tag` is new per diff run, so searches see only this run's threads even on a
    # server that was used before
    r = await s.http("03.1 POST /threads (metadata)", "POST", "/threads",
                     {"metadata": {"user": "demo", "tag": ctx["tag"]}})
    ctx["tid"] = tid = need(r.get("thread_id"), "thread_id")
    await s.http("03.2 GET /threads/{tid}", "GET", f"/threads/{tid}")


async def sec_4(s: Session, ctx: Ctx):
    tid = need(ctx.get("tid"), "thread from section 3")
    await s.sse("04.1 POST /threads/{tid}/runs/stream (hitl, values+updates+messages-tuple+custom)",
                "POST", f"/threads/{tid}/runs/stream",
                {"assistant_id": "hitl", "input": HUMAN,
                 "stream_mode": ["values", "updates", "messages-tuple", "custom"]})


async def sec_5(s: Session, ctx: Ctx):
    tid = need(ctx.get("tid"), "thread from section 3")
    await s.http("05.1 GET /threads/{tid}/state (interrupted)", "GET", f"/threads/{tid}/state")
    await s.http("05.2 GET /threads/{tid} (interrupted)", "GET", f"/threads/{tid}")


async def sec_6(s: Session, ctx: Ctx):
    tid = need(ctx.get("tid"), "thread from section 3")
    await s.sse("06.1 POST /threads/{tid}/runs/stream (command resume)", "POST",
                f"/threads/{tid}/runs/stream",
                {"assistant_id": "hitl", "command": {"resume": "yes"},
                 "stream_mode": ["values", "updates"]})
    await s.http("06.2 GET /threads/{tid}/state (done)", "GET", f"/threads/{tid}/state")


async def sec_7(s: Session, ctx: Ctx):
    tid = need(ctx.get("tid"), "thread from section 3")
    await s.http("07.1 GET /threads/{tid}/history?limit=2", "GET", f"/threads/{tid}/history",
                 params={"limit": 2})
    r = await s.http("07.2 POST /threads/{tid}/history {limit:3}", "POST",
                     f"/threads/{tid}/history", {"limit": 3})
    ctx["hist"] = r.json() if isinstance(r.json(), list) else None


async def sec_8(s: Session, ctx: Ctx):
    tid = need(ctx.get("tid"), "thread from section 3")
    await s.http("08.1 POST /threads/{tid}/state (update, as_node=finish)", "POST",
                 f"/threads/{tid}/state", {"values": {"count": 7}, "as_node": "finish"})
    hist = need(ctx.get("hist"), "history from section 7")
    ck = need(hist[-1].get("checkpoint", {}).get("checkpoint_id") if hist else None,
              "checkpoint id")
    await s.http("08.2 GET /threads/{tid}/state/{checkpoint_id}", "GET",
                 f"/threads/{tid}/state/{ck}")
    await s.http("08.3 POST /threads/{tid}/state/checkpoint", "POST",
                 f"/threads/{tid}/state/checkpoint", {"checkpoint": {"checkpoint_id": ck}})
    await s.http("08.4 POST /threads/{tid}/copy", "POST", f"/threads/{tid}/copy")
    await s.http("08.5 PATCH /threads/{tid} (metadata)", "PATCH", f"/threads/{tid}",
                 {"metadata": {"patched": True}})
    await s.http("08.6 POST /threads/search (metadata, limit 2)", "POST", "/threads/search",
                 {"metadata": {"user": "demo", "tag": ctx["tag"]}, "limit": 2})
    await s.http("08.7 POST /threads/search (status idle, select)", "POST", "/threads/search",
                 {"status": "idle", "limit": 1, "select": ["thread_id", "status"]})
    await s.http("08.8 POST /threads/count (metadata)", "POST", "/threads/count",
                 {"metadata": {"user": "demo", "tag": ctx["tag"]}})


async def sec_9(s: Session, ctx: Ctx):
    t = await fresh_thread(s)
    await s.sse("09.1 POST /threads/{tid}/runs/stream (stream_mode=messages)", "POST",
                f"/threads/{t}/runs/stream",
                {"assistant_id": "hitl", "input": HUMAN, "stream_mode": "messages"})


async def sec_10(s: Session, ctx: Ctx):
    for i, mode in enumerate(("debug", "tasks", "checkpoints", "events"), 1):
        t = await fresh_thread(s)
        await s.sse(f"10.{i} POST /threads/{{tid}}/runs/stream (stream_mode={mode})", "POST",
                    f"/threads/{t}/runs/stream",
                    {"assistant_id": "simple", "input": {"count": 0}, "stream_mode": mode})
    await s.sse("10.5 POST /runs/stream (stream_mode=[values, tools])", "POST", "/runs/stream",
                {"assistant_id": "simple", "input": {"count": 0},
                 "stream_mode": ["values", "tools"]})


async def sec_11(s: Session, ctx: Ctx):
    await s.sse("11.1 POST /runs/stream (parent, stream_subgraphs)", "POST", "/runs/stream",
                {"assistant_id": "parent", "input": {"count": 1},
                 "stream_mode": ["values", "updates"], "stream_subgraphs": True})
    t = await fresh_thread(s)
    await s.http("11.2 POST /threads/{tid}/runs/wait (parent)", "POST",
                 f"/threads/{t}/runs/wait", {"assistant_id": "parent", "input": {"count": 1}})
    await s.http("11.3 GET /threads/{tid}/state?subgraphs=true", "GET",
                 f"/threads/{t}/state", params={"subgraphs": "true"})


async def sec_12(s: Session, ctx: Ctx):
    await s.sse("12.1 POST /runs/stream (boom: error event)", "POST", "/runs/stream",
                {"assistant_id": "boom", "input": {"count": 0}, "stream_mode": ["values"]})
    await s.http("12.2 GET /threads/{unknown}", "GET",
                 "/threads/00000000-0000-0000-0000-000000000000")
    t = ctx.get("tid") or await fresh_thread(s)
    await s.http("12.3 POST /threads/{tid}/runs (no assistant_id: 422)", "POST",
                 f"/threads/{t}/runs", {"input": {}})
    await s.http("12.4 POST /threads/{tid}/runs/wait (assistant 'nope')", "POST",
                 f"/threads/{t}/runs/wait", {"assistant_id": "nope", "input": {}})
    tb = await fresh_thread(s)
    await s.http("12.5 POST /threads/{tid}/runs/wait (boom)", "POST",
                 f"/threads/{tb}/runs/wait", {"assistant_id": "boom", "input": {}})


async def sec_13(s: Session, ctx: Ctx):
    t = await fresh_thread(s)
    r = await s.http("13.1 POST /threads/{tid}/runs (background, simple)", "POST",
                     f"/threads/{t}/runs",
                     {"assistant_id": "simple", "input": {"count": 10}, "metadata": {"k": "v"}})
    rid = need(r.get("run_id"), "run_id")
    await s.http("13.2 GET /threads/{tid}/runs/{rid} (just created)", "GET",
                 f"/threads/{t}/runs/{rid}")
    await s.http("13.3 GET /threads/{tid}/runs/{rid}/join", "GET",
                 f"/threads/{t}/runs/{rid}/join")
    await s.http("13.4 GET /threads/{tid}/runs?limit=5", "GET", f"/threads/{t}/runs",
                 params={"limit": 5})
    await s.http("13.5 GET /threads/{tid}/runs/{rid} (finished)", "GET",
                 f"/threads/{t}/runs/{rid}")
    await s.http("13.6 DELETE /threads/{tid}/runs/{rid}", "DELETE",
                 f"/threads/{t}/runs/{rid}")


async def sec_14(s: Session, ctx: Ctx):
    for i, strat in enumerate(("reject", "enqueue", "interrupt", "rollback"), 1):
        t = await fresh_thread(s)
        r1 = await s.c.post(f"/threads/{t}/runs", json={"assistant_id": "simple",
                                                        "input": {"count": 20}})
        rid1 = need(r1.json().get("run_id") if r1.status_code == 200 else None, "first run")
        await poll_status(s, t, rid1, {"running"})
        r = await s.http(f"14.{i} POST /threads/{{tid}}/runs (busy, multitask_strategy={strat})",
                         "POST", f"/threads/{t}/runs",
                         {"assistant_id": "simple", "input": {"count": 1},
                          "multitask_strategy": strat})
        if r.status == 200 and r.get("run_id"):
            done = {"success", "error", "interrupted"}
            s2 = await poll_status(s, t, r.get("run_id"), done, timeout=10)
            s1 = await poll_status(s, t, rid1, done, timeout=10)
            s.data(f"14.{i}b final run statuses ({strat})",
                   {"first_status": s1, "second_status": s2})
            await s.http(f"14.{i}c GET /threads/{{tid}}/runs?select=... ({strat})", "GET",
                         f"/threads/{t}/runs",
                         params={"select": ["run_id", "status", "multitask_strategy"]})
        else:
            await poll_status(s, t, rid1, {"success"}, timeout=10)


async def sec_15(s: Session, ctx: Ctx):
    t = await fresh_thread(s)
    r1 = await s.c.post(f"/threads/{t}/runs", json={"assistant_id": "simple",
                                                    "input": {"count": 30}})
    rid1 = need(r1.json().get("run_id") if r1.status_code == 200 else None, "run")
    await poll_status(s, t, rid1, {"running"})
    # a moment for the run's first checkpoint: cancelling a run that has just turned
    # `running` makes the official server's answer racy (`{}` or the thread's values)
    await asyncio.sleep(0.3)
    await s.http("15.1 POST /threads/{tid}/runs/{rid}/cancel?wait=true&action=interrupt",
                 "POST", f"/threads/{t}/runs/{rid1}/cancel",
                 params={"wait": "true", "action": "interrupt"})
    await s.http("15.2 GET /threads/{tid}/runs/{rid} (cancelled)", "GET",
                 f"/threads/{t}/runs/{rid1}")
    r2 = await s.c.post(f"/threads/{t}/runs", json={"assistant_id": "simple",
                                                    "input": {"count": 30}})
    rid2 = need(r2.json().get("run_id") if r2.status_code == 200 else None, "run")
    await poll_status(s, t, rid2, {"running"})
    await asyncio.sleep(0.3)
    await s.http("15.3 POST /runs/cancel?action=interrupt", "POST", "/runs/cancel",
                 {"thread_id": t, "run_ids": [rid2]}, params={"action": "interrupt"})
    await poll_status(s, t, rid2, {"interrupted", "success", "error"}, timeout=5)
    await s.http("15.4 GET /threads/{tid}/runs/{rid} (bulk-cancelled)", "GET",
                 f"/threads/{t}/runs/{rid2}")


async def sec_16(s: Session, ctx: Ctx):
    t = await fresh_thread(s)
    r = await s.http("16.1 POST /threads/{tid}/runs (resumable, hitl)", "POST",
                     f"/threads/{t}/runs",
                     {"assistant_id": "hitl", "input": HUMAN,
                      "stream_mode": ["values", "custom"], "stream_resumable": True})
    rid = need(r.get("run_id"), "run_id")
    await poll_status(s, t, rid, {"success", "interrupted", "error"})
    j = await s.sse("16.2 GET /threads/{tid}/runs/{rid}/stream (Last-Event-ID: -1)", "GET",
                    f"/threads/{t}/runs/{rid}/stream", headers={"Last-Event-ID": "-1"})
    ids = j.event_ids()
    if len(ids) >= 2:
        await s.sse("16.3 GET /threads/{tid}/runs/{rid}/stream (Last-Event-ID: 2nd id)", "GET",
                    f"/threads/{t}/runs/{rid}/stream", headers={"Last-Event-ID": ids[1]})
    await s.sse("16.4 GET /threads/{tid}/runs/{rid}/stream (finished, no Last-Event-ID)", "GET",
                f"/threads/{t}/runs/{rid}/stream")
    t6 = await fresh_thread(s)
    await s.sse("16.5 POST /threads/{tid}/runs/stream (not resumable)", "POST",
                f"/threads/{t6}/runs/stream",
                {"assistant_id": "simple", "input": {"count": 0}, "stream_mode": ["values"]})
    r = await s.c.post(f"/threads/{t6}/runs", json={"assistant_id": "simple",
                                                    "input": {"count": 10},
                                                    "stream_mode": ["values", "updates"]})
    rid6 = need(r.json().get("run_id") if r.status_code == 200 else None, "run")
    await s.sse("16.6 GET /threads/{tid}/runs/{rid}/stream (right after create, not resumable)",
                "GET", f"/threads/{t6}/runs/{rid6}/stream")
    # the same once the run is surely running (the answer then does not depend on how
    # soon a server's worker picks a run up)
    t7 = await fresh_thread(s)
    r = await s.c.post(f"/threads/{t7}/runs", json={"assistant_id": "simple",
                                                    "input": {"count": 10},
                                                    "stream_mode": ["values", "updates"]})
    rid7 = need(r.json().get("run_id") if r.status_code == 200 else None, "run")
    await poll_status(s, t7, rid7, {"running"})
    await asyncio.sleep(0.2)
    await s.sse("16.7 GET /threads/{tid}/runs/{rid}/stream (running, not resumable)", "GET",
                f"/threads/{t7}/runs/{rid7}/stream")


async def sec_18(s: Session, ctx: Ctx):
    t = await fresh_thread(s)
    await s.http("18.1 POST /threads/{tid}/runs/wait (hitl, to the interrupt)", "POST",
                 f"/threads/{t}/runs/wait", {"assistant_id": "hitl", "input": HUMAN})
    await s.http("18.2 POST /threads/{tid}/runs/wait (resume)", "POST",
                 f"/threads/{t}/runs/wait", {"assistant_id": "hitl", "command": {"resume": "ok"}})
    await s.http("18.3 POST /runs/wait (stateless)", "POST", "/runs/wait",
                 {"assistant_id": "simple", "input": {"count": 0}})
    await s.http("18.4 POST /runs (stateless background)", "POST", "/runs",
                 {"assistant_id": "simple", "input": {"count": 0}})
    await s.http("18.5 POST /runs/batch", "POST", "/runs/batch",
                 [{"assistant_id": "simple", "input": {"count": 0}},
                  {"assistant_id": "simple", "input": {"count": 1}}])
    # a client-chosen thread id, fresh per server run (the same id on both servers)
    await s.http("18.6 POST /threads/{new id}/runs/wait (if_not_exists=create)", "POST",
                 f"/threads/{ctx['client_tid']}/runs/wait",
                 {"assistant_id": "simple", "input": {"count": 0}, "if_not_exists": "create"})
    # not in TRANSCRIPTS: a second turn on the thread of 18.1/18.2 (the new AI message
    # must be appended, which needs a message id that differs from the first turn's)
    await s.http("18.7 POST /threads/{tid}/runs/wait (hitl, second turn)", "POST",
                 f"/threads/{t}/runs/wait",
                 {"assistant_id": "hitl", "input": {"messages": [{"role": "user",
                                                                  "content": "again"}]}})


async def sec_22(s: Session, ctx: Ctx):
    t = await fresh_thread(s)
    await s.c.post(f"/threads/{t}/runs/wait", json={"assistant_id": "simple", "input": {"count": 0}})
    await s.http("22.1 DELETE /threads/{tid}", "DELETE", f"/threads/{t}")
    await s.http("22.2 GET /threads/{tid} (deleted)", "GET", f"/threads/{t}")


def sdk_value(v: Any) -> Any:
    """SDK results (dicts, lists, StreamPart tuples) as plain JSON values."""
    return json.loads(json.dumps(v, default=lambda o: getattr(o, "_asdict", lambda: str(o))()))


async def sec_23(s: Session, ctx: Ctx):
    from langgraph_sdk import get_client

    log: list[dict] = []

    async def on_request(req: httpx.Request) -> None:
        try:
            body = json.loads(req.content) if req.content else None
        except ValueError:
            body = "<non-json>"
        hdrs = sorted(k.lower() for k in req.headers
                      if k.lower() in ("accept", "content-type", "last-event-id"))
        log.append({"request": norm_text(f"{req.method} {req.url.raw_path.decode()}"),
                    "headers": hdrs, "body": body})

    client = get_client(url=s.url, api_key=None)
    client.http.client.event_hooks["request"].append(on_request)
    try:
        thread = await client.threads.create(metadata={"via": "sdk"})
        tid = thread["thread_id"]
        parts = [(p.event, sdk_value(p.data), None) async for p in client.runs.stream(
            tid, "hitl", input=HUMAN, stream_mode=["values", "messages-tuple", "updates"])]
        s._put(Capture("23.2 SDK runs.stream parts (values, messages-tuple, updates)",
                       kind="sse", status=200, events=parts, ended="closed"))
        s.data("23.3 SDK threads.get_state", sdk_value(await client.threads.get_state(tid)))
        parts2 = []
        async for p in client.runs.stream(tid, "hitl", command={"resume": "sdk-yes"},
                                          stream_mode="values", version="v2"):
            p = sdk_value(p)
            name = p.get("type", "?") if isinstance(p, dict) else "?"
            parts2.append((name, p, None))
        s._put(Capture("23.4 SDK runs.stream(version='v2') parts", kind="sse", status=200,
                       events=parts2, ended="closed"))
        s.data("23.5 SDK threads.get_history(limit=2)",
               sdk_value(await client.threads.get_history(tid, limit=2)))
    finally:
        s.data("23.1 SDK: the HTTP requests it sent", log)
        await client.aclose()


SECTIONS: dict[str, Callable[[Session, Ctx], Awaitable[None]]] = {
    "1": sec_1, "2": sec_2, "3": sec_3, "4": sec_4, "5": sec_5, "6": sec_6, "7": sec_7, "8": sec_8,
    "12": sec_12, "18": sec_18, "23": sec_23,
    "9": sec_9, "10": sec_10, "11": sec_11, "13": sec_13, "14": sec_14, "15": sec_15,
    "16": sec_16, "22": sec_22,
}
DEFAULT_SECTIONS = "3-8,12,18,23,1,2,9-11,13-16,22"
S1_SECTIONS = {"3", "4", "5", "6", "7", "8", "12", "18", "23"}   # CLIENT-CONFORMANCE section 4


async def run_scenarios(s: Session, sections: list[str], client_tid: str) -> None:
    ctx = Ctx(client_tid=client_tid, tag=client_tid[:8])
    for sec in sections:
        t0 = time.monotonic()
        try:
            await asyncio.wait_for(SECTIONS[sec](s, ctx), timeout=90)
        except Exception as exc:  # noqa: BLE001 - the other sections still run
            s.fail(f"{int(sec):02d}.x section {sec} stopped", exc)
        print(f"  [{s.label}] section {sec}: {time.monotonic() - t0:.1f}s", file=sys.stderr,
              flush=True)


# --------------------------------------------------------------------------- comparing
@dataclass
class Diff:
    kind: str         # status header body-missing body-extra type length value events ids framing ended error
    path: str
    official: str
    ours: str
    allowed_by: str | None = None

    def text(self) -> str:
        return f"`{self.kind}` at `{self.path}`: official {self.official} / ours {self.ours}"


def short(v: Any, n: int = 120) -> str:
    s = json.dumps(v, ensure_ascii=False, default=str) if not isinstance(v, str) else repr(v)
    s = norm_text(s)
    return s if len(s) <= n else s[: n - 3] + "..."


def norm_key(k: str) -> str:
    return norm_text(str(k))


def compare_values(a: Any, b: Any, path: str, out: list[Diff], key: str | None = None) -> None:
    ta, tb = jtype(a), jtype(b)
    if ta != tb:
        out.append(Diff("type", path, f"{ta} {short(a, 60)}", f"{tb} {short(b, 60)}"))
        return
    if isinstance(a, dict):
        na = {norm_key(k): v for k, v in a.items()}
        nb = {norm_key(k): v for k, v in b.items()}
        for k in na:
            p = f"{path}.{k}" if path else k
            if k not in nb:
                out.append(Diff("body-missing", p, f"{jtype(na[k])} {short(na[k], 60)}", "absent"))
            else:
                compare_values(na[k], nb[k], p, out, k)
        for k in nb:
            if k not in na:
                p = f"{path}.{k}" if path else k
                out.append(Diff("body-extra", p, "absent", f"{jtype(nb[k])} {short(nb[k], 60)}"))
        return
    if isinstance(a, list):
        if len(a) != len(b):
            out.append(Diff("length", path, str(len(a)), str(len(b))))
        for i, (x, y) in enumerate(zip(a, b)):
            compare_values(x, y, f"{path}[{i}]", out, key)
        return
    if key in VALUE_KEYS and norm_text(str(a)) != norm_text(str(b)):
        out.append(Diff("value", path, short(a), short(b)))


def framing(raw: bytes | None) -> str:
    """The first event's framing: field order, line ends, compact or spaced JSON."""
    if raw is None:
        return "(no event)"
    sep = b"\r\n" if b"\r\n" in raw else (b"\n" if b"\n" in raw else b"\r")
    parts = []
    for ln in raw.split(sep)[:-2] if raw.endswith(sep + sep) else raw.split(sep):
        k, _, v = ln.partition(b":")
        space = " " if v.startswith(b" ") else ""
        v = v[1:] if space else v
        if k == b"event":
            val = "<name>"      # the names are compared as the event sequence
        elif k == b"data":
            try:
                obj = json.loads(v)
                compact = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
                val = "<compact json>" if v == compact else "<json, not compact>"
            except ValueError:
                val = "<text>"
        elif k == b"id":
            val = "<id>"
        else:
            val = norm_text(v.decode(errors="replace"))
        parts.append(f"{k.decode()}:{space}{val}")
    end = {b"\r\n": "\\r\\n", b"\n": "\\n", b"\r": "\\r"}[sep]
    return end.join(parts) + end + end


def id_presence(events) -> str:
    n = sum(1 for e in events if e[2] is not None)
    return "none" if n == 0 else ("all" if n == len(events) else f"{n} of {len(events)}")


def has_dup_ids(events) -> bool:
    ids = [e[2] for e in events if e[2] is not None]
    return len(ids) != len(set(ids))


def media(v: str | None) -> str:
    return "absent" if v is None else v.replace(" ", "").lower()


def compare(o: Capture | None, u: Capture | None) -> list[Diff]:
    d: list[Diff] = []
    if o is None or u is None:
        d.append(Diff("not-run", "exchange", "not run" if o is None else o.summary(),
                      "not run" if u is None else u.summary()))
        return d
    if o.error or u.error:
        if norm_text(o.error or "") != norm_text(u.error or ""):
            d.append(Diff("error", "exchange", o.error or "no error", u.error or "no error"))
        return d
    if o.status != u.status:
        d.append(Diff("status", "status", str(o.status), str(u.status)))
    if o.kind != "data":
        for h in SHOWN_HEADERS:
            ho, hu = o.headers.get(h), u.headers.get(h)
            if h == "content-type":
                if media(ho) != media(hu):
                    d.append(Diff("header", h, media(ho), media(hu)))
            elif h.startswith("x-pagination"):
                if (ho is None) != (hu is None):
                    d.append(Diff("header", h, "absent" if ho is None else "present",
                                  "absent" if hu is None else "present"))
                elif ho is not None and ho != hu:
                    d.append(Diff("header-value", h, ho, hu))
            elif (ho is None) != (hu is None) or (ho and norm_text(ho) != norm_text(hu)):
                d.append(Diff("header", h, "absent" if ho is None else norm_text(ho),
                              "absent" if hu is None else norm_text(hu)))
    if o.kind == "sse" and u.kind == "sse" and o.status == 200 and u.status == 200:
        compare_streams(o, u, d)
    else:
        if o.body_is_json and u.body_is_json:
            compare_values(o.body, u.body, "body" if o.kind != "data" else "value", d)
        elif o.body_is_json != u.body_is_json or (not o.body_is_json and
                                                  norm_text(str(o.body)) != norm_text(str(u.body))):
            d.append(Diff("body", "body", short(o.body), short(u.body)))
    return d


def compare_streams(o: Capture, u: Capture, d: list[Diff]) -> None:
    co, cu = collapse(o.events), collapse(u.events)
    no, nu = [x[0] for x in co], [x[0] for x in cu]
    if no != nu:
        sm = difflib.SequenceMatcher(a=no, b=nu, autojunk=False)
        d.append(Diff("events", "event names", " ".join(no), " ".join(nu)))
        pairs = []
        for blk in sm.get_matching_blocks():
            pairs += [(blk.a + k, blk.b + k) for k in range(blk.size)]
    else:
        pairs = [(i, i) for i in range(len(co))]
    for i, j in pairs:
        name, dos = co[i]
        dus = cu[j][1]
        # a collapsed run: compare its first and its last event's data
        picks = [(0, 0)] if len(dos) == 1 and len(dus) == 1 else [(0, 0), (-1, -1)]
        for a, b in picks:
            where = "" if len(picks) == 1 else ("first" if a == 0 else "last")
            compare_values(dos[a], dus[b], f"events[{i}:{name}{(' ' + where) if where else ''}]", d)
    po, pu = id_presence(o.events), id_presence(u.events)
    if po != pu:
        d.append(Diff("ids", "id lines", po, pu))
    if has_dup_ids(o.events) != has_dup_ids(u.events):
        d.append(Diff("dup-ids", "id lines",
                      "duplicate ids" if has_dup_ids(o.events) else "distinct ids",
                      "duplicate ids" if has_dup_ids(u.events) else "distinct ids"))
    elif has_dup_ids(u.events):
        d.append(Diff("dup-ids-ours", "id lines", "duplicate ids", "duplicate ids"))
    if o.raw_first is not None or u.raw_first is not None:
        fo, fu = framing(o.raw_first), framing(u.raw_first)
        if fo != fu:
            d.append(Diff("framing", "first event", fo, fu))
    if o.ended != u.ended:
        d.append(Diff("ended", "stream end", o.ended, u.ended))


# --------------------------------------------------------------------------- allow-list
@dataclass
class Rule:
    name: str
    reason: str
    exchange: str = "*"
    kind: str = "*"
    path: str | None = None
    official: str | None = None
    ours: str | None = None
    used: int = 0

    def matches(self, xid: str, df: Diff) -> bool:
        if not fnmatch.fnmatchcase(xid, self.exchange):
            return False
        if not fnmatch.fnmatchcase(df.kind, self.kind):
            return False
        for pat, val in ((self.path, df.path), (self.official, df.official), (self.ours, df.ours)):
            if pat is not None and not re.search(pat, val):
                return False
        return True


def load_rules(path: Path) -> list[Rule]:
    with open(path, "rb") as f:
        doc = tomllib.load(f)
    rules = []
    for i, r in enumerate(doc.get("allow", [])):
        if not r.get("reason"):
            raise SystemExit(f"{path}: allow rule #{i + 1} has no reason")
        unknown = set(r) - {"name", "reason", "exchange", "kind", "path", "official", "ours"}
        if unknown:
            raise SystemExit(f"{path}: allow rule #{i + 1}: unknown fields {sorted(unknown)}")
        rules.append(Rule(**{"name": r.get("name", f"rule{i + 1}"), **{k: v for k, v in r.items()
                                                                         if k != "name"}}))
    return rules


# --------------------------------------------------------------------------- report
def write_report(path: Path, order: list[str], off: Session, ours: Session,
                 results: dict[str, list[Diff]], rules: list[Rule], counts: dict[str, int],
                 meta: dict[str, str]) -> None:
    L: list[str] = []
    L.append("# server-diff: stategraph vs the official LangGraph server")
    L.append("")
    for k, v in meta.items():
        L.append(f"- {k}: {v}")
    L.append("")
    L.append(f"**{counts['n']} exchanges: {counts['identical']} identical, {counts['allowed']} "
             f"allowed, {counts['unexplained']} unexplained.**")
    L.append("")
    L.append("| exchange | verdict | official | ours |")
    L.append("|---|---|---|---|")
    for xid in order:
        ds = results[xid]
        v = verdict(ds)
        L.append(f"| {xid} | {v} | {cell(off.captures.get(xid))} | {cell(ours.captures.get(xid))} |")
    L.append("")
    L.append("## Unexplained differences")
    L.append("")
    any_u = False
    for xid in order:
        us = [x for x in results[xid] if not x.allowed_by]
        if not us:
            continue
        any_u = True
        L.append(f"### {xid}")
        L.append("")
        o, u = off.captures.get(xid), ours.captures.get(xid)
        L.append(f"- official: {o.summary() if o else 'not run'}")
        L.append(f"- ours: {u.summary() if u else 'not run'}")
        for x, n in grouped(us):
            L.append(f"- {md(x.text())}" + (f" (x{n})" if n > 1 else ""))
        L.append("")
    if not any_u:
        L.append("(none)")
        L.append("")
    else:
        L.append("## Unexplained differences, each listed once")
        L.append("")
        index: dict[tuple, list[str]] = {}
        for xid in order:
            for x, _ in grouped([x for x in results[xid] if not x.allowed_by]):
                index.setdefault((x.kind, x.path, x.official, x.ours), []).append(
                    xid.split(" ", 1)[0])
        for (kind, p, o, u), xs in index.items():
            L.append(f"- `{kind}` at `{md(p)}`: official {md(o)} / ours {md(u)} "
                     f"[{', '.join(xs)}]")
        L.append("")
    L.append("## Allowed differences")
    L.append("")
    for xid in order:
        al = [x for x in results[xid] if x.allowed_by]
        if al:
            L.append(f"- **{xid}**: " + "; ".join(
                f"{md(x.text())}{f' (x{n})' if n > 1 else ''} (allowed: `{x.allowed_by}`)"
                for x, n in grouped(al)))
    L.append("")
    unused = [r.name for r in rules if not r.used]
    L.append("## Allow-list rules")
    L.append("")
    for r in rules:
        L.append(f"- `{r.name}` ({r.used} differences): {r.reason}")
    if unused:
        L.append("")
        L.append(f"Rules that matched nothing in this run: {', '.join(unused)}")
    L.append("")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(L) + "\n")


def gpath(path: str) -> str:
    """A difference's path with list indices and event positions generalised."""
    path = re.sub(r"^events\[\d+:([^\]]*?)(?: first| last)?\]", r"events[\1]", path)
    return re.sub(r"\[\d+\]", "[*]", path)


def grouped(ds: list[Diff]) -> list[tuple[Diff, int]]:
    """Differences that differ only by list index or event position, counted once."""
    seen: dict[tuple, list] = {}
    for x in ds:
        k = (x.kind, gpath(x.path), x.official, x.ours, x.allowed_by)
        if k in seen:
            seen[k][1] += 1
        else:
            seen[k] = [Diff(x.kind, gpath(x.path), x.official, x.ours, x.allowed_by), 1]
    return [(d, n) for d, n in seen.values()]


def md(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def cell(c: Capture | None) -> str:
    if c is None:
        return "not run"
    return md(c.summary())[:140]


def verdict(ds: list[Diff]) -> str:
    if not ds:
        return "identical"
    return "allowed" if all(x.allowed_by for x in ds) else "UNEXPLAINED"


# --------------------------------------------------------------------------- servers
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Started:
    def __init__(self, proc: subprocess.Popen, url: str, tmp: str | None = None):
        self.proc, self.url, self.tmp = proc, url, tmp

    def stop(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)   # its own process group only
                self.proc.wait(10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)


def wait_ok(url: str, proc: subprocess.Popen, timeout: float) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            raise SystemExit(f"server at {url} exited with {proc.returncode}")
        try:
            if httpx.get(url + "/ok", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"server at {url} did not answer /ok within {timeout}s")


def start_official(cli: str, fixture: Path, log: Path) -> Started:
    tmp = tempfile.mkdtemp(prefix="server-diff-official-")
    for name in ("graph.py", "langgraph.json"):
        shutil.copy(fixture / name, tmp)
    port = free_port()
    env = {**os.environ, "LANGGRAPH_NO_VERSION_CHECK": "true", "LANGGRAPH_CLI_NO_ANALYTICS": "1",
           "LANGSMITH_TRACING": "false", "LANGCHAIN_TRACING_V2": "false"}
    for k in ("LANGGRAPH_API_KEY", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "LANGGRAPH_CLOUD_LICENSE_KEY"):
        env.pop(k, None)
    proc = subprocess.Popen(
        [cli, "dev", "--host", "127.0.0.1", "--port", str(port), "--no-browser", "--no-reload",
         "--allow-blocking"], cwd=tmp, env=env, stdout=open(log, "wb"), stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, start_new_session=True)
    st = Started(proc, f"http://127.0.0.1:{port}", tmp)
    try:
        wait_ok(st.url, proc, 120)
    except BaseException:
        st.stop()
        raise
    return st


def start_ours(binary: str, log: Path) -> Started:
    proc = subprocess.Popen([binary, "--port", "0", "--database-url", "memory"],
                            stdout=subprocess.PIPE, stderr=open(log, "wb"),
                            stdin=subprocess.DEVNULL, start_new_session=True)
    found: list[str] = []

    def reader():
        with open(log.with_suffix(".stdout.log"), "wb") as f:
            for line in proc.stdout:
                f.write(line)
                f.flush()
                m = re.search(rb"listening on (http://\S+)", line)
                if m and not found:
                    found.append(m.group(1).decode())

    threading.Thread(target=reader, daemon=True).start()
    t0 = time.monotonic()
    while not found and time.monotonic() - t0 < 30:
        if proc.poll() is not None:
            raise SystemExit(f"{binary} exited with {proc.returncode}")
        time.sleep(0.05)
    st = Started(proc, found[0] if found else "")
    if not found:
        st.stop()
        raise SystemExit(f"{binary} did not print 'listening on ...' within 30 s")
    wait_ok(st.url, proc, 10)
    return st


def check_loopback(url: str) -> None:
    if httpx.URL(url).host not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit(f"refusing a non-loopback server: {url}")


def parse_sections(spec: str) -> list[str]:
    out: list[str] = []
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            a, b = (int(x) for x in part.split("-"))
            rng = [str(i) for i in range(a, b + 1)]
        else:
            rng = [part]
        for sec in rng:
            if sec not in SECTIONS:
                raise SystemExit(f"no scenario for section {sec} (have {sorted(SECTIONS, key=int)})")
            if sec not in out:
                out.append(sec)
    return out


def xid_key(xid: str) -> tuple:
    """"14.2b ..." sorts as (14, 2, "b"); a section's "NN.x" failure record comes last."""
    m = re.match(r"(\d+)\.(\d+|x)(\w*)", xid)
    if not m:
        return (10**6, 0, xid)
    return (int(m.group(1)), 10**6 if m.group(2) == "x" else int(m.group(2)), m.group(3))


# --------------------------------------------------------------------------- main
async def amain(a: argparse.Namespace, official_url: str, ours_url: str) -> int:
    sections = parse_sections(a.sections)
    rules = load_rules(Path(a.allow))
    off, our = Session("official", official_url), Session("ours", ours_url)
    client_tid = str(uuid.uuid4())
    t0 = time.monotonic()
    try:
        await asyncio.gather(run_scenarios(off, sections, client_tid),
                             run_scenarios(our, sections, client_tid))
    finally:
        await off.close()
        await our.close()
    elapsed = time.monotonic() - t0

    order = list(off.captures)
    for x in our.captures:
        if x not in off.captures:
            order.append(x)
    order.sort(key=xid_key)

    results: dict[str, list[Diff]] = {}
    counts = {"n": 0, "identical": 0, "allowed": 0, "unexplained": 0}
    s1 = {"n": 0, "unexplained": 0}
    for xid in order:
        ds = compare(off.captures.get(xid), our.captures.get(xid))
        for df in ds:
            for r in rules:
                if r.matches(xid, df):
                    df.allowed_by = r.name
                    r.used += 1
                    break
        results[xid] = ds
        counts["n"] += 1
        counts[{"identical": "identical", "allowed": "allowed",
                "UNEXPLAINED": "unexplained"}[verdict(ds)]] += 1
        if str(xid_key(xid)[0]) in S1_SECTIONS:
            s1["n"] += 1
            s1["unexplained"] += verdict(ds) == "UNEXPLAINED"

    meta = {"official": official_url, "ours": ours_url, "sections": ", ".join(sections),
            "allow-list": str(a.allow), "scenario time": f"{elapsed:.1f} s (both servers at once)",
            "S1 sections (3-8, 12, 18, 23)": f"{s1['n']} exchanges, {s1['unexplained']} unexplained"}
    write_report(Path(a.report), order, off, our, results, rules, counts, meta)
    if a.json:
        Path(a.json).write_text(json.dumps({
            xid: {"verdict": verdict(ds), "diffs": [vars(x) for x in ds]}
            for xid, ds in results.items()}, indent=1))
    print(f"server-diff: S1 sections (3-8, 12, 18, 23): {s1['n']} exchanges, "
          f"{s1['unexplained']} unexplained", file=sys.stderr)
    print(f"server-diff: {counts['n']} exchanges, {counts['identical']} identical, "
          f"{counts['allowed']} allowed, {counts['unexplained']} unexplained")
    return 1 if counts["unexplained"] else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--official", required=True,
                    help="URL of a running official server, or the path of its `langgraph` CLI")
    ap.add_argument("--ours", required=True,
                    help="URL of a running stategraph server, or the path of its binary")
    ap.add_argument("--report", required=True, help="where to write the Markdown report")
    ap.add_argument("--allow", default=str(HERE / "allow.toml"))
    ap.add_argument("--sections", default=DEFAULT_SECTIONS,
                    help=f"TRANSCRIPTS.md sections to run, in order (default {DEFAULT_SECTIONS})")
    ap.add_argument("--json", help="also write the differences as JSON here")
    ap.add_argument("--logs", default=None, help="folder for the started servers' logs")
    a = ap.parse_args()
    for var in ("LANGGRAPH_API_KEY", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
        os.environ.pop(var, None)       # the SDK (section 23) must send no key

    logs = Path(a.logs or tempfile.mkdtemp(prefix="server-diff-logs-"))
    logs.mkdir(parents=True, exist_ok=True)
    started: list[Started] = []
    t0 = time.monotonic()
    try:
        if a.official.startswith("http"):
            official_url = a.official
        else:
            st = start_official(a.official, HERE / "fixture", logs / "official.log")
            started.append(st)
            official_url = st.url
        if a.ours.startswith("http"):
            ours_url = a.ours
        else:
            st = start_ours(a.ours, logs / "ours.log")
            started.append(st)
            ours_url = st.url
        check_loopback(official_url)
        check_loopback(ours_url)
        print(f"server-diff: official {official_url}, ours {ours_url} "
              f"(ready after {time.monotonic() - t0:.1f} s)", file=sys.stderr, flush=True)
        rc = asyncio.run(amain(a, official_url.rstrip("/"), ours_url.rstrip("/")))
    finally:
        for st in started:
            st.stop()
    print(f"server-diff: {time.monotonic() - t0:.1f} s in all; report {a.report}; "
          f"server logs {logs}", file=sys.stderr)
    sys.exit(rc)


if __name__ == "__main__":
    main()
