"""Layer 1 rows of milestone S3: thread TTLs, `supersteps` with a `command`,
`feedback_keys`, relative webhook URLs and a thread's stream resumed with
`Last-Event-ID`, through the official Python SDK.

Every test runs with `[async]` and `[sync]` clients (conftest.py). Most use the
suite's server (STATEGRAPH_SERVER_URL, default settings). Tests that need other
settings (loopback webhooks allowed, a default thread TTL) start a server of their
own with `own_server` and stop it before they end: the binary is
STATEGRAPH_SERVER_BIN, else `target/debug/server` of this repository (what `cargo
xtask server-clients` builds); without one, those tests are skipped. No test waits
for a TTL sweep (the Rust suite covers expiry). Fixture graphs:
/work/shared/server/fixture/graph.py.
"""
from __future__ import annotations

import asyncio
import os
import subprocess
import threading
import time
import uuid
from contextlib import asynccontextmanager, contextmanager, suppress
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import pytest
from helpers import parse_ts, status_of
from langgraph_sdk import get_client, get_sync_client
from langgraph_sdk.errors import UnprocessableEntityError

s3 = pytest.mark.s3
pytestmark = [pytest.mark.layer1, s3]

HI = {"messages": [{"role": "user", "content": "hi", "id": "m1"}]}
TTL_KEYS = {"strategy", "ttl_minutes", "expires_at"}
# The SDK reads u["values"] of every superstep update, so a command-only update
# carries "values": None (sent as null, next to the command).
HITL_SUPERSTEPS = [
    {"updates": [{"values": HI, "as_node": "__input__"}]},
    {"updates": [{"values": {"count": 1}, "as_node": "agent"}]},
    {
        "updates": [
            {
                "values": None,
                "command": {"resume": "yes", "update": {"approved": "via-command"}, "goto": "finish"},
                "as_node": "review",
            }
        ]
    },
]
# Set only when running against the official langgraph-api server (see README).
OFFICIAL = os.environ.get("STATEGRAPH_SERVER_KIND") == "official"
SERVER_BIN = "STATEGRAPH_SERVER_BIN"
REPO = Path(__file__).resolve().parents[5]
# as conftest.py: connect, read, write, pool (seconds)
HTTP_TIMEOUT = (5.0, 25.0, 25.0, 5.0)


# ---------------------------------------------------------------- helpers


def marker() -> str:
    return f"s3-{uuid.uuid4().hex[:12]}"


def now() -> datetime:
    return datetime.now(timezone.utc)


async def get_ttl(client, thread_id: str) -> dict:
    """The thread as `GET /threads/{id}?include=ttl` gives it (the SDK's `include`)."""
    thread = await client.threads.get(thread_id, include=["ttl"])
    assert "ttl" in thread, sorted(thread)
    return thread


def assert_ttl(ttl, strategy: str, minutes: float, set_between: tuple[datetime, datetime]):
    """`ttl` is `{"strategy", "ttl_minutes", "expires_at"}` with `expires_at` the
    minutes after an instant within `set_between` (the request's start and end)."""
    assert isinstance(ttl, dict) and set(ttl) == TTL_KEYS, ttl
    assert ttl["strategy"] == strategy, ttl
    assert ttl["ttl_minutes"] == minutes, ttl
    expires = parse_ts(ttl["expires_at"])
    lo, hi = set_between
    slack = timedelta(seconds=1)
    assert lo + timedelta(minutes=minutes) - slack <= expires <= hi + timedelta(minutes=minutes) + slack, (
        ttl, lo.isoformat(), hi.isoformat())


async def poll(fetch, done, timeout: float = 10.0, every: float = 0.1):
    """`await fetch()` until `done(result)`, at most `timeout` seconds; the last result."""
    deadline = time.monotonic() + timeout
    while True:
        result = await fetch()
        if done(result) or time.monotonic() > deadline:
            return result
        await asyncio.sleep(every)


def server_binary() -> Path:
    if OFFICIAL:
        pytest.skip("starts a stategraph server of its own")
    given = os.environ.get(SERVER_BIN)
    path = Path(given) if given else REPO / "target" / "debug" / "server"
    if not path.is_file():
        pytest.skip(f"no server binary at {path} (set {SERVER_BIN})")
    return path


@contextmanager
def own_server(tmp_path: Path, settings: str = "", database: str = "memory", env=None):
    """A stategraph server on 127.0.0.1 with these `stategraph.toml` settings and
    environment (no other STATEGRAPH_ variable is passed on), on `memory` or a SQLite
    file in `tmp_path`; its URL. Stopped (SIGTERM, then SIGKILL) on the way out."""
    binary = server_binary()
    config = tmp_path / "stategraph.toml"
    config.write_text(settings)
    url = "memory" if database == "memory" else f"sqlite://{tmp_path / 'server.db'}"
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("STATEGRAPH_")}
    child_env.update(env or {})
    log = open(tmp_path / "server.log", "wb")
    proc = subprocess.Popen(
        [str(binary), "--host", "127.0.0.1", "--port", "0", "--database-url", url,
         "--config", str(config)],
        cwd=tmp_path,
        env=child_env,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    try:
        first = proc.stdout.readline()
        if not first.startswith("listening on "):
            proc.kill()
            proc.wait()
            log.flush()
            pytest.fail(
                f"the server's first line is {first!r}; its log: "
                f"{(tmp_path / 'server.log').read_text(errors='replace')[-2000:]}"
            )
        # Drain what it prints later, so that its writes never block.
        threading.Thread(target=proc.stdout.read, daemon=True).start()
        yield first.removeprefix("listening on ").strip().rstrip("/")
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()


@asynccontextmanager
async def own_client(client, url: str):
    """A client of the same kind as `client` (async or sync) for the server at `url`."""
    if client.kind == "async":
        raw = get_client(url=url, api_key=None, timeout=HTTP_TIMEOUT)
    else:
        raw = get_sync_client(url=url, api_key=None, timeout=HTTP_TIMEOUT)
    try:
        yield type(client)(client.kind, raw)
    finally:
        if client.kind == "async":
            await raw.aclose()
        else:
            raw.close()


def is_run_done(part) -> bool:
    return part.event == "metadata" and part.data.get("status") == "run_done"


def event_key(event_id: str) -> tuple[int, int]:
    """An SSE id `<ms>-<seq>` as numbers, the order the server gives them."""
    ms, _, seq = event_id.partition("-")
    return int(ms), int(seq)


def run_events(part_list) -> list[tuple[str, dict]]:
    return [(p.event, p.data) for p in part_list]


@asynccontextmanager
async def thread_stream(client, thread_id: str, last_event_id: str | None = None,
                        timeout: float = 10.0):
    """The SDK's `threads.join_stream(thread_id, last_event_id=...)`, read part by part
    (the conftest adapter collects a whole stream, and a thread's stream never ends).
    Open when this yields: the server has answered the request (seen by an httpx
    response hook), and it follows the thread before it answers, so a run started
    afterwards is streamed from its first event. Yields `read(n)`: the parts up to the
    n-th `run_done` metadata from here, within `timeout` seconds. Closed on the way
    out (the follower leaves)."""
    path = f"/threads/{thread_id}/stream"
    opened = threading.Event()

    def seen(response):
        if response.request.url.path == path:
            opened.set()

    async def aseen(response):
        seen(response)

    http = client.raw.http.client
    hook = aseen if client.kind == "async" else seen
    http.event_hooks["response"].append(hook)
    if client.kind == "async":
        stream = await client.raw.threads.join_stream(thread_id, last_event_id=last_event_id)

        def pull():
            return anext(stream, None)
    else:
        stream = client.raw.threads.join_stream(thread_id, last_event_id=last_event_id)

        def pull():
            return asyncio.to_thread(next, stream, None)

    # the request goes out with the first read
    pending = asyncio.ensure_future(pull())

    async def read(run_dones: int = 1) -> list:
        nonlocal pending
        parts = []
        deadline = time.monotonic() + timeout
        while sum(map(is_run_done, parts)) < run_dones:
            step, pending = pending or asyncio.ensure_future(pull()), None
            try:
                part = await asyncio.wait_for(step, max(deadline - time.monotonic(), 0.01))
            except TimeoutError:
                pytest.fail(f"no run_done number {run_dones} within {timeout} s: {run_events(parts)}")
            assert part is not None, f"the thread's stream ended: {run_events(parts)}"
            parts.append(part)
        return parts

    try:
        deadline = time.monotonic() + timeout
        while not (opened.is_set() or pending.done()):
            assert time.monotonic() < deadline, f"{path} did not answer within {timeout} s"
            await asyncio.sleep(0.01)
        yield read
    finally:
        http.event_hooks["response"].remove(hook)
        if pending is not None and not pending.done():
            pending.cancel()
        if client.kind == "async":
            if pending is not None:
                with suppress(asyncio.CancelledError, Exception):
                    await pending
            await stream.aclose()
        else:
            try:
                stream.close()
            except ValueError:  # still read by a timed-out worker thread
                pass


# ---------------------------------------------------------------- thread TTL


async def test_S3_threads_ttl_on_create(client):
    """`threads.create(ttl=...)` (a number: strategy delete; a dict as is) is shown by
    `threads.get(include=["ttl"])` only; a thread without one shows `"ttl": null`."""
    mk = marker()
    before = now()
    made = await client.threads.create(metadata={"suite": mk}, ttl=5)
    after = now()
    tid = made["thread_id"]
    assert "ttl" not in made, sorted(made)

    with_ttl = await get_ttl(client, tid)
    assert_ttl(with_ttl["ttl"], "delete", 5, (before, after))
    # set at creation: expires_at is created_at plus the minutes
    created = parse_ts(with_ttl["created_at"])
    expires = parse_ts(with_ttl["ttl"]["expires_at"])
    assert abs(expires - created - timedelta(minutes=5)) < timedelta(seconds=1), with_ttl
    # the plain read is the same thread without the key
    plain = await client.threads.get(tid)
    assert "ttl" not in plain, sorted(plain)
    assert {k: v for k, v in with_ttl.items() if k != "ttl"} == plain

    # a dict: strategy and (fractional) minutes as given
    before = now()
    keep = await client.threads.create(
        metadata={"suite": mk}, ttl={"ttl": 0.5, "strategy": "keep_latest"}
    )
    after = now()
    assert_ttl((await get_ttl(client, keep["thread_id"]))["ttl"], "keep_latest", 0.5, (before, after))
    # a dict without a strategy: delete
    before = now()
    bare = await client.threads.create(metadata={"suite": mk}, ttl={"ttl": 90})
    after = now()
    assert_ttl((await get_ttl(client, bare["thread_id"]))["ttl"], "delete", 90, (before, after))

    # no ttl: null when included, absent otherwise
    none = await client.threads.create(metadata={"suite": mk})
    assert (await get_ttl(client, none["thread_id"]))["ttl"] is None
    assert "ttl" not in await client.threads.get(none["thread_id"])

    # search never shows it
    found = await client.threads.search(metadata={"suite": mk})
    assert len(found) == 4
    assert all("ttl" not in t for t in found), [sorted(t) for t in found]


async def test_S3_threads_ttl_raw_include_query(client):
    """The same read through the SDK's raw `http.get` with `params={"include": "ttl"}`,
    the form `threads.get(include=[...])` sends."""
    tid = (await client.threads.create(ttl=7))["thread_id"]
    raw = await client.http.get(f"/threads/{tid}", params={"include": "ttl"})
    assert raw == await client.threads.get(tid, include=["ttl"])
    assert raw["ttl"]["strategy"] == "delete" and raw["ttl"]["ttl_minutes"] == 7
    assert "ttl" not in await client.http.get(f"/threads/{tid}")


async def test_S3_threads_ttl_on_update(client):
    """`threads.update(thread_id, ttl=...)` sets or replaces the TTL, counted from the
    update; an update without `ttl` keeps it; the update's answer has no `ttl` key."""
    tid = (await client.threads.create())["thread_id"]
    assert (await get_ttl(client, tid))["ttl"] is None

    before = now()
    updated = await client.threads.update(tid, metadata={"step": 1}, ttl=10)
    after = now()
    assert "ttl" not in updated, sorted(updated)
    assert updated["metadata"] == {"step": 1}
    first = (await get_ttl(client, tid))["ttl"]
    assert_ttl(first, "delete", 10, (before, after))

    # replaced by a dict: another strategy and length, counted from this update
    before = now()
    await client.threads.update(tid, metadata={}, ttl={"ttl": 2, "strategy": "keep_latest"})
    after = now()
    second = (await get_ttl(client, tid))["ttl"]
    assert_ttl(second, "keep_latest", 2, (before, after))

    # metadata only: the TTL stays as it was
    await client.threads.update(tid, metadata={"step": 2})
    thread = await get_ttl(client, tid)
    assert thread["ttl"] == second
    assert thread["metadata"] == {"step": 2}

    # a TTL on a thread created with one replaces it
    tid2 = (await client.threads.create(ttl=60))["thread_id"]
    before = now()
    await client.threads.update(tid2, metadata={}, ttl=3)
    after = now()
    assert_ttl((await get_ttl(client, tid2))["ttl"], "delete", 3, (before, after))


async def test_S3_threads_ttl_invalid(client):
    """A bad ttl is 422 on create (nothing made) and on update (nothing changed):
    minutes not a number or negative, an unknown strategy, a bare number sent raw."""
    mk = marker()
    for bad in ({"ttl": "x"}, {"strategy": "bogus", "ttl": 5}, {"ttl": -1}):
        # the SDK sends a dict as is
        with pytest.raises(UnprocessableEntityError) as err:
            await client.threads.create(metadata={"suite": mk}, ttl=bad)
        assert status_of(err) == 422
        assert "ttl" in str(err.value), str(err.value)
    with pytest.raises(UnprocessableEntityError) as err:
        await client.threads.create(metadata={"suite": mk}, ttl={"strategy": "bogus", "ttl": 5})
    assert "bogus" in str(err.value), str(err.value)
    # the API's ttl is an object; the SDK wraps a number, a raw request does not
    with pytest.raises(UnprocessableEntityError):
        await client.http.post("/threads", json={"metadata": {"suite": mk}, "ttl": 5})
    assert await client.threads.count(metadata={"suite": mk}) == 0

    tid = (await client.threads.create(metadata={"suite": mk}, ttl=5))["thread_id"]
    ttl = (await get_ttl(client, tid))["ttl"]
    for bad in ({"ttl": "x"}, {"strategy": "bogus", "ttl": 5}, {"ttl": -1}):
        with pytest.raises(UnprocessableEntityError) as err:
            await client.threads.update(tid, metadata={"changed": True}, ttl=bad)
        assert status_of(err) == 422
    with pytest.raises(UnprocessableEntityError):
        await client.http.patch(f"/threads/{tid}", json={"metadata": {"changed": True}, "ttl": 5})
    thread = await get_ttl(client, tid)
    assert thread["ttl"] == ttl
    assert thread["metadata"] == {"suite": mk}


async def test_S3_threads_ttl_default_from_settings(client, tmp_path):
    """On a server started with STATEGRAPH_THREAD_TTL_MINUTES=30, a thread created
    without a ttl gets `{"strategy": "delete", "ttl_minutes": 30}`; a given ttl wins."""
    with own_server(tmp_path, env={"STATEGRAPH_THREAD_TTL_MINUTES": "30"}) as url:
        async with own_client(client, url) as own:
            before = now()
            tid = (await own.threads.create())["thread_id"]
            after = now()
            assert_ttl((await get_ttl(own, tid))["ttl"], "delete", 30, (before, after))
            before = now()
            given = (await own.threads.create(ttl={"ttl": 5, "strategy": "keep_latest"}))["thread_id"]
            after = now()
            assert_ttl((await get_ttl(own, given))["ttl"], "keep_latest", 5, (before, after))
            assert "ttl" not in await own.threads.get(tid)


# ---------------------------------------------------------------- supersteps with a command


async def test_S3_threads_create_supersteps_command(client):
    """`threads.create(graph_id="hitl", supersteps=[...])` whose last update is a
    `command` (resume, update, goto) as `review`: the thread stops before `finish`
    with the command's update applied; a run with no input then runs `finish`."""
    thread = await client.threads.create(graph_id="hitl", supersteps=HITL_SUPERSTEPS)
    tid = thread["thread_id"]
    expected = {"messages": [], "count": 1, "approved": "via-command"}
    assert thread["metadata"] == {"graph_id": "hitl"}
    assert thread["status"] == "interrupted"
    assert thread["values"] == expected

    state = await client.threads.get_state(tid)
    assert state["values"] == expected
    assert state["next"] == ["finish"]
    assert [t["name"] for t in state["tasks"]] == ["finish"]
    assert state["tasks"][0]["interrupts"] == []
    assert state["interrupts"] == []
    assert state["metadata"]["source"] == "update"
    assert state["metadata"]["step"] == 1

    # one checkpoint per superstep
    history = await client.threads.get_history(tid)
    assert [h["metadata"]["step"] for h in history] == [1, 0, -1]
    assert [h["metadata"]["source"] for h in history] == ["update", "update", "input"]
    assert [h["next"] for h in history] == [["finish"], ["review"], ["__start__"]]
    assert history[1]["values"] == {"messages": [], "count": 1}

    result = await client.runs.wait(tid, "hitl", input=None)
    assert result == {"messages": [], "count": 101, "approved": "via-command"}
    after = await client.threads.get(tid)
    assert after["status"] == "idle"
    assert after["values"] == result
    assert (await client.threads.get_state(tid))["next"] == []
    # finish saw the command's update
    item = await client.store.get_item(["memories", "demo"], "last")
    assert item is not None and item["value"] == {"approved": "via-command"}, item


async def test_S3_threads_create_supersteps_command_parts(client):
    """A command with only `update` applies it (and the node's edge: next `finish`);
    a command that is not an object is 422 and makes no thread."""
    steps = HITL_SUPERSTEPS[:2] + [
        {"updates": [{"values": None, "command": {"update": {"approved": "only-update"}}, "as_node": "review"}]}
    ]
    thread = await client.threads.create(graph_id="hitl", supersteps=steps)
    assert thread["values"] == {"messages": [], "count": 1, "approved": "only-update"}
    assert (await client.threads.get_state(thread["thread_id"]))["next"] == ["finish"]

    tid = str(uuid.uuid4())
    bad = HITL_SUPERSTEPS[:2] + [{"updates": [{"values": None, "command": "x", "as_node": "review"}]}]
    with pytest.raises(UnprocessableEntityError):
        await client.threads.create(thread_id=tid, graph_id="hitl", supersteps=bad)
    assert await client.threads.search(ids=[tid]) == []


# ---------------------------------------------------------------- feedback_keys


async def test_S3_runs_feedback_keys_empty(client):
    """`feedback_keys=[]` is accepted and kept in the run's kwargs (null when not
    given). SDK 0.4.14 has `feedback_keys` on `runs.stream` only, so the background
    create sends it through the SDK's raw `http.post`."""
    tid = (await client.threads.create())["thread_id"]
    parts = await client.runs.stream(tid, "simple", input={"count": 0}, feedback_keys=[])
    assert parts and parts[0].event == "metadata", [p.event for p in parts]
    assert not [p for p in parts if p.event == "error"], [p.data for p in parts]
    streamed = await client.runs.get(tid, parts[0].data["run_id"])
    assert streamed["kwargs"]["feedback_keys"] == []
    assert streamed["status"] == "success"

    created = await client.http.post(
        f"/threads/{tid}/runs",
        json={"assistant_id": "simple", "input": {"count": 0}, "feedback_keys": []},
    )
    assert created["kwargs"]["feedback_keys"] == []
    await client.runs.join(tid, created["run_id"])
    assert (await client.runs.get(tid, created["run_id"]))["status"] == "success"

    plain = await client.runs.create(tid, "simple", input={"count": 0})
    assert plain["kwargs"]["feedback_keys"] is None
    await client.runs.join(tid, plain["run_id"])


async def test_S3_runs_feedback_keys_refused(client):
    """Non-empty `feedback_keys` (LangSmith is not available) is 422 on stream,
    create and wait, and no run is made."""
    tid = (await client.threads.create())["thread_id"]
    with pytest.raises(httpx.HTTPStatusError) as err:
        await client.runs.stream(tid, "simple", input={"count": 0}, feedback_keys=["thumbs"])
    assert status_of(err) == 422
    assert isinstance(err.value, UnprocessableEntityError)
    assert "feedback_keys" in str(err.value), str(err.value)
    for path in (f"/threads/{tid}/runs", f"/threads/{tid}/runs/wait", "/runs/wait"):
        with pytest.raises(httpx.HTTPStatusError) as err:
            await client.http.post(
                path, json={"assistant_id": "simple", "input": {"count": 0}, "feedback_keys": ["thumbs"]}
            )
        assert status_of(err) == 422, path
    assert await client.runs.list(tid) == []


# ---------------------------------------------------------------- relative webhooks


async def test_S3_runs_webhook_relative_refused_by_default(client):
    """With the default settings (loopback webhooks refused) a relative webhook URL is
    422 on create, wait and stream, and no run is made."""
    tid = (await client.threads.create())["thread_id"]
    hook = f"/threads/{tid}/runs"
    with pytest.raises(httpx.HTTPStatusError) as err:
        await client.runs.create(tid, "simple", input={"count": 0}, webhook=hook)
    assert status_of(err) == 422
    assert "loopback" in str(err.value).lower(), str(err.value)
    assert isinstance(err.value, UnprocessableEntityError)
    with pytest.raises(UnprocessableEntityError):
        await client.runs.stream(tid, "simple", input={"count": 0}, webhook=hook)
    # runs.wait raises a plain httpx.HTTPStatusError (the SDK's reconnecting request)
    for thread_id in (tid, None):
        with pytest.raises(httpx.HTTPStatusError) as err:
            await client.runs.wait(thread_id, "simple", input={"count": 0}, webhook=hook)
        assert status_of(err) == 422
    assert await client.runs.list(tid) == []


@pytest.mark.parametrize("database", ["memory", "sqlite"])
async def test_S3_runs_webhook_relative_in_process(client, tmp_path, database):
    """With `[webhooks] allow_loopback = true`, a run's relative webhook
    `/threads/{id}/runs` is POSTed the run record in process: the server's own route
    makes a second run on the thread (the record's assistant, no input, no webhook)."""
    settings = "[webhooks]\nallow_loopback = true\n"
    with own_server(tmp_path, settings, database) as url:
        async with own_client(client, url) as own:
            tid = (await own.threads.create())["thread_id"]
            hook = f"/threads/{tid}/runs"
            first = await own.runs.create(tid, "simple", input={"count": 0}, webhook=hook)
            assert first["kwargs"]["webhook"] == hook

            runs = await poll(lambda: own.runs.list(tid), lambda rs: len(rs) >= 2, timeout=10)
            assert len(runs) == 2, runs
            (second,) = [r for r in runs if r["run_id"] != first["run_id"]]
            assert second["thread_id"] == tid
            assert second["assistant_id"] == first["assistant_id"]
            assert second["kwargs"]["input"] is None
            assert second["kwargs"]["webhook"] is None
            await own.runs.join(tid, second["run_id"])
            assert (await own.runs.get(tid, first["run_id"]))["status"] == "success"
            assert (await own.runs.get(tid, second["run_id"]))["status"] == "success"
            # the second run has no webhook: no third
            await asyncio.sleep(0.3)
            assert len(await own.runs.list(tid)) == 2
            assert (await own.threads.get(tid))["values"]["count"] == 1


# ---------------------------------------------------------------- thread stream resume


async def test_S3_threads_join_stream_resume_last_event_id(client):
    """A thread's stream is kept after its follower left: `threads.join_stream(tid,
    last_event_id=...)` (the SDK sends it as `Last-Event-ID`) replays the events after
    that id, `"-1"` every kept event, and without one the stream is the live tail.
    A run's events on it: `metadata {run_id, attempt}`, its `values`, then `metadata
    {status: run_done, run_id}`, each with an SSE id (`StreamPart.id`)."""
    tid = (await client.threads.create())["thread_id"]

    def expected(run_id: str) -> list[tuple[str, dict]]:
        # simple with count 1: the input's values, then slow's
        return [
            ("metadata", {"run_id": run_id, "attempt": 1}),
            ("values", {"messages": [], "count": 1}),
            ("values", {"messages": [], "count": 2}),
            ("metadata", {"status": "run_done", "run_id": run_id}),
        ]

    # followed before the first run (the server keeps a thread's stream once followed)
    async with thread_stream(client, tid) as read:
        first = await client.runs.create(tid, "simple", input={"count": 1})
        live = await read()
    assert run_events(live) == expected(first["run_id"])
    assert all(p.id for p in live), [p.id for p in live]
    last_seen = live[-1].id

    # nobody follows it now; a second run goes by
    second = await client.runs.create(tid, "simple", input={"count": 1})
    assert await client.runs.join(tid, second["run_id"]) == {"messages": [], "count": 2}

    # from the last id seen: exactly the second run's events
    async with thread_stream(client, tid, last_event_id=last_seen) as read:
        missed = await read()
    assert run_events(missed) == expected(second["run_id"])
    assert all(p.id for p in missed), [p.id for p in missed]

    # -1: every kept event, both runs, with the ids they had
    async with thread_stream(client, tid, last_event_id="-1") as read:
        everything = await read(2)
    assert len(everything) == 8, run_events(everything)
    assert sum(map(is_run_done, everything)) == 2
    assert [(p.event, p.data, p.id) for p in everything] == [
        (p.event, p.data, p.id) for p in live + missed
    ]
    keys = [event_key(p.id) for p in everything]
    assert all(a < b for a, b in zip(keys, keys[1:])), [p.id for p in everything]

    # no Last-Event-ID: the live tail, nothing kept replayed
    async with thread_stream(client, tid) as read:
        third = await client.runs.create(tid, "simple", input={"count": 1})
        tail = await read()
    assert run_events(tail) == expected(third["run_id"])
    assert event_key(tail[0].id) > keys[-1], (tail[0].id, everything[-1].id)
