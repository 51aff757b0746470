"""Failure injection against the example server (CLIENT-CONFORMANCE Layer 6).

    python kill_restart.py SERVER_BINARY DATABASE_URL

1. A server killed with SIGKILL mid-run: a new server on the same database
   takes the run over as attempt 2, from the checkpoint it saved (its input
   not fed twice), and the run succeeds.
2. A stream cut mid-run: a reconnect with Last-Event-ID gets exactly the
   events it missed.

Talks to 127.0.0.1 only; every wait is bounded. Prints `N passed, M failed`.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import httpx

TIMEOUT = 30.0


def start(binary: str, database: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [binary, "--port", "0", "--database-url", database],
        stdout=subprocess.PIPE,
        # Its log goes to ours, where a failure can be read.
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("listening on "):
        proc.kill()
        raise RuntimeError(f"the server's first line is not its address: {line!r}")
    return proc, line.removeprefix("listening on ")


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, sig)
    proc.wait(timeout=TIMEOUT)


def poll(client: httpx.Client, path: str, done) -> dict:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        response = client.get(path)
        assert response.status_code == 200, f"GET {path}: {response.status_code} {response.text}"
        body = response.json()
        if done(body):
            return body
        time.sleep(0.05)
    raise AssertionError(f"GET {path} never reached the expected state")


def events(raw: str) -> list[tuple[str, str, str | None]]:
    """(name, data, id) of each event of an SSE body (CRLF framing)."""
    out = []
    for block in raw.split("\r\n\r\n"):
        if not block or block.startswith(":"):
            continue
        fields = dict(line.split(": ", 1) for line in block.split("\r\n"))
        out.append((fields["event"], fields["data"], fields.get("id")))
    return out


def killed_mid_run(binary: str, database: str) -> None:
    proc, url = start(binary, database)
    try:
        with httpx.Client(base_url=url, timeout=TIMEOUT) as client:
            tid = client.post("/threads", json={}).json()["thread_id"]
            run = client.post(
                f"/threads/{tid}/runs",
                json={"assistant_id": "simple", "input": {"count": 30}},
            ).json()
            rid = run["run_id"]
            # Its input checkpoint is saved and its node sleeps (3 s).
            poll(client, f"/threads/{tid}/state", lambda s: s["metadata"] and s["metadata"].get("run_id") == rid)
    finally:
        stop(proc, signal.SIGKILL)
    proc, url = start(binary, database)
    try:
        with httpx.Client(base_url=url, timeout=TIMEOUT) as client:
            joined = client.get(f"/threads/{tid}/runs/{rid}/join").json()
            assert joined == {"messages": [], "count": 31}, joined
            run = client.get(f"/threads/{tid}/runs/{rid}").json()
            assert run["status"] == "success", run["status"]
            assert run["kwargs"]["config"]["metadata"]["run_attempt"] == 2, run["kwargs"]["config"]["metadata"]
            history = client.post(f"/threads/{tid}/history", json={"limit": 50}).json()
            inputs = [s for s in history if s["metadata"]["source"] == "input"]
            assert len(inputs) == 1, f"the input was fed {len(inputs)} times"
            assert client.get(f"/threads/{tid}").json()["status"] == "idle"
    finally:
        stop(proc)


def cut_stream_resumes(binary: str, database: str) -> None:
    proc, url = start(binary, database)
    try:
        with httpx.Client(base_url=url, timeout=TIMEOUT) as client:
            tid = client.post("/threads", json={}).json()["thread_id"]
            body = {
                "assistant_id": "hitl",
                "input": {"messages": [{"role": "user", "content": "hi"}]},
                "stream_mode": ["values", "messages-tuple", "custom"],
                "stream_resumable": True,
            }
            seen = []
            with client.stream("POST", f"/threads/{tid}/runs/stream", json=body) as response:
                location = response.headers["location"]
                buffer = ""
                for text in response.iter_text():
                    buffer += text
                    seen = events(buffer.rsplit("\r\n\r\n", 1)[0] + "\r\n\r\n")
                    if len(seen) >= 3:
                        break  # the connection is cut here
            last_id = seen[-1][2]
            assert last_id, "a resumable run's events have ids"
            rest = events(client.get(location, headers={"Last-Event-ID": last_id}).text)
            everything = events(client.get(location, headers={"Last-Event-ID": "-1"}).text)
            ids = [e[2] for e in everything]
            assert len(set(ids)) == len(ids), "ids are unique"
            assert seen + rest == everything, (len(seen), len(rest), len(everything))
            assert everything[-1][0] == "values" and "__interrupt__" in json.loads(everything[-1][1])
    finally:
        stop(proc)


def main() -> int:
    binary, database = sys.argv[1], sys.argv[2]
    passed = failed = 0
    for case in (killed_mid_run, cut_stream_resumes):
        try:
            case(binary, database)
            print(f"ok   {case.__name__}")
            passed += 1
        except Exception as err:  # a failed case is reported, the others still run
            print(f"FAIL {case.__name__}: {err!r}")
            failed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
