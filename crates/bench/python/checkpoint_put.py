"""LangGraph's InMemorySaver on the stategraph-bench checkpoint workload.

100 puts of a 15-channel checkpoint where every channel changes at every step
(each value a fresh one-element list holding the shared wide_state document M), then
get_tuple of the latest. Prints one JSON line in the harness format.

Run with the harness virtualenv: python checkpoint_put.py [-r REPS] [--warmup N]
"""

import argparse
import json
import statistics
import time

from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver

CHANNELS = 15
CHECKPOINTS = 100


def wide_document():
    items = ["hi?" * 10, True, 1, 6327816386138, None] * 5
    inner = {f"inner_{j}": list(items) for j in range(5)}
    return {f"outer_{i}": dict(inner) for i in range(5)}


def run_once():
    saver = InMemorySaver()
    document = wide_document()
    config = {"configurable": {"thread_id": "bench", "checkpoint_ns": ""}}
    versions = {}
    for step in range(CHECKPOINTS):
        checkpoint = empty_checkpoint()
        new_versions = {}
        for channel in range(CHANNELS):
            name = f"key_{channel}"
            version = saver.get_next_version(versions.get(name), None)
            checkpoint["channel_values"][name] = [document]
            checkpoint["channel_versions"][name] = version
            versions[name] = version
            new_versions[name] = version
        metadata = {"source": "loop", "step": step, "parents": {}}
        config = saver.put(config, checkpoint, metadata, new_versions)
    latest = saver.get_tuple({"configurable": {"thread_id": "bench", "checkpoint_ns": ""}})
    return {
        "checkpoints": CHECKPOINTS,
        "channels": len(latest.checkpoint["channel_values"]),
        "last_step": latest.metadata["step"],
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-r", "--reps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    args = parser.parse_args()
    for _ in range(args.warmup):
        run_once()
    times = []
    check = None
    for _ in range(args.reps):
        start = time.perf_counter()
        check = run_once()
        times.append(time.perf_counter() - start)
    print(json.dumps({
        "impl": "python-langgraph-1.2.22",
        "workload": "checkpoint_memory_put",
        "mode": "sync",
        "reps": len(times),
        "median_s": round(statistics.median(times), 6),
        "min_s": round(min(times), 6),
        "chunks": CHECKPOINTS,
        "check": check,
    }))


if __name__ == "__main__":
    main()
