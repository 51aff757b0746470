"""LangGraph's InMemoryStore on the stategraph-bench store_memory_* workloads.

Items: n notes across 50 users' namespaces ({"text", "rating", "kind"}),
put in batches of 100. Workloads: 1,000 puts into a fresh store; 1,000 gets;
a filtered search (rating >= 5 and kind == "note", limit 10) over 1,000
items; a semantic search (limit 10) over 10,000 items embedded with a
384-dimension hashed bag of words (the same kind of embedder as the Rust
side's HashEmbeddings). LangGraph uses NumPy for vectors when it is
installed; the check says whether it was.

Run with the harness virtualenv: python store.py [-r REPS] [--warmup N]
"""

import argparse
import hashlib
import importlib.util
import json
import math
import statistics
import time

from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

DIMS = 384
ITEMS = 1000
SEMANTIC_ITEMS = 10000


def embed(texts):
    vectors = []
    for text in texts:
        vector = [0.0] * DIMS
        for word in text.lower().split():
            digest = int(hashlib.md5(word.encode()).hexdigest(), 16)
            vector[digest % DIMS] += 1.0 if (digest >> 64) & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        vectors.append([x / norm for x in vector])
    return vectors


def user(i):
    return f"user-{i % 50}"


def put_items(store, root, n):
    ops = [
        PutOp(
            (root, user(i)),
            f"memory-{i}",
            {
                "text": f"note {i} about topic {i % 97} and gardens of user {i % 50}",
                "rating": i % 10,
                "kind": "task" if i % 3 == 0 else "note",
            },
        )
        for i in range(n)
    ]
    for start in range(0, n, 100):
        store.batch(ops[start:start + 100])


def put_1000():
    store = InMemoryStore()

    def run():
        put_items(store, "bench", ITEMS)
        return ITEMS, {"items": ITEMS}

    return run


def get_1000():
    store = InMemoryStore()
    put_items(store, "bench", ITEMS)

    def run():
        found = sum(
            store.get(("bench", user(i)), f"memory-{i}") is not None for i in range(ITEMS)
        )
        return ITEMS, {"found": found}

    return run


def search_filter_1000():
    store = InMemoryStore()
    put_items(store, "bench", ITEMS)

    def run():
        found = store.search(("bench",), filter={"rating": {"$gte": 5}, "kind": "note"}, limit=10)
        return 1, {"results": len(found)}

    return run


def semantic_search_10k():
    store = InMemoryStore(index={"dims": DIMS, "embed": embed, "fields": ["text"]})
    put_items(store, "bench", SEMANTIC_ITEMS)

    def run():
        found = store.search(("bench",), query="notes about topic 42 and gardens", limit=10)
        ranked = sum(item.score is not None for item in found)
        return 1, {"results": len(found), "ranked": ranked}

    return run


WORKLOADS = [
    ("store_memory_put_1000", put_1000),
    ("store_memory_get_1000", get_1000),
    ("store_memory_search_filter_1000", search_filter_1000),
    ("store_memory_semantic_search_10k", semantic_search_10k),
]


def run_harness(workloads):
    """Times each (name, setup) workload and prints one JSON line for it."""
    parser = argparse.ArgumentParser()
    parser.add_argument("-r", "--reps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    args = parser.parse_args()
    numpy = importlib.util.find_spec("numpy") is not None
    for name, setup in workloads:
        run = setup()
        for _ in range(args.warmup):
            run()
        times = []
        chunks, check = 0, None
        for _ in range(args.reps):
            start = time.perf_counter()
            chunks, check = run()
            times.append(time.perf_counter() - start)
        print(json.dumps({
            "impl": "python-langgraph-1.2.22",
            "workload": name,
            "mode": "sync",
            "reps": len(times),
            "median_s": round(statistics.median(times), 6),
            "min_s": round(min(times), 6),
            "chunks": chunks,
            "check": check,
            "numpy": numpy,
        }))


if __name__ == "__main__":
    run_harness(WORKLOADS)
