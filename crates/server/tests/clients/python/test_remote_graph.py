"""Layer 2 rows (CLIENT-CONFORMANCE.md): RemoteGraph parity.

`langgraph.pregel.remote.RemoteGraph` (package `langgraph`) is an official client that
turns a LangGraph server back into a graph. Each test runs the same calls on

- the LOCAL graph: the fixture graph from `fixture_graph.py` (a copy of
  /work/shared/server/fixture/graph.py) recompiled with an `InMemorySaver` (and an
  `InMemoryStore`, which `hitl`'s `finish` node needs), and
- the REMOTE graph: `RemoteGraph(name, client=get_client(url), sync_client=...)` on the
  server at STATEGRAPH_SERVER_URL,

with the same thread id, and asserts that the results are equal modulo ids (message
ids, interrupt ids, checkpoint ids, run ids, task ids in namespaces, timestamps).

Every test runs twice: `[async]` drives both graphs with `ainvoke`, `astream`,
`aget_state`, `aget_state_history`, `aupdate_state`; `[sync]` with `invoke`, `stream`,
`get_state`, `get_state_history`, `update_state` (RemoteGraph's sync path uses the
sync SDK client). One exception: the local `hitl` and `simple` graphs have async-only
nodes, which the sync Pregel API cannot run, so in `[sync]` the LOCAL reference runs
them with `ainvoke`/`astream` (the remote side is still driven with the sync API).

Threads: RemoteGraph's `stream`/`invoke` send `if_not_exists="create"`, but its
`get_state`/`get_state_history`/`update_state` need the thread to exist, so each test
creates its thread first with the SDK's `threads.create(thread_id=...)`, except
`test_L2_thread_created_by_run`, which relies on `if_not_exists`.

Messages are compared in two ways. Most tests compare them semantically: both sides are
turned into langchain-core message objects (`messages_from_dict`, as a RemoteGraph user
would) and dumped, so a field the server leaves out counts as its default.
`test_L2_message_wire_shape` compares the raw dicts RemoteGraph returns with the local
messages' `model_dump()` (field for field, modulo `id`).
"""
from __future__ import annotations

import dataclasses
import pprint
import uuid

import pytest
from langchain_core.messages import BaseMessage, messages_from_dict
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.pregel.remote import RemoteException, RemoteGraph
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command
from langgraph_sdk import get_client, get_sync_client

import fixture_graph

layer2 = pytest.mark.layer2
pytestmark = layer2

HTTP_TIMEOUT = (5.0, 25.0, 25.0, 5.0)  # as in conftest.py
HI = {"messages": [{"role": "user", "content": "hi there"}]}
QUESTION = {"question": "approve?", "count": 1}
FAKE_REPLY = "Hello from the fake model"
BOOM = "boom: intentional failure for the error-event transcript"

BUILDERS = {
    "hitl": fixture_graph.builder,
    "simple": fixture_graph.b2,
    "parent": fixture_graph.pb,
    "boom": fixture_graph.bb,
}
# Graphs with `async def` nodes: the sync Pregel API cannot run them locally.
ASYNC_NODES = {"hitl", "simple"}


# ---------------------------------------------------------------- normalization


def _is_message(x) -> bool:
    return isinstance(x, BaseMessage) or (
        isinstance(x, dict) and isinstance(x.get("type"), str) and "content" in x
    )


def _message(m, strict: bool) -> dict:
    if isinstance(m, BaseMessage):
        d = m.model_dump()
    elif strict:
        d = dict(m)
    else:
        d = messages_from_dict([{"type": m["type"], "data": m}])[0].model_dump()
    d.pop("id", None)
    return d


def _is_interrupt_dict(x) -> bool:
    return isinstance(x, dict) and "value" in x and set(x) <= {"value", "id", "response_schema"}


def norm(x, strict: bool = False):
    """Plain JSON-like data with ids removed: messages -> dicts without `id`,
    Interrupt (object or dict) -> {value, response_schema}, tuples -> lists."""
    if _is_message(x):
        return {k: norm(v, strict) for k, v in _message(x, strict).items()}
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        x = {f.name: getattr(x, f.name) for f in dataclasses.fields(x)}
    if isinstance(x, dict):
        if _is_interrupt_dict(x):
            x = {k: v for k, v in x.items() if k != "id"}
        return {k: norm(v, strict) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [norm(v, strict) for v in x]
    return x


def snap(s, strict: bool = False) -> dict:
    """A StateSnapshot without ids/timestamps/server-only metadata."""
    return {
        "values": norm(s.values, strict),
        "next": list(s.next),
        "step": s.metadata.get("step"),
        "source": s.metadata.get("source"),
        "parents": s.metadata.get("parents"),
        "interrupts": norm(list(s.interrupts)),
        "tasks": [
            {
                "name": t.name,
                "error": None if t.error is None else str(t.error),
                "interrupts": norm(list(t.interrupts)),
            }
            for t in s.tasks
        ],
        "has_parent": s.parent_config is not None,
    }


def ns_name(ns) -> list[str]:
    """('child:<task id>',) -> ['child']; 'a:<id>|b:<id>' -> 'a|b'."""
    if isinstance(ns, str):
        return "|".join(p.split(":", 1)[0] for p in ns.split("|")) if ns else ns
    return [ns_name(p) for p in ns]


def message_meta(local_meta: dict, remote_meta: dict) -> tuple[dict, dict]:
    """The metadata keys the local graph emits (but the local langchain-core versions),
    namespaces without task ids."""
    keys = [k for k in local_meta if k != "lc_versions"]

    def pick(meta):
        out = {}
        for k in keys:
            v = meta.get(k, "<missing>")
            if k in ("checkpoint_ns", "langgraph_checkpoint_ns") and isinstance(v, str):
                v = ns_name(v)
            out[k] = norm(v)
        return out

    return pick(local_meta), pick(remote_meta)


def same(what: str, local, remote):
    assert remote == local, (
        f"{what}: RemoteGraph result differs from the local graph\n"
        f"--- local:\n{pprint.pformat(local, width=110)}\n"
        f"--- remote:\n{pprint.pformat(remote, width=110)}"
    )


# ---------------------------------------------------------------- graph drivers


class Side:
    """One graph (local Pregel or RemoteGraph) driven with the sync or the async API.
    Every method is a coroutine; streams and histories come back as lists."""

    def __init__(self, label: str, graph, kind: str, sync_run: bool):
        self.label = label
        self.graph = graph
        self.sync = kind == "sync"
        self.sync_run = self.sync and sync_run  # invoke/stream with the sync API

    async def invoke(self, input, config, **kw):
        if self.sync_run:
            return self.graph.invoke(input, config, **kw)
        return await self.graph.ainvoke(input, config, **kw)

    async def stream(self, input, config, **kw) -> list:
        if self.sync_run:
            return list(self.graph.stream(input, config, **kw))
        return [part async for part in self.graph.astream(input, config, **kw)]

    async def get_state(self, config, **kw):
        if self.sync:
            return self.graph.get_state(config, **kw)
        return await self.graph.aget_state(config, **kw)

    async def history(self, config, **kw) -> list:
        if self.sync:
            return list(self.graph.get_state_history(config, **kw))
        return [s async for s in self.graph.aget_state_history(config, **kw)]

    async def update_state(self, config, values, as_node=None):
        if self.sync:
            return self.graph.update_state(config, values, as_node=as_node)
        return await self.graph.aupdate_state(config, values, as_node=as_node)


def compile_local(name: str):
    return BUILDERS[name].compile(checkpointer=InMemorySaver(), store=InMemoryStore())


class Pair:
    def __init__(self, local: Side, remote: Side, thread_id: str):
        self.local = local
        self.remote = remote
        self.thread_id = thread_id

    @property
    def config(self) -> dict:
        return {"configurable": {"thread_id": self.thread_id}}

    async def both(self, method: str, *args, **kw):
        """Run the same call on the local graph, then on the remote one."""
        local = await getattr(self.local, method)(*args, **kw)
        remote = await getattr(self.remote, method)(*args, **kw)
        return local, remote


class Parity:
    def __init__(self, kind: str, url: str, aclient, sclient):
        self.kind = kind
        self.url = url
        self.aclient = aclient
        self.sclient = sclient

    async def create_thread(self, thread_id: str):
        if self.kind == "async":
            await self.aclient.threads.create(thread_id=thread_id)
        else:
            self.sclient.threads.create(thread_id=thread_id)

    async def pair(self, name: str, *, create_thread: bool = True, remote=None) -> Pair:
        thread_id = str(uuid.uuid4())
        if create_thread:
            await self.create_thread(thread_id)
        local = Side("local", compile_local(name), self.kind, sync_run=name not in ASYNC_NODES)
        if remote is None:
            remote = RemoteGraph(name, client=self.aclient, sync_client=self.sclient)
        return Pair(local, Side("remote", remote, self.kind, sync_run=True), thread_id)


@pytest.fixture(params=["async", "sync"])
async def parity(request, server_url):
    aclient = get_client(url=server_url, api_key=None, timeout=HTTP_TIMEOUT)
    sclient = get_sync_client(url=server_url, api_key=None, timeout=HTTP_TIMEOUT)
    try:
        yield Parity(request.param, server_url, aclient, sclient)
    finally:
        await aclient.aclose()
        sclient.close()


async def hitl_at_interrupt(parity) -> Pair:
    p = await parity.pair("hitl")
    local, remote = await p.both("invoke", HI, p.config)
    same("invoke(HI) on hitl", norm(local), norm(remote))
    return p


async def hitl_done(parity) -> Pair:
    p = await hitl_at_interrupt(parity)
    local, remote = await p.both("stream", Command(resume="yes"), p.config, stream_mode="updates")
    same('stream(Command(resume="yes"), stream_mode="updates")', norm(local), norm(remote))
    return p


async def same_history(p: Pair, what: str) -> tuple[list, list]:
    local, remote = await p.both("history", p.config)
    assert len(remote) == len(local), (
        f"{what}: get_state_history length: local {len(local)}, remote {len(remote)}; "
        f"local steps {[s.metadata.get('step') for s in local]}, "
        f"remote steps {[s.metadata.get('step') for s in remote]}"
    )
    same(
        f"{what}: get_state_history steps",
        [s.metadata.get("step") for s in local],
        [s.metadata.get("step") for s in remote],
    )
    same(f"{what}: get_state_history", [snap(s) for s in local], [snap(s) for s in remote])
    return local, remote


# ---------------------------------------------------------------- hitl


async def test_L2_invoke_hitl_returns_interrupt(parity):
    p = await parity.pair("hitl")
    local, remote = await p.both("invoke", HI, p.config)
    assert "__interrupt__" in local, local
    assert "__interrupt__" in remote, remote
    assert norm(remote["__interrupt__"]) == [{"value": QUESTION, "response_schema": None}], remote
    same("invoke(HI) on hitl", norm(local), norm(remote))


async def test_L2_get_state_at_interrupt(parity):
    p = await hitl_at_interrupt(parity)
    local, remote = await p.both("get_state", p.config)
    assert list(remote.next) == ["review"], remote.next
    assert [i.value for i in remote.interrupts] == [QUESTION], remote.interrupts
    same("get_state at the interrupt", snap(local), snap(remote))


async def test_L2_stream_updates_to_interrupt(parity):
    p = await parity.pair("hitl")
    local, remote = await p.both("stream", HI, p.config, stream_mode="updates")
    assert [list(u) for u in norm(remote)] == [["agent"], ["__interrupt__"]], remote
    same('stream(HI, stream_mode="updates")', norm(local), norm(remote))


async def test_L2_stream_resume_updates(parity):
    p = await hitl_at_interrupt(parity)
    local, remote = await p.both("stream", Command(resume="yes"), p.config, stream_mode="updates")
    assert norm(remote) == [{"review": {"approved": "yes"}}, {"finish": {"count": 101}}], remote
    same('stream(Command(resume="yes"), stream_mode="updates")', norm(local), norm(remote))
    local, remote = await p.both("get_state", p.config)
    assert list(remote.next) == [], remote.next
    same("get_state after the resume", snap(local), snap(remote))


@pytest.mark.parametrize("mode", ["values", "custom", "messages"])
async def test_L2_stream_modes(parity, mode):
    p = await parity.pair("hitl")
    local, remote = await p.both("stream", HI, p.config, stream_mode=mode)
    if mode == "messages":
        assert remote and all(len(part) == 2 for part in remote), remote
        same(
            'stream(HI, stream_mode="messages") chunks',
            [norm(chunk) for chunk, _ in local],
            [norm(chunk) for chunk, _ in remote],
        )
        assert "".join(norm(c)["content"] for c, _ in remote) == FAKE_REPLY
        pairs = [message_meta(lm, rm) for (_, lm), (_, rm) in zip(local, remote)]
        same(
            'stream(HI, stream_mode="messages") metadata',
            [lm for lm, _ in pairs],
            [rm for _, rm in pairs],
        )
        return
    same(f'stream(HI, stream_mode="{mode}")', norm(local), norm(remote))
    if mode == "values":
        local, remote = await p.both("stream", Command(resume="ok"), p.config, stream_mode=mode)
        same(f'stream(Command(resume="ok"), stream_mode="{mode}")', norm(local), norm(remote))


async def test_L2_state_history(parity):
    p = await hitl_done(parity)
    local, remote = await same_history(p, "hitl after interrupt + resume")
    assert [s.metadata.get("step") for s in remote] == [3, 2, 1, 0, -1]


async def test_L2_get_state_at_checkpoint(parity):
    """get_state with a checkpoint_id in the config (POST /threads/{id}/state/checkpoint)."""
    p = await hitl_done(parity)
    local_hist, remote_hist = await same_history(p, "hitl after interrupt + resume")
    local = [snap(await p.local.get_state(s.config)) for s in local_hist]
    remote = [snap(await p.remote.get_state(s.config)) for s in remote_hist]
    same("get_state(<each history checkpoint>)", local, remote)
    same("get_state(<checkpoint>) vs the history entry", [snap(s) for s in remote_hist], remote)


async def test_L2_update_state(parity):
    p = await hitl_at_interrupt(parity)

    local_cfg, remote_cfg = await p.both("update_state", p.config, {"count": 5})
    assert remote_cfg["configurable"]["thread_id"] == p.thread_id, remote_cfg
    assert remote_cfg["configurable"].get("checkpoint_id"), remote_cfg
    local, remote = await p.both("get_state", p.config)
    assert remote.values.get("count") == 5, remote.values
    same("get_state after update_state({count: 5})", snap(local), snap(remote))
    local = await p.local.get_state(local_cfg)
    remote = await p.remote.get_state(remote_cfg)
    same("get_state(<config returned by update_state>)", snap(local), snap(remote))

    await p.both("update_state", p.config, {"approved": "manual"}, as_node="review")
    local, remote = await p.both("get_state", p.config)
    assert list(remote.next) == ["finish"], remote.next
    same('get_state after update_state({approved}, as_node="review")', snap(local), snap(remote))

    local, remote = await p.both("stream", None, p.config, stream_mode="updates")
    assert norm(remote) == [{"finish": {"count": 105}}], remote
    same('stream(None, stream_mode="updates") after the updates', norm(local), norm(remote))
    await same_history(p, "hitl after update_state")


async def test_L2_message_wire_shape(parity):
    """The raw message dicts RemoteGraph returns vs the local messages' model_dump()."""
    p = await parity.pair("hitl")
    local, remote = await p.both("invoke", HI, p.config)
    same("invoke(HI) on hitl, messages field for field", norm(local, True), norm(remote, True))
    local, remote = await p.both("get_state", p.config)
    same("get_state values, messages field for field", norm(local.values, True), norm(remote.values, True))

    p = await parity.pair("hitl")
    local, remote = await p.both("stream", HI, p.config, stream_mode="messages")
    same(
        'stream(HI, stream_mode="messages") chunks field for field',
        [norm(c, True) for c, _ in local],
        [norm(c, True) for c, _ in remote],
    )


# ---------------------------------------------------------------- simple, parent, boom


async def test_L2_simple(parity):
    p = await parity.pair("simple")
    local, remote = await p.both("invoke", {"count": 0}, p.config)
    assert norm(remote) == {"messages": [], "count": 1}, remote
    same("invoke({count: 0}) on simple", norm(local), norm(remote))
    local, remote = await p.both("stream", {"count": 0}, p.config, stream_mode="updates")
    same('stream({count: 0}, stream_mode="updates") on simple', norm(local), norm(remote))
    local, remote = await p.both("get_state", p.config)
    same("get_state on simple", snap(local), snap(remote))
    await same_history(p, "simple after two runs")


async def test_L2_parent_subgraph(parity):
    p = await parity.pair("parent")
    local, remote = await p.both("stream", {"count": 1}, p.config, stream_mode="updates", subgraphs=True)
    local = [(ns_name(ns), norm(u)) for ns, u in local]
    remote = [(ns_name(ns), norm(u)) for ns, u in remote]
    assert remote == [(["child"], {"inner": {"count": 11}}), ([], {"child": {"messages": [], "count": 11}})], remote
    same('stream({count: 1}, stream_mode="updates", subgraphs=True) on parent', local, remote)
    local, remote = await p.both("get_state", p.config, subgraphs=True)
    same("get_state(subgraphs=True) on parent", snap(local), snap(remote))
    await same_history(p, "parent after one run")
    local, remote = await p.both("invoke", {"count": 2}, p.config)
    same("invoke({count: 2}) on parent", norm(local), norm(remote))


async def test_L2_boom_error(parity):
    p = await parity.pair("boom")
    with pytest.raises(ValueError) as local_exc:
        await p.local.invoke({"count": 1}, p.config)
    with pytest.raises(RemoteException) as remote_exc:
        await p.remote.invoke({"count": 1}, p.config)
    same(
        "the error of invoke on boom",
        {"error": type(local_exc.value).__name__, "message": str(local_exc.value)},
        remote_exc.value.args[0],
    )
    assert str(local_exc.value) == BOOM
    local, remote = await p.both("get_state", p.config)
    assert list(remote.next) == ["explode"], remote.next
    same("get_state after the failed run", snap(local), snap(remote))
    await same_history(p, "boom after the failed run")


# ---------------------------------------------------------------- construction


async def test_L2_thread_created_by_run(parity):
    """RemoteGraph runs with if_not_exists="create": no threads.create beforehand."""
    p = await parity.pair("simple", create_thread=False)
    local, remote = await p.both("invoke", {"count": 0}, p.config)
    same("invoke({count: 0}) on a thread the run creates", norm(local), norm(remote))
    local, remote = await p.both("get_state", p.config)
    same("get_state on a thread the run created", snap(local), snap(remote))


async def test_L2_url_constructor(parity):
    """RemoteGraph(name, url=...) builds its own SDK clients."""
    p = await parity.pair("hitl", remote=RemoteGraph("hitl", url=parity.url))
    local, remote = await p.both("invoke", HI, p.config)
    same("invoke(HI) with RemoteGraph(url=...)", norm(local), norm(remote))
    local, remote = await p.both("stream", Command(resume="yes"), p.config, stream_mode="updates")
    same('stream(Command(resume="yes")) with RemoteGraph(url=...)', norm(local), norm(remote))
