"""Slow readers against the example server (CLIENT-CONFORMANCE Layer 6).

    python slow_reader.py SERVER_BINARY DATABASE_URL

Each check starts a server of its own with a small per-subscriber buffer
(`[streams] subscriber_buffer_events = 16`, in a temporary settings file
given with `--config`). The workload is the `agent` graph (the quickstart
ReAct agent with its scripted model): a question with N sums makes N tool
calls, so one run emits about 6 N + 27 events (values, updates, debug,
messages-tuple, tasks, checkpoints) within a second. The official Python
SDK (`langgraph_sdk`) reads the streams, sleeping 50 ms after each part.

1. A slow reader does not slow the run: it ends about when it does with
   no reader, while the reader has taken only a few of its events.
2. The server's RSS stays bounded with 20 concurrent slow readers (100 ms
   a part, 64 KiB socket receive buffers) of 20 runs whose events weigh
   160 MB: its peak growth is at most that of the same runs with no reader
   (on a fresh server) plus a full queue (16 of its largest frames) a
   reader plus 16 MB.
3. With `stream_resumable`, the SDK's slow reader still gets every event:
   exactly its run's stored events (the replay of `Last-Event-ID: -1`),
   in the order of an identical run's (read without sleeping); the SDK
   reconnects through `Location` with `Last-Event-ID` when the server
   drops it.
4. Without `stream_resumable`, a slow reader is disconnected: its stream
   ends early (fewer events than the run emitted), and the run succeeds.

Talks to 127.0.0.1 only; every wait is bounded. Prints one line per check
and `slow-reader: N passed, M failed`; exits 1 when one failed.
"""
from __future__ import annotations

import asyncio
import collections
import datetime
import functools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings

import httpx
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import LangGraphClient

TIMEOUT = 30.0
BUFFER = 16  # the subscriber buffer the server is given, in events
SLEEP = 0.05  # what a slow reader sleeps after each part
READERS = 20  # the concurrent slow readers of check 2
MODES = ["values", "updates", "debug", "messages-tuple", "tasks", "checkpoints"]
SETTINGS = f"""\
[streams]
subscriber_buffer_events = {BUFFER}
[runs]
max_concurrent = {READERS + 4}
"""


def start(binary: str, database: str, config: str) -> tuple[subprocess.Popen, str]:
    # The scripted model, whatever this shell has; the settings file's
    # values, not the environment's.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("STATEGRAPH_", "OPENAI_")) and k != "DATABASE_URI"
    }
    proc = subprocess.Popen(
        [binary, "--port", "0", "--database-url", database, "--config", config],
        stdout=subprocess.PIPE,
        # Its log goes to ours, where a failure can be read.
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    watchdog = threading.Timer(TIMEOUT, proc.kill)
    watchdog.start()
    line = proc.stdout.readline().strip()
    watchdog.cancel()
    if not line.startswith("listening on "):
        proc.kill()
        raise RuntimeError(f"the server's first line is not its address: {line!r}")
    return proc, line.removeprefix("listening on ")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=TIMEOUT)


def agent_input(sums: int, pad: int = 0) -> dict:
    """A question the scripted model answers with `sums` tool calls; `pad`
    characters more make every event that carries the state that larger."""
    question = ", ".join(f"{i} + 1" for i in range(sums))
    if pad:
        question += " " + "x" * pad
    return {"messages": [{"role": "user", "content": question}]}


def events(raw: str) -> list[tuple[str, str, str | None]]:
    """(name, data, id) of each event of an SSE body (CRLF framing)."""
    out = []
    for block in raw.split("\r\n\r\n"):
        if not block or block.startswith(":"):
            continue
        fields = dict(line.split(": ", 1) for line in block.split("\r\n"))
        out.append((fields["event"], fields["data"], fields.get("id")))
    return out


def seconds(run: dict) -> float:
    """How long a run took: from its creation to its last update (its end)."""
    parse = datetime.datetime.fromisoformat
    return (parse(run["updated_at"]) - parse(run["created_at"])).total_seconds()


def span(runs: list[dict]) -> float:
    """From the first run's creation to the last one's end."""
    parse = datetime.datetime.fromisoformat
    return (
        max(parse(run["updated_at"]) for run in runs) - min(parse(run["created_at"]) for run in runs)
    ).total_seconds()


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field} in /proc/{pid}/status")


class Server:
    """A server started for one check, stopped (killed if need be) after it."""

    def __init__(self, binary: str, database: str, config: str) -> None:
        self.proc, self.url = start(binary, database, config)
        self.http = httpx.Client(base_url=self.url, timeout=TIMEOUT)

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *_) -> None:
        self.http.close()
        stop(self.proc)

    def thread(self) -> str:
        return self.http.post("/threads", json={}).json()["thread_id"]

    def run(self, tid: str, rid: str) -> dict:
        response = self.http.get(f"/threads/{tid}/runs/{rid}")
        assert response.status_code == 200, f"GET run: {response.status_code} {response.text}"
        return response.json()

    def background(self, sums: int, pad: int = 0, resumable: bool = False) -> tuple[str, str, dict]:
        """A run no one reads, to its end: (thread, run id, run record)."""
        tid = self.thread()
        body = {
            "assistant_id": "agent",
            "input": agent_input(sums, pad),
            "stream_mode": MODES,
            "stream_resumable": resumable,
        }
        response = self.http.post(f"/threads/{tid}/runs", json=body)
        assert response.status_code == 200, f"POST runs: {response.status_code} {response.text}"
        rid = response.json()["run_id"]
        self.http.get(f"/threads/{tid}/runs/{rid}/join")
        run = self.run(tid, rid)
        assert run["status"] == "success", f"the reference run: {run['status']}"
        return tid, rid, run

    def forget(self, tids: list[str]) -> None:
        """Deletes threads (check 2's weigh some MB each in a database)."""
        for tid in tids:
            self.http.delete(f"/threads/{tid}")

    def log(self, tid: str, rid: str) -> list[tuple[str, str, str | None]]:
        """A resumable run's stored events (the replay of Last-Event-ID -1)."""
        raw = self.http.get(f"/threads/{tid}/runs/{rid}/stream", headers={"Last-Event-ID": "-1"}).text
        return events(raw)


class Recorder:
    """The SDK's requests and their answers, for the report."""

    def __init__(self, t0: float) -> None:
        self.t0, self.lines = t0, []

    def response(self, response: httpx.Response) -> None:
        request = response.request
        path = re.sub(r"/threads/[0-9a-f-]{36}", "/threads/T", request.url.path)
        path = re.sub(r"/runs/[0-9a-f-]{36}", "/runs/R", path)
        line = f"{time.monotonic() - self.t0:.2f}s {request.method} {path}"
        if last := request.headers.get("last-event-id"):
            line += f" Last-Event-ID: {last}"
        line += f" -> {response.status_code}"
        if response.headers.get("content-type", "").startswith("application/json"):
            response.read()
            line += f" status={response.json().get('status')}"
        self.lines.append(line)

    def __str__(self) -> str:
        return "; ".join(self.lines)


def sdk_stream(server: Server, sums: int, resumable: bool, sleep: float, on_first=None):
    """An SDK consumer of a new run's stream that sleeps `sleep` after each
    part: (thread, parts, seconds it read, recorder)."""
    client = get_sync_client(url=server.url, timeout=TIMEOUT)
    tid = server.thread()
    t0 = time.monotonic()
    recorder = Recorder(t0)
    client.http.client.event_hooks["response"].append(recorder.response)
    parts = []
    try:
        for part in client.runs.stream(
            tid,
            "agent",
            input=agent_input(sums),
            stream_mode=MODES,
            stream_resumable=resumable,
        ):
            parts.append(part)
            if len(parts) == 1 and on_first:
                on_first(tid, part.data["run_id"], parts, t0)
            if time.monotonic() - t0 > TIMEOUT:
                raise AssertionError(f"the stream still runs after {TIMEOUT} s ({len(parts)} parts)")
            time.sleep(sleep)
    finally:
        client.http.client.close()
    return tid, parts, time.monotonic() - t0, recorder


def names(evs) -> list[str]:
    return [e[0] for e in evs]


SUMS = 100  # checks 1 and 4: about 630 events in well under a second


def slow_reader_does_not_slow_the_run(serve) -> str:
    with serve() as server:
        _, _, alone = server.background(SUMS)
        reference = seconds(alone)
        tid, rid, _ = server.background(SUMS, resumable=True)
        total = len(server.log(tid, rid))
        seen: dict = {}

        def watch(tid: str, rid: str, parts: list, t0: float) -> None:
            """Polls the run from a thread of its own while the reader reads."""

            def poll() -> None:
                with httpx.Client(base_url=server.url, timeout=TIMEOUT) as http:
                    while time.monotonic() - t0 < TIMEOUT:
                        status = http.get(f"/threads/{tid}/runs/{rid}").json()["status"]
                        if status not in ("pending", "running"):
                            seen.update(status=status, at=time.monotonic() - t0, parts=len(parts))
                            return
                        time.sleep(0.02)

            seen["rid"] = rid
            seen["poller"] = threading.Thread(target=poll, daemon=True)
            seen["poller"].start()

        tid, parts, read, _ = sdk_stream(server, SUMS, resumable=False, sleep=SLEEP, on_first=watch)
        seen["poller"].join(TIMEOUT)
        run = server.run(tid, seen["rid"])
    took = seconds(run)
    figures = (
        f"run {took:.2f}s with a slow reader, {reference:.2f}s with none; it ended "
        f"{seen.get('at', float('nan')):.2f}s after the request, when the reader had taken "
        f"{seen.get('parts')} of {total} events ({total * SLEEP:.1f}s at {SLEEP * 1000:.0f} ms a part)"
    )
    assert run["status"] == "success", f"{run['status']}; {figures}"
    assert seen.get("status") == "success", f"the poller saw {seen.get('status')}; {figures}"
    assert took <= max(3 * reference, reference + 2.0), f"the run was slowed: {figures}"
    assert seen["parts"] < total // 2, f"the run waited for the reader: {figures}"
    return figures


PAD = 100_000  # check 2: the events that carry the state (most) are 100 kB larger
RSS_SUMS = 30  # about 200 events, 8 MB
# Check 2's readers read slower than the runs write even on SQLite (whose
# runs, checkpointing at the end only, take a few seconds for 20): queued,
# most of the frames would wait in the server.
RSS_SLEEP = 0.1


class Rss:
    """A process's RSS growth while a block runs: its peak (sampled every
    20 ms, and VmHWM reset at the start when the kernel lets us) less its
    RSS before."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def __enter__(self) -> "Rss":
        time.sleep(0.2)
        self.before = rss_mb(self.pid)
        try:  # Linux: "5" resets the high-water mark VmHWM
            with open(f"/proc/{self.pid}/clear_refs", "w") as clear:
                clear.write("5")
            self.hwm = True
        except OSError:
            self.hwm = False
        self.samples = [self.before]
        self.done = threading.Event()
        self.sampler = threading.Thread(target=self.sample, daemon=True)
        self.sampler.start()
        return self

    def sample(self) -> None:
        while not self.done.is_set():
            self.samples.append(rss_mb(self.pid))
            time.sleep(0.02)

    def __exit__(self, *_) -> None:
        self.done.set()
        self.sampler.join(5)
        self.peak = max(self.samples + ([rss_mb(self.pid, "VmHWM")] if self.hwm else []))
        self.growth = self.peak - self.before

    def __str__(self) -> str:
        return f"{self.before:.0f} -> {self.peak:.0f} MB (+{self.growth:.1f})"


def rss_bounded_with_slow_readers(serve) -> str:
    body = {
        "assistant_id": "agent",
        "input": agent_input(RSS_SUMS, PAD),
        "stream_mode": MODES,
        "durability": "exit",
    }
    # A fresh server runs the runs with no reader: their own memory. (In one
    # process the second batch would reuse what the first one freed.)
    with serve() as server:
        tid, rid, _ = server.background(RSS_SUMS, pad=PAD, resumable=True)
        log = server.log(tid, rid)  # what one run's events weigh
        with Rss(server.proc.pid) as alone:
            runs = []
            for _ in range(READERS):
                tid = server.thread()
                runs.append((tid, server.http.post(f"/threads/{tid}/runs", json=body).json()["run_id"]))
            for tid, rid in runs:
                server.http.get(f"/threads/{tid}/runs/{rid}/join")
            alone_span = span([server.run(tid, rid) for tid, rid in runs])
        server.forget([tid for tid, _ in runs])
    frames = [len(name) + len(data) + 40 for name, data, _ in log]
    produced = sum(frames) * READERS / 1e6
    queues = READERS * BUFFER * max(frames) / 1e6

    async def reader(client, tid: str) -> tuple[str, int]:
        rid, count = None, 0
        async for part in client.runs.stream(
            tid, "agent", input=body["input"], stream_mode=MODES, durability="exit"
        ):
            rid = rid or part.data["run_id"]
            count += 1
            await asyncio.sleep(RSS_SLEEP)
        return rid, count

    async def readers(tids: list[str]) -> list:
        # The SDK's client (as `get_client` makes it) on sockets with a
        # small receive buffer: the kernel's, far larger on loopback, would
        # hide most of what a server queued.
        transport = httpx.AsyncHTTPTransport(
            retries=5, socket_options=[(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)]
        )
        async with httpx.AsyncClient(base_url=server.url, transport=transport, timeout=TIMEOUT) as http:
            client = LangGraphClient(http)
            return await asyncio.wait_for(
                asyncio.gather(*(reader(client, tid) for tid in tids)), TIMEOUT
            )

    with serve() as server:
        tids = [server.thread() for _ in range(READERS)]
        t0 = time.monotonic()
        # The SDK warns when it reconnects without an id (a run still going
        # when its reader was dropped): counted, not printed.
        with warnings.catch_warnings(record=True) as warned, Rss(server.proc.pid) as slow:
            warnings.simplefilter("always")
            results = asyncio.run(readers(tids))
        took = time.monotonic() - t0
        records = [server.run(tid, rid) for tid, (rid, _) in zip(tids, results)]
        server.forget(tids)
    statuses = collections.Counter(run["status"] for run in records)
    got = sum(count for _, count in results)
    reconnects = sum("Reconnecting without a Last-Event-ID" in str(w.message) for w in warned)
    # Bounded: the runs' own memory, BUFFER frames a reader, and slack.
    # Queued for the readers, the frames would add nearly all of `produced`.
    limit = alone.growth + queues + 16
    figures = (
        f"RSS {slow} with {READERS} slow readers, {alone} for the same runs with none "
        f"(limit +{limit:.0f}); {READERS} runs of {len(log)} events, {produced:.0f} MB of frames in all, "
        f"at most {queues:.0f} MB in full queues; the readers took {got} events in {took:.1f}s "
        f"({reconnects} reconnects to the live tail); runs {dict(statuses)} within "
        f"{span(records):.1f}s ({alone_span:.1f}s with no reader)"
    )
    assert statuses == {"success": READERS}, figures
    assert queues + 16 < produced * 0.75, f"the workload does not tell bounded from queued: {figures}"
    assert slow.growth < limit, f"RSS grew more than {limit:.0f} MB: {figures}"
    return figures


RESUME_SUMS = 15  # check 3: about 120 events, 6 s at 50 ms a part


def resumable_slow_reader_gets_everything(serve) -> str:
    with serve() as server:
        # The reference: an identical run read by the SDK without sleeping.
        ftid, fparts, _, _ = sdk_stream(server, RESUME_SUMS, resumable=True, sleep=0)
        flog = server.log(ftid, fparts[0].data["run_id"])
        tid, parts, read, recorder = sdk_stream(server, RESUME_SUMS, resumable=True, sleep=SLEEP)
        rid = parts[0].data["run_id"]
        log = server.log(tid, rid)
        run = server.run(tid, rid)
    got = [(p.event, p.data, p.id) for p in parts]
    stored = [(name, json.loads(data), id_) for name, data, id_ in log]
    missing = [e for e in stored if e not in got]
    figures = (
        f"the slow reader got {len(parts)} of its run's {len(log)} events in {read:.2f}s "
        f"(a fast reader of an identical run: {len(fparts)} of {len(flog)}); "
        f"run {run['status']}; SDK requests: {recorder}"
    )
    assert run["status"] == "success", figures
    assert log, f"the run kept no events: {figures}"
    assert not missing, (
        f"{len(missing)} events missed, the first {missing[0][0]} id {missing[0][2]}: {figures}"
    )
    assert got == stored, f"not the stored sequence: {figures}"
    assert names(log) == names(flog), f"not an identical run's events: {figures}"
    return figures


def non_resumable_slow_reader_is_cut(serve) -> str:
    with serve() as server:
        tid, rid, _ = server.background(SUMS, resumable=True)
        total = len(server.log(tid, rid))
        tid, parts, read, recorder = sdk_stream(server, SUMS, resumable=False, sleep=SLEEP)
        run = server.run(tid, parts[0].data["run_id"])
    figures = (
        f"the slow reader got {len(parts)} of {total} events and its stream ended after "
        f"{read:.2f}s; run {run['status']}; SDK requests: {recorder}"
    )
    assert run["status"] == "success", figures
    assert len(parts) < total, f"not disconnected: {figures}"
    assert read < total * SLEEP / 2, f"the stream went on: {figures}"
    return figures


def main() -> int:
    binary, database = sys.argv[1], sys.argv[2]
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "stategraph.toml")
        with open(config, "w") as file:
            file.write(SETTINGS)
        serve = functools.partial(Server, binary, database, config)
        for case in (
            slow_reader_does_not_slow_the_run,
            rss_bounded_with_slow_readers,
            resumable_slow_reader_gets_everything,
            non_resumable_slow_reader_is_cut,
        ):
            try:
                figures = case(serve)
                print(f"ok   {case.__name__}: {figures}", flush=True)
                passed += 1
            except Exception as err:  # a failed case is reported, the others still run
                print(f"FAIL {case.__name__}: {err!r}", flush=True)
                failed += 1
    print(f"slow-reader: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
