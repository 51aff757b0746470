"""The Python side of `bigtool_search_10k_tools`: the retrieval step of
langgraph-bigtool (its default `retrieve_tools` is a store search with a
limit) over 10,000 generated tools in LangGraph's InMemoryStore.

Each tool is stored as langgraph-bigtool indexes it: key = tool id, value =
{"description": "<name>: <description>"}, the `description` field embedded
with the 384-dimension hashed bag of words of store.py. One run is one
search for "cosine of a number" with limit 5.

Run with the harness virtualenv: python bigtool.py [-r REPS] [--warmup N]
"""

from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

from store import DIMS, embed, run_harness

TOOLS = 10000
FAMILIES = [
    "sine",
    "cosine",
    "tangent",
    "logarithm",
    "square root",
    "uppercase",
    "lowercase",
    "reverse",
    "word count",
    "checksum",
]


def search_10k_tools():
    store = InMemoryStore(index={"dims": DIMS, "embed": embed, "fields": ["description"]})
    ops = []
    for i in range(TOOLS):
        family = FAMILIES[i % len(FAMILIES)]
        name = f"{family.replace(' ', '_')}_{i}"
        description = f"Computes the {family} of input number {i}."
        ops.append(PutOp(("tools",), f"tool-{i}", {"description": f"{name}: {description}"}))
    for start in range(0, len(ops), 500):
        store.batch(ops[start:start + 500])

    def run():
        found = store.search(("tools",), query="cosine of a number", limit=5)
        ranked = sum(item.score is not None for item in found)
        return 1, {"results": len(found), "ranked": ranked}

    return run


WORKLOADS = [("bigtool_search_10k_tools", search_10k_tools)]


if __name__ == "__main__":
    run_harness(WORKLOADS)
