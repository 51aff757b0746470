"""Layer 1 rows of milestone S2 (CLIENT-CONFORMANCE.md): assistants, store and crons
through the official Python SDK, as the official server 0.16.7 answers them (API.md
sections 3, 10, 11; TRANSCRIPTS.md sections 2, 19, 20).

Every test runs with `[async]` and `[sync]` clients (conftest.py). Each test scopes
what it creates with a fresh marker (assistant metadata/name, store namespace, cron
metadata) so that it only sees its own objects on a shared server, and deletes its
crons so that none is left to fire. No test waits for a cron to fire (the Rust suite
covers firing). Fixture graphs: /work/shared/server/fixture/graph.py.
"""
from __future__ import annotations

import re
import uuid
from datetime import datetime, timedelta, timezone

import httpx
import pytest
from helpers import parse_ts, status_of
from langgraph_sdk.errors import (
    BadRequestError,
    ConflictError,
    NotFoundError,
    UnprocessableEntityError,
)

s2 = pytest.mark.s2
pytestmark = [pytest.mark.layer1, s2]

UUID_RE = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
# The official server's namespace for system assistant ids (API.md 1.3).
SYSTEM_NS = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
FIXTURE_GRAPHS = ["hitl", "simple", "parent", "boom"]
HI = {"messages": [{"role": "user", "content": "hi there"}]}
STATE_FIELDS = {"messages", "count", "approved"}

ASSISTANT_KEYS = {
    "assistant_id", "graph_id", "config", "context", "metadata", "name",
    "created_at", "updated_at", "version", "description",
}
VERSION_KEYS = {
    "assistant_id", "version", "graph_id", "config", "context", "metadata",
    "created_at", "name", "description",
}
ITEM_KEYS = {"namespace", "key", "value", "created_at", "updated_at"}
CRON_KEYS = {
    "cron_id", "assistant_id", "thread_id", "user_id", "end_time", "schedule",
    "timezone", "payload", "next_run_date", "metadata", "on_run_completed",
    "enabled", "created_at", "updated_at",
}
SCHEMA_KEYS = {"input_schema", "output_schema", "state_schema", "config_schema", "context_schema"}


# ---------------------------------------------------------------- helpers


def marker() -> str:
    # no '.', '-' is fine: also used as a store namespace label
    return f"s2-{uuid.uuid4().hex[:12]}"


def system_id(graph_id: str) -> str:
    return str(uuid.uuid5(SYSTEM_NS, graph_id))


def names(assistants) -> list[str]:
    return [a["name"] for a in assistants]


def next_daily(hour: int, minute: int, tz_name: str | None, after: datetime) -> datetime:
    """The first `minute hour * * *` fire time strictly after `after`, in UTC."""
    from zoneinfo import ZoneInfo

    tz = ZoneInfo(tz_name) if tz_name else timezone.utc
    local = after.astimezone(tz)
    cand = local.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if cand <= local:
        cand = (cand.replace(tzinfo=None) + timedelta(days=1)).replace(tzinfo=tz)
    return cand.astimezone(timezone.utc)


def next_new_year(tz_name: str | None, after: datetime) -> datetime:
    """The first `0 0 1 1 *` fire time strictly after `after`, in UTC."""
    from zoneinfo import ZoneInfo

    tz = ZoneInfo(tz_name) if tz_name else timezone.utc
    local = after.astimezone(tz)
    cand = datetime(local.year, 1, 1, tzinfo=tz)
    if cand <= local:
        cand = datetime(local.year + 1, 1, 1, tzinfo=tz)
    return cand.astimezone(timezone.utc)


def assert_fire_time(next_run_date: str, expected) -> None:
    """`expected(after)` computed for the instants just before and after the call:
    the server's answer must be one of the two (a fire time crossing mid-call)."""
    got = parse_ts(next_run_date)
    before, after = expected
    assert got in (before, after), (next_run_date, before.isoformat(), after.isoformat())


async def timed(coro_fn, expected_fn):
    before = datetime.now(timezone.utc)
    result = await coro_fn()
    after = datetime.now(timezone.utc)
    return result, (expected_fn(before), expected_fn(after))


async def new_assistant(client, graph_id="simple", **kwargs):
    return await client.assistants.create(graph_id, **kwargs)


async def wait_simple(client, assistant_id, **kwargs) -> tuple[str, dict]:
    tid = (await client.threads.create())["thread_id"]
    values = await client.runs.wait(tid, assistant_id, input={"count": 0}, **kwargs)
    return tid, values


def assert_no_required(schema: dict, where: str) -> None:
    # The fixture state is TypedDict(total=False): every field may be left out
    # (runs start with {"count": 1} or {"messages": [...]}), and the official
    # server's schemas say so: no "required" list at all.
    assert not schema.get("required"), f"{where}: required {schema.get('required')}"


# ---------------------------------------------------------------- assistants


async def test_S2_assistants_system_assistants(client):
    for graph_id in FIXTURE_GRAPHS:
        found = await client.assistants.search(
            graph_id=graph_id, metadata={"created_by": "system"}
        )
        assert len(found) == 1, (graph_id, found)
        a = found[0]
        assert set(a) == ASSISTANT_KEYS, sorted(a)
        assert a["assistant_id"] == system_id(graph_id)
        assert a["graph_id"] == graph_id
        assert a["name"] == graph_id
        assert a["version"] == 1
        assert a["config"] == {} and a["context"] == {}
        assert a["metadata"] == {"created_by": "system"}
        assert await client.assistants.get(system_id(graph_id)) == a
        versions = await client.assistants.get_versions(system_id(graph_id))
        assert [v["version"] for v in versions] == [1]


async def test_S2_assistants_create_get(client):
    mk = marker()
    a = await client.assistants.create(
        "hitl",
        config={"configurable": {"model": "fake"}},
        metadata={"suite": mk, "team": "docs"},
        name="my-hitl",
        description="a hitl assistant",
    )
    assert set(a) == ASSISTANT_KEYS, sorted(a)
    assert re.fullmatch(UUID_RE, a["assistant_id"]), a["assistant_id"]
    assert a["graph_id"] == "hitl"
    assert a["config"] == {"configurable": {"model": "fake"}}
    # the server copies config.configurable into context (API.md section 2)
    assert a["context"] == {"model": "fake"}
    assert a["metadata"] == {"suite": mk, "team": "docs"}
    assert a["name"] == "my-hitl"
    assert a["description"] == "a hitl assistant"
    assert a["version"] == 1
    assert a["created_at"] == a["updated_at"]
    parse_ts(a["created_at"])
    assert await client.assistants.get(a["assistant_id"]) == a

    # context alone is copied into config.configurable
    b = await client.assistants.create("simple", context={"user": "ann"}, metadata={"suite": mk})
    assert b["context"] == {"user": "ann"}
    assert b["config"] == {"configurable": {"user": "ann"}}
    # without a name the assistant is "Untitled"
    assert b["name"] == "Untitled"
    assert b["description"] is None

    # both at once is refused (400)
    with pytest.raises(BadRequestError):
        await client.assistants.create(
            "simple", config={"configurable": {"a": 1}}, context={"b": 2}, metadata={"suite": mk}
        )
    assert await client.assistants.count(metadata={"suite": mk}) == 2

    # an unknown graph is 404
    with pytest.raises(NotFoundError):
        await client.assistants.create("no-such-graph", metadata={"suite": mk})
    # an unknown assistant is 404
    with pytest.raises(NotFoundError):
        await client.assistants.get(str(uuid.uuid4()))


async def test_S2_assistants_create_if_exists(client):
    mk = marker()
    aid = str(uuid.uuid4())
    first = await client.assistants.create(
        "hitl", assistant_id=aid, name="first", metadata={"suite": mk}
    )
    assert first["assistant_id"] == aid

    # if_exists="raise" (also the default): 409, an httpx.HTTPStatusError
    with pytest.raises(httpx.HTTPStatusError) as err:
        await client.assistants.create("hitl", assistant_id=aid, if_exists="raise")
    assert status_of(err) == 409
    assert isinstance(err.value, ConflictError)
    with pytest.raises(ConflictError):
        await client.assistants.create("simple", assistant_id=aid, name="again")

    # if_exists="do_nothing": the existing assistant, unchanged
    same = await client.assistants.create(
        "simple",
        assistant_id=aid,
        if_exists="do_nothing",
        name="other",
        metadata={"suite": mk, "x": 1},
    )
    assert same == first
    assert await client.assistants.get(aid) == first
    assert await client.assistants.count(metadata={"suite": mk}) == 1


async def test_S2_assistants_update_versions_set_latest(client):
    mk = marker()
    a = await client.assistants.create(
        "hitl",
        config={"configurable": {"model": "fake"}},
        metadata={"suite": mk, "team": "docs"},
        name="v1-name",
    )
    aid = a["assistant_id"]

    # metadata is merged, a new version is made
    v2 = await client.assistants.update(aid, metadata={"v": 2})
    assert v2["version"] == 2
    assert v2["metadata"] == {"suite": mk, "team": "docs", "v": 2}
    assert v2["config"] == a["config"] and v2["context"] == a["context"]
    assert v2["name"] == "v1-name"
    assert v2["created_at"] == a["created_at"]
    assert parse_ts(v2["updated_at"]) >= parse_ts(a["updated_at"])
    assert await client.assistants.get(aid) == v2

    # config is replaced (context follows its configurable), name changes
    v3 = await client.assistants.update(aid, config={"configurable": {"a": 1}}, name="v3-name")
    assert v3["version"] == 3
    assert v3["config"] == {"configurable": {"a": 1}}
    assert v3["context"] == {"a": 1}
    assert v3["metadata"] == v2["metadata"]
    assert v3["name"] == "v3-name"

    versions = await client.assistants.get_versions(aid)
    assert [v["version"] for v in versions] == [3, 2, 1]
    for v in versions:
        assert set(v) == VERSION_KEYS, sorted(v)
        assert v["assistant_id"] == aid and v["graph_id"] == "hitl"
    assert [v["name"] for v in versions] == ["v3-name", "v1-name", "v1-name"]
    assert versions[2]["metadata"] == {"suite": mk, "team": "docs"}
    assert versions[2]["config"] == {"configurable": {"model": "fake"}}
    assert versions[2]["context"] == {"model": "fake"}
    # filter on metadata, page with limit/offset
    assert [v["version"] for v in await client.assistants.get_versions(aid, metadata={"v": 2})] == [3, 2]
    assert [v["version"] for v in await client.assistants.get_versions(aid, limit=1, offset=1)] == [2]

    # set_latest: that version becomes the assistant
    latest = await client.assistants.set_latest(aid, 1)
    assert latest["assistant_id"] == aid
    assert latest["version"] == 1
    assert latest["name"] == "v1-name"
    assert latest["metadata"] == {"suite": mk, "team": "docs"}
    assert latest["config"] == {"configurable": {"model": "fake"}}
    assert await client.assistants.get(aid) == latest
    assert [a["version"] for a in await client.assistants.search(metadata={"suite": mk})] == [1]
    # the versions are all kept
    assert [v["version"] for v in await client.assistants.get_versions(aid)] == [3, 2, 1]
    # an update now starts from version 1 and is numbered after the highest
    v4 = await client.assistants.update(aid, name="v4-name")
    assert v4["version"] == 4
    assert v4["metadata"] == {"suite": mk, "team": "docs"}
    assert v4["config"] == {"configurable": {"model": "fake"}}

    with pytest.raises(NotFoundError):
        await client.assistants.set_latest(aid, 9)
    with pytest.raises(NotFoundError):
        await client.assistants.update(str(uuid.uuid4()), metadata={"a": 1})


async def test_S2_assistants_search(client):
    mk = marker()
    created = []
    for name, graph_id in (("Zeta", "simple"), ("alpha", "hitl"), ("Mid", "simple")):
        a = await client.assistants.create(
            graph_id, name=f"{name} {mk}", metadata={"suite": mk, "g": graph_id}
        )
        created.append(a)
    by_meta = {"suite": mk}
    zeta, alpha, mid = (f"{n} {mk}" for n in ("Zeta", "alpha", "Mid"))

    # default order: newest first
    assert names(await client.assistants.search(metadata=by_meta)) == [mid, alpha, zeta]
    assert names(
        await client.assistants.search(metadata=by_meta, sort_by="name", sort_order="asc")
    ) == [alpha, mid, zeta]
    assert names(
        await client.assistants.search(metadata=by_meta, sort_by="name", sort_order="desc")
    ) == [zeta, mid, alpha]
    assert names(
        await client.assistants.search(metadata=by_meta, sort_by="created_at", sort_order="asc")
    ) == [zeta, alpha, mid]
    assert [
        a["assistant_id"]
        for a in await client.assistants.search(
            metadata=by_meta, sort_by="assistant_id", sort_order="asc"
        )
    ] == sorted(a["assistant_id"] for a in created)

    # limit / offset
    page = await client.assistants.search(
        metadata=by_meta, sort_by="created_at", sort_order="asc", limit=1, offset=1
    )
    assert names(page) == [alpha]
    assert await client.assistants.search(metadata=by_meta, limit=2, offset=3) == []

    # graph_id and metadata together
    assert names(
        await client.assistants.search(graph_id="simple", metadata=by_meta)
    ) == [mid, zeta]
    assert names(await client.assistants.search(metadata={"suite": mk, "g": "hitl"})) == [alpha]

    # name: case-insensitive substring
    assert names(await client.assistants.search(name=mid)) == [mid]
    assert names(await client.assistants.search(name=mid.lower())) == [mid]
    assert names(await client.assistants.search(name=mk)) == [mid, alpha, zeta]

    # select: only those fields
    sel = await client.assistants.search(
        metadata=by_meta,
        select=["assistant_id", "name"],
        sort_by="created_at",
        sort_order="asc",
    )
    assert sel == [{"assistant_id": a["assistant_id"], "name": a["name"]} for a in created]

    # full objects otherwise
    full = await client.assistants.search(metadata=by_meta, sort_by="created_at", sort_order="asc")
    assert full == created

    # response_format="object": the X-Pagination-Next cursor
    obj = await client.assistants.search(metadata=by_meta, limit=2, response_format="object")
    assert names(obj["assistants"]) == [mid, alpha]
    assert obj["next"] == "2"
    obj = await client.assistants.search(metadata=by_meta, limit=5, response_format="object")
    assert len(obj["assistants"]) == 3 and obj["next"] is None


async def test_S2_assistants_count(client):
    mk = marker()
    for graph_id in ("simple", "hitl", "simple"):
        await client.assistants.create(graph_id, name=f"count {mk}", metadata={"suite": mk})
    assert await client.assistants.count(metadata={"suite": mk}) == 3
    assert await client.assistants.count(graph_id="simple", metadata={"suite": mk}) == 2
    assert await client.assistants.count(graph_id="hitl", metadata={"suite": mk}) == 1
    assert await client.assistants.count(name=mk) == 3
    assert await client.assistants.count(metadata={"suite": mk, "nope": 1}) == 0
    # the system assistant is counted with the others of its graph
    assert await client.assistants.count(graph_id="parent", metadata={"created_by": "system"}) == 1
    total = await client.assistants.count()
    assert isinstance(total, int) and total >= 3 + len(FIXTURE_GRAPHS)


HITL_GRAPH = {
    "nodes": [
        {"id": "__start__", "type": "runnable", "data": {"name": "__start__"}},
        {"id": "agent", "type": "runnable", "data": {"name": "agent"}},
        {"id": "review", "type": "runnable", "data": {"name": "review"}},
        {"id": "finish", "type": "runnable", "data": {"name": "finish"}},
        {"id": "__end__"},
    ],
    "edges": [
        {"source": "__start__", "target": "agent"},
        {"source": "agent", "target": "review"},
        {"source": "review", "target": "finish"},
        {"source": "finish", "target": "__end__"},
    ],
}
PARENT_GRAPH = {
    "nodes": [
        {"id": "__start__", "type": "runnable", "data": {"name": "__start__"}},
        {"id": "child", "type": "runnable", "data": {"name": "child"}},
        {"id": "__end__"},
    ],
    "edges": [
        {"source": "__start__", "target": "child"},
        {"source": "child", "target": "__end__"},
    ],
}
PARENT_GRAPH_XRAY = {
    "nodes": [
        {"id": "__start__", "type": "runnable", "data": {"name": "__start__"}},
        {"id": "__end__"},
        {"id": "child:inner", "type": "runnable", "data": {"name": "child:inner"}},
    ],
    "edges": [
        {"source": "__start__", "target": "child:inner"},
        {"source": "child:inner", "target": "__end__"},
    ],
}


async def test_S2_assistants_get_graph(client):
    mk = marker()
    a = await new_assistant(client, "hitl", metadata={"suite": mk})
    # TRANSCRIPTS.md section 2, node for node and edge for edge
    assert await client.assistants.get_graph(a["assistant_id"]) == HITL_GRAPH
    assert await client.assistants.get_graph(system_id("hitl")) == HITL_GRAPH
    # a graph id is accepted in place of the assistant id here
    assert await client.assistants.get_graph("hitl") == HITL_GRAPH
    assert await client.assistants.get_graph("parent") == PARENT_GRAPH
    # xray draws the subgraph's nodes as child:inner
    assert await client.assistants.get_graph("parent", xray=True) == PARENT_GRAPH_XRAY
    assert await client.assistants.get_graph(system_id("parent"), xray=1) == PARENT_GRAPH_XRAY
    with pytest.raises(NotFoundError):
        await client.assistants.get_graph(str(uuid.uuid4()))


def assert_state_schema(schema, where):
    assert isinstance(schema, dict), (where, schema)
    assert schema.get("type") == "object", (where, schema.get("type"))
    assert set(schema.get("properties", {})) == STATE_FIELDS, (where, sorted(schema.get("properties", {})))
    assert_no_required(schema, where)


def assert_io_schema(schema, where):
    # The official server answers null for the fixture's input and output schemas
    # (its graphs have no separate input/output types); a server may give the
    # state's own schema instead: then it must have the state's fields, all optional.
    if schema is not None:
        assert_state_schema(schema, where)


async def test_S2_assistants_get_schemas(client):
    mk = marker()
    a = await new_assistant(client, "hitl", metadata={"suite": mk})
    for aid, graph_id in ((a["assistant_id"], "hitl"), (system_id("simple"), "simple")):
        schemas = await client.assistants.get_schemas(aid)
        assert set(schemas) == SCHEMA_KEYS | {"graph_id"}, sorted(schemas)
        assert schemas["graph_id"] == graph_id
        assert_state_schema(schemas["state_schema"], f"{graph_id} state_schema")
        assert_io_schema(schemas["input_schema"], f"{graph_id} input_schema")
        assert_io_schema(schemas["output_schema"], f"{graph_id} output_schema")
        assert schemas["config_schema"] == {}
        assert schemas["context_schema"] is None


async def test_S2_assistants_get_subgraphs(client):
    parent = system_id("parent")
    for recurse in (True, False):
        subgraphs = await client.assistants.get_subgraphs(parent, recurse=recurse)
        assert set(subgraphs) == {"child"}, subgraphs
        child = subgraphs["child"]
        assert set(child) == SCHEMA_KEYS, sorted(child)
        assert_state_schema(child["state_schema"], "child state_schema")
        assert_io_schema(child["input_schema"], "child input_schema")
        assert_io_schema(child["output_schema"], "child output_schema")
        assert child["config_schema"] == {}
        assert child["context_schema"] is None
    by_ns = await client.assistants.get_subgraphs(parent, namespace="child", recurse=True)
    assert set(by_ns) == {"child"}
    assert await client.assistants.get_subgraphs(system_id("hitl"), recurse=True) == {}
    # the official server wants a UUID here (no graph id): 422
    with pytest.raises(UnprocessableEntityError):
        await client.assistants.get_subgraphs("parent", recurse=True)


async def test_S2_assistants_delete(client):
    mk = marker()
    a = await new_assistant(client, metadata={"suite": mk}, name=f"gone {mk}")
    kept = await new_assistant(client, metadata={"suite": mk}, name=f"kept {mk}")
    await client.assistants.delete(a["assistant_id"])
    with pytest.raises(NotFoundError):
        await client.assistants.get(a["assistant_id"])
    with pytest.raises(NotFoundError):
        await client.assistants.get_versions(a["assistant_id"])
    with pytest.raises(NotFoundError):
        await client.assistants.delete(a["assistant_id"])
    assert names(await client.assistants.search(metadata={"suite": mk})) == [f"kept {mk}"]
    assert await client.assistants.count(metadata={"suite": mk}) == 1
    assert await client.assistants.get(kept["assistant_id"]) == kept


async def test_S2_assistants_delete_threads(client):
    mk = marker()
    a = await new_assistant(client, metadata={"suite": mk})
    b = await new_assistant(client, metadata={"suite": mk})
    tid_a, values = await wait_simple(client, a["assistant_id"])
    assert values == {"messages": [], "count": 1}
    tid_b, _ = await wait_simple(client, b["assistant_id"])
    assert (await client.threads.get(tid_a))["metadata"]["assistant_id"] == a["assistant_id"]

    # delete_threads=True also deletes the threads the assistant ran on
    await client.assistants.delete(a["assistant_id"], delete_threads=True)
    with pytest.raises(NotFoundError):
        await client.threads.get(tid_a)

    # without it the threads stay; a run on the deleted assistant is 404
    await client.assistants.delete(b["assistant_id"])
    thread = await client.threads.get(tid_b)
    assert thread["metadata"]["assistant_id"] == b["assistant_id"]
    assert thread["values"]["count"] == 1
    with pytest.raises(httpx.HTTPStatusError) as err:
        await client.runs.wait(tid_b, b["assistant_id"], input={"count": 0})
    assert status_of(err) == 404
    assert await client.assistants.count(metadata={"suite": mk}) == 0


def user_configurable(run) -> dict:
    """The run's configurable without the keys the server fills in itself."""
    server = {"run_id", "thread_id", "graph_id", "assistant_id", "user_id", "cron_id"}
    return {
        k: v
        for k, v in run["kwargs"]["config"]["configurable"].items()
        if not k.startswith(("__", "langgraph_")) and k not in server
    }


async def test_S2_assistants_run_uses_context_and_config(client):
    mk = marker()
    # an assistant given context: its runs get it (and the same keys as configurable)
    a = await new_assistant(client, context={"user": "ann"}, metadata={"suite": mk, "k": "v"})
    aid = a["assistant_id"]
    tid = (await client.threads.create())["thread_id"]
    run = await client.runs.create(tid, aid, input={"count": 1})
    assert run["assistant_id"] == aid
    await client.runs.join(tid, run["run_id"])
    got = await client.runs.get(tid, run["run_id"])
    assert got["status"] == "success"
    assert got["kwargs"]["context"] == {"user": "ann"}
    assert user_configurable(got) == {"user": "ann"}
    assert got["kwargs"]["config"]["configurable"]["assistant_id"] == aid
    assert got["kwargs"]["config"]["configurable"]["graph_id"] == "simple"
    # the assistant's metadata is merged into the run's
    assert got["metadata"]["k"] == "v" and got["metadata"]["suite"] == mk
    assert got["metadata"]["assistant_id"] == aid and got["metadata"]["graph_id"] == "simple"
    thread = await client.threads.get(tid)
    assert thread["metadata"]["assistant_id"] == aid
    assert thread["config"]["configurable"] == {"user": "ann"}
    assert thread["values"] == {"messages": [], "count": 2}

    # the run's own context is merged over the assistant's
    tid2 = (await client.threads.create())["thread_id"]
    run2 = await client.runs.create(tid2, aid, input={"count": 1}, context={"user": "bob", "x": 1})
    await client.runs.join(tid2, run2["run_id"])
    got2 = await client.runs.get(tid2, run2["run_id"])
    assert got2["kwargs"]["context"] == {"user": "bob", "x": 1}
    assert user_configurable(got2) == {"user": "bob", "x": 1}

    # an assistant given config: configurable (run's keys win) and tags
    b = await new_assistant(
        client, config={"configurable": {"model": "fake", "a": 1}, "tags": ["from-assistant"]}
    )
    tid3 = (await client.threads.create())["thread_id"]
    run3 = await client.runs.create(
        tid3, b["assistant_id"], input={"count": 1}, config={"configurable": {"a": 2}}
    )
    await client.runs.join(tid3, run3["run_id"])
    got3 = await client.runs.get(tid3, run3["run_id"])
    assert got3["status"] == "success"
    assert user_configurable(got3) == {"model": "fake", "a": 2}
    assert got3["kwargs"]["context"] == {"model": "fake", "a": 2}
    assert got3["kwargs"]["config"]["tags"] == ["from-assistant"]

    # the graph's system assistant adds nothing
    tid4 = (await client.threads.create())["thread_id"]
    run4 = await client.runs.create(tid4, "simple", input={"count": 1})
    await client.runs.join(tid4, run4["run_id"])
    got4 = await client.runs.get(tid4, run4["run_id"])
    assert got4["assistant_id"] == system_id("simple")
    assert user_configurable(got4) == {}
    assert got4["kwargs"]["context"] in ({}, None)
    await client.assistants.delete(aid)
    await client.assistants.delete(b["assistant_id"])


# ---------------------------------------------------------------- store


async def test_S2_store_put_get_delete(client):
    ns = [marker(), "u1"]
    assert await client.store.put_item(ns, key="prefs", value={"theme": "dark", "lang": "en"}) is None
    item = await client.store.get_item(ns, key="prefs")
    assert set(item) == ITEM_KEYS, sorted(item)
    assert item["namespace"] == ns
    assert item["key"] == "prefs"
    assert item["value"] == {"theme": "dark", "lang": "en"}
    parse_ts(item["created_at"])
    parse_ts(item["updated_at"])

    # a missing key is None (200 with null), not an error
    assert await client.store.get_item(ns, key="nope") is None

    # a put on the same key replaces the value
    await client.store.put_item(ns, key="prefs", value={"theme": "blue"})
    replaced = await client.store.get_item(ns, key="prefs")
    assert replaced["value"] == {"theme": "blue"}
    assert parse_ts(replaced["updated_at"]) >= parse_ts(item["updated_at"])

    assert await client.store.delete_item(ns, key="prefs") is None
    assert await client.store.get_item(ns, key="prefs") is None
    # deleting what is not there is fine
    assert await client.store.delete_item(ns, key="prefs") is None

    # a value must be an object
    with pytest.raises(UnprocessableEntityError):
        await client.store.put_item(ns, key="bad", value=[1, 2])


async def test_S2_store_put_item_ttl(client):
    ns = [marker()]
    # ttl in minutes; the official server accepts it (langgraph dev, no store config)
    await client.store.put_item(ns, key="k", value={"a": 1}, ttl=5)
    item = await client.store.get_item(ns, key="k", refresh_ttl=True)
    assert item is not None and item["value"] == {"a": 1}
    found = await client.store.search_items(ns, refresh_ttl=True)
    assert [i["key"] for i in found["items"]] == ["k"]
    # index=False and index=[paths] are accepted too
    await client.store.put_item(ns, key="k2", value={"a": {"b": 2}}, index=False)
    await client.store.put_item(ns, key="k3", value={"a": {"b": 3}}, index=["a.b"])
    assert (await client.store.get_item(ns, key="k3"))["value"] == {"a": {"b": 3}}


async def test_S2_store_put_item_empty_namespace(client):
    # the official server refuses an empty namespace with 400 "Namespace cannot be empty."
    with pytest.raises(BadRequestError):
        await client.store.put_item([], key="k", value={"a": 1})


async def test_S2_store_delete_item_empty_namespace(client):
    # the official server answers 204 (nothing to delete)
    assert await client.store.delete_item([], key="no-such-key") is None


def item_ids(result) -> list[tuple[tuple[str, ...], str]]:
    return [(tuple(i["namespace"]), i["key"]) for i in result["items"]]


async def test_S2_store_search_items(client):
    mk = marker()
    puts = [
        ([mk, "u1"], "prefs", {"theme": "dark", "lang": "en"}),
        ([mk, "u1"], "b", {"theme": "light", "n": 2}),
        ([mk, "u2"], "a", {"theme": "dark", "n": 3, "nested": {"x": 1}}),
        ([mk, "u2", "deep"], "z", {"theme": "dark", "n": 4}),
    ]
    for ns, key, value in puts:
        await client.store.put_item(ns, key=key, value=value)

    everything = await client.store.search_items([mk])
    assert set(everything) == {"items"}
    assert sorted(item_ids(everything)) == sorted((tuple(ns), k) for ns, k, _ in puts)
    for i in everything["items"]:
        assert set(i) == ITEM_KEYS | {"score"}, sorted(i)
        assert i["score"] is None  # no vector index
    by_key = {(tuple(i["namespace"]), i["key"]): i["value"] for i in everything["items"]}
    assert by_key == {(tuple(ns), k): v for ns, k, v in puts}

    dark = await client.store.search_items([mk], filter={"theme": "dark"})
    assert sorted(item_ids(dark)) == sorted(
        [((mk, "u1"), "prefs"), ((mk, "u2"), "a"), ((mk, "u2", "deep"), "z")]
    )
    assert item_ids(await client.store.search_items([mk], filter={"theme": "dark", "n": 3})) == [
        ((mk, "u2"), "a")
    ]
    assert item_ids(await client.store.search_items([mk], filter={"nested": {"x": 1}})) == [
        ((mk, "u2"), "a")
    ]
    assert (await client.store.search_items([mk], filter={"theme": "green"}))["items"] == []

    # the prefix matches whole labels, at any depth below
    assert sorted(item_ids(await client.store.search_items([mk, "u2"]))) == [
        ((mk, "u2"), "a"),
        ((mk, "u2", "deep"), "z"),
    ]
    assert (await client.store.search_items([mk, "u"]))["items"] == []

    # limit / offset page through the same order
    full = item_ids(dark)
    pages = []
    for offset in range(4):
        page = await client.store.search_items([mk], filter={"theme": "dark"}, limit=1, offset=offset)
        pages.extend(item_ids(page))
    assert pages == full
    assert item_ids(await client.store.search_items([mk], limit=2)) == item_ids(everything)[:2]


async def test_S2_store_list_namespaces(client):
    mk = marker()
    for ns in ([mk, "u1"], [mk, "u2"], [mk, "u2", "deep"]):
        await client.store.put_item(ns, key="k", value={"v": 1})

    everything = await client.store.list_namespaces(prefix=[mk])
    assert set(everything) == {"namespaces"}
    assert sorted(everything["namespaces"]) == [[mk, "u1"], [mk, "u2"], [mk, "u2", "deep"]]
    # max_depth truncates (and dedups) the namespaces
    assert sorted((await client.store.list_namespaces(prefix=[mk], max_depth=2))["namespaces"]) == [
        [mk, "u1"],
        [mk, "u2"],
    ]
    assert (await client.store.list_namespaces(prefix=[mk], max_depth=1))["namespaces"] == [[mk]]
    assert (await client.store.list_namespaces(prefix=[mk], suffix=["deep"]))["namespaces"] == [
        [mk, "u2", "deep"]
    ]
    assert (await client.store.list_namespaces(prefix=[mk, "u2"]))["namespaces"] in (
        [[mk, "u2"], [mk, "u2", "deep"]],
        [[mk, "u2", "deep"], [mk, "u2"]],
    )
    assert (await client.store.list_namespaces(prefix=[mk, "nope"]))["namespaces"] == []

    # limit / offset page through the same order
    full = everything["namespaces"]
    pages = []
    for offset in range(4):
        pages.extend(
            (await client.store.list_namespaces(prefix=[mk], limit=1, offset=offset))["namespaces"]
        )
    assert pages == full



async def test_S2_store_hitl_finish_writes_memory(client):
    mk = marker()
    tid = (await client.threads.create())["thread_id"]
    interrupted = await client.runs.wait(tid, "hitl", input=HI)
    assert "__interrupt__" in interrupted
    final = await client.runs.wait(tid, "hitl", command={"resume": mk})
    assert final["approved"] == mk and final["count"] == 101

    # the finish node's store.put(("memories", "demo"), "last", {"approved": ...})
    item = await client.store.get_item(["memories", "demo"], key="last")
    assert item is not None
    assert item["namespace"] == ["memories", "demo"]
    assert item["key"] == "last"
    assert item["value"] == {"approved": mk}
    found = await client.store.search_items(["memories"], filter={"approved": mk})
    assert item_ids(found) == [(("memories", "demo"), "last")]
    assert found["items"][0]["value"] == {"approved": mk}
    assert ["memories", "demo"] in (await client.store.list_namespaces(prefix=["memories"]))["namespaces"]


# ---------------------------------------------------------------- crons


async def delete_crons(client, crons):
    for c in crons:
        try:
            await client.crons.delete(c["cron_id"])
        except NotFoundError:
            pass


async def test_S2_crons_create_for_thread(client):
    mk = marker()
    tid = (await client.threads.create())["thread_id"]
    made = []
    try:
        cron, expected = await timed(
            lambda: client.crons.create_for_thread(
                tid, "simple", schedule="0 0 1 1 *", input={"count": 0}, metadata={"suite": mk}
            ),
            lambda t: next_new_year(None, t),
        )
        made.append(cron)
        assert set(cron) == CRON_KEYS, sorted(cron)
        assert re.fullmatch(UUID_RE, cron["cron_id"]), cron["cron_id"]
        assert cron["thread_id"] == tid
        # the graph id is resolved to its system assistant
        assert cron["assistant_id"] == system_id("simple")
        assert cron["schedule"] == "0 0 1 1 *"
        assert cron["timezone"] is None
        assert cron["end_time"] is None
        assert cron["enabled"] is True
        assert cron["on_run_completed"] is None  # thread crons
        assert cron["metadata"] == {"suite": mk}
        assert_fire_time(cron["next_run_date"], expected)
        payload = cron["payload"]
        assert payload["input"] == {"count": 0}
        assert payload["assistant_id"] == system_id("simple")
        assert payload["config"]["configurable"]["cron_id"] == cron["cron_id"]
        assert cron["created_at"] == cron["updated_at"]

        # in a time zone: midnight in Paris is 23:00 UTC the day before
        paris, expected = await timed(
            lambda: client.crons.create_for_thread(
                tid, "simple", schedule="0 0 1 1 *", timezone="Europe/Paris", metadata={"suite": mk}
            ),
            lambda t: next_new_year("Europe/Paris", t),
        )
        made.append(paris)
        assert paris["timezone"] == "Europe/Paris"
        assert_fire_time(paris["next_run_date"], expected)
        assert parse_ts(paris["next_run_date"]).hour == 23

        listed = await client.crons.search(thread_id=tid)
        assert [c["cron_id"] for c in listed] == [paris["cron_id"], cron["cron_id"]]
        assert listed[1] == cron
        assert await client.crons.count(thread_id=tid) == 2

        with pytest.raises(NotFoundError):
            await client.crons.create_for_thread(str(uuid.uuid4()), "simple", schedule="0 9 * * *")
    finally:
        await delete_crons(client, made)
    assert await client.crons.count(thread_id=tid) == 0


def paris_9am(t):
    return next_daily(9, 0, "Europe/Paris", t)


async def test_S2_crons_create_stateless_timezone(client):
    mk = marker()
    a = await new_assistant(client, metadata={"suite": mk})
    aid = a["assistant_id"]
    made = []
    try:
        cron, expected = await timed(
            lambda: client.crons.create(
                aid,
                schedule="0 9 * * *",
                input={"count": 0},
                timezone="Europe/Paris",
                metadata={"suite": mk},
            ),
            paris_9am,
        )
        made.append(cron)
        assert set(cron) == CRON_KEYS, sorted(cron)
        assert cron["thread_id"] is None  # a new thread per fire
        assert cron["assistant_id"] == aid
        assert cron["timezone"] == "Europe/Paris"
        assert cron["on_run_completed"] == "delete"  # the default
        assert cron["enabled"] is True
        assert cron["metadata"] == {"suite": mk}
        # 09:00 in Paris: 08:00 UTC in winter (CET), 07:00 UTC in summer (CEST)
        assert_fire_time(cron["next_run_date"], expected)
        fire = parse_ts(cron["next_run_date"])
        assert (fire.hour, fire.minute, fire.second) in ((8, 0, 0), (7, 0, 0)), cron["next_run_date"]
        payload = cron["payload"]
        assert payload["timezone"] == "Europe/Paris"
        assert payload["input"] == {"count": 0}
        assert payload["assistant_id"] == aid
        assert payload["config"]["configurable"]["cron_id"] == cron["cron_id"]

        # without a time zone the schedule is UTC; on_run_completed, enabled, end_time
        end = datetime(2031, 1, 1, tzinfo=timezone.utc)
        keep, expected = await timed(
            lambda: client.crons.create(
                aid, schedule="0 9 * * *", on_run_completed="keep", enabled=False, end_time=end
            ),
            lambda t: next_daily(9, 0, None, t),
        )
        made.append(keep)
        assert keep["timezone"] is None
        assert keep["on_run_completed"] == "keep"
        assert keep["enabled"] is False
        assert parse_ts(keep["end_time"]) == end
        assert keep["metadata"] == {}
        assert_fire_time(keep["next_run_date"], expected)

        # by graph id: resolved to the system assistant
        by_graph = await client.crons.create("simple", schedule="0 9 * * 1")
        made.append(by_graph)
        assert by_graph["assistant_id"] == system_id("simple")
        assert by_graph["thread_id"] is None

        with pytest.raises(NotFoundError):
            await client.crons.create(str(uuid.uuid4()), schedule="0 9 * * *")
    finally:
        await delete_crons(client, made)


async def test_S2_crons_search_count(client):
    mk = marker()
    a = await new_assistant(client, metadata={"suite": mk})
    aid = a["assistant_id"]
    tid = (await client.threads.create())["thread_id"]
    made = []
    try:
        on_thread = await client.crons.create_for_thread(
            tid, aid, schedule="0 0 1 1 *", input={"count": 0}, metadata={"suite": mk}
        )
        made.append(on_thread)
        stateless = await client.crons.create(
            aid, schedule="0 9 * * *", timezone="Europe/Paris", metadata={"suite": mk}
        )
        made.append(stateless)
        disabled = await client.crons.create(aid, schedule="30 9 * * *", enabled=False)
        made.append(disabled)
        ids = [c["cron_id"] for c in made]

        # newest first by default
        by_assistant = await client.crons.search(assistant_id=aid)
        assert [c["cron_id"] for c in by_assistant] == ids[::-1]
        assert by_assistant == made[::-1]
        assert [c["cron_id"] for c in await client.crons.search(thread_id=tid)] == [ids[0]]
        assert [
            c["cron_id"] for c in await client.crons.search(assistant_id=aid, thread_id=tid)
        ] == [ids[0]]
        assert [c["cron_id"] for c in await client.crons.search(metadata={"suite": mk})] == [
            ids[1],
            ids[0],
        ]
        assert [c["cron_id"] for c in await client.crons.search(assistant_id=aid, enabled=False)] == [
            ids[2]
        ]
        assert [c["cron_id"] for c in await client.crons.search(assistant_id=aid, enabled=True)] == [
            ids[1],
            ids[0],
        ]

        # sort, page, select
        asc = await client.crons.search(assistant_id=aid, sort_by="created_at", sort_order="asc")
        assert [c["cron_id"] for c in asc] == ids
        page = await client.crons.search(
            assistant_id=aid, sort_by="created_at", sort_order="asc", limit=1, offset=1
        )
        assert [c["cron_id"] for c in page] == [ids[1]]
        by_next = await client.crons.search(
            assistant_id=aid, sort_by="next_run_date", sort_order="desc"
        )
        dates = [parse_ts(c["next_run_date"]) for c in by_next]
        assert dates == sorted(dates, reverse=True)
        furthest = max(made, key=lambda c: parse_ts(c["next_run_date"]))
        assert by_next[0]["cron_id"] == furthest["cron_id"]
        sel = await client.crons.search(
            assistant_id=aid, select=["cron_id", "schedule"], sort_by="created_at", sort_order="asc"
        )
        assert sel == [{"cron_id": c["cron_id"], "schedule": c["schedule"]} for c in made]

        # count agrees with search
        assert await client.crons.count(assistant_id=aid) == 3
        assert await client.crons.count(thread_id=tid) == 1
        assert await client.crons.count(metadata={"suite": mk}) == 2
        assert await client.crons.count(assistant_id=aid, metadata={"suite": mk, "x": 1}) == 0
        total = await client.crons.count()
        assert isinstance(total, int) and total >= 3

        # a graph id is not accepted as the search's assistant_id (422, wants a UUID)
        with pytest.raises(UnprocessableEntityError):
            await client.crons.search(assistant_id="simple")
    finally:
        await delete_crons(client, made)
    assert await client.crons.search(assistant_id=aid) == []
    assert await client.crons.count(assistant_id=aid) == 0


async def test_S2_crons_update(client):
    mk = marker()
    a = await new_assistant(client, metadata={"suite": mk})
    cron = await client.crons.create(
        a["assistant_id"],
        schedule="0 9 * * *",
        input={"count": 0},
        timezone="Europe/Paris",
        metadata={"suite": mk},
    )
    made = [cron]
    cid = cron["cron_id"]
    try:

        # a new schedule: next_run_date recomputed in the cron's time zone
        updated, expected = await timed(
            lambda: client.crons.update(
                cid, schedule="30 10 * * *", enabled=False, metadata={"x": 1}
            ),
            lambda t: next_daily(10, 30, "Europe/Paris", t),
        )
        assert updated["cron_id"] == cid
        assert updated["schedule"] == "30 10 * * *"
        assert updated["enabled"] is False
        assert updated["timezone"] == "Europe/Paris"
        assert updated["metadata"] == {"suite": mk, "x": 1}  # merged
        assert updated["thread_id"] is None and updated["assistant_id"] == a["assistant_id"]
        assert updated["created_at"] == cron["created_at"]
        assert parse_ts(updated["updated_at"]) >= parse_ts(cron["updated_at"])
        assert_fire_time(updated["next_run_date"], expected)
        assert updated["payload"]["schedule"] == "30 10 * * *"
        assert updated["payload"]["input"] == {"count": 0}
        assert updated["payload"]["config"]["configurable"]["cron_id"] == cid

        # a new time zone: recomputed too
        moved, expected = await timed(
            lambda: client.crons.update(cid, timezone="America/New_York"),
            lambda t: next_daily(10, 30, "America/New_York", t),
        )
        assert moved["timezone"] == "America/New_York"
        assert moved["schedule"] == "30 10 * * *"
        assert moved["enabled"] is False
        assert_fire_time(moved["next_run_date"], expected)

        # input and on_run_completed, enabled again
        again = await client.crons.update(
            cid, input={"count": 5}, on_run_completed="keep", enabled=True
        )
        assert again["payload"]["input"] == {"count": 5}
        assert again["on_run_completed"] == "keep"
        assert again["enabled"] is True
        assert [c["cron_id"] for c in await client.crons.search(assistant_id=a["assistant_id"], enabled=True)] == [cid]

        with pytest.raises(UnprocessableEntityError):
            await client.crons.update(cid, schedule="not a cron")
    finally:
        await delete_crons(client, made)
    with pytest.raises(NotFoundError):
        await client.crons.update(cid, schedule="0 9 * * *")


async def test_S2_crons_delete(client):
    mk = marker()
    a = await new_assistant(client, metadata={"suite": mk})
    cron = await client.crons.create(a["assistant_id"], schedule="0 9 * * 1", metadata={"suite": mk})
    assert await client.crons.count(assistant_id=a["assistant_id"]) == 1
    assert await client.crons.delete(cron["cron_id"]) is None
    assert await client.crons.count(assistant_id=a["assistant_id"]) == 0
    assert await client.crons.search(metadata={"suite": mk}) == []
    with pytest.raises(NotFoundError):
        await client.crons.delete(cron["cron_id"])


async def test_S2_crons_bad_schedule(client):
    mk = marker()
    a = await new_assistant(client, metadata={"suite": mk})
    aid = a["assistant_id"]
    tid = (await client.threads.create())["thread_id"]
    for schedule in ("not a cron", "61 * * * *", "* * * *"):
        with pytest.raises(UnprocessableEntityError) as err:
            await client.crons.create(aid, schedule=schedule)
        assert status_of(err) == 422
        assert schedule in str(err.value), str(err.value)
        with pytest.raises(UnprocessableEntityError):
            await client.crons.create_for_thread(tid, aid, schedule=schedule)
    # an unknown time zone is 422 as well
    with pytest.raises(UnprocessableEntityError):
        await client.crons.create(aid, schedule="0 9 * * *", timezone="Mars/Olympus")
    # nothing was made
    assert await client.crons.count(assistant_id=aid) == 0
    assert await client.crons.count(thread_id=tid) == 0
