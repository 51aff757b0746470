# Copy of /work/shared/server/fixture/graph.py (the fixture graphs the server under test
# serves: hitl, simple, parent, boom), kept verbatim below this header so that
# test_remote_graph.py can run the same graphs locally. Keep it in sync with the original.

"""Tiny graphs for recording LangGraph Server transcripts (no LLM, no network)."""
import asyncio
from typing import Annotated, TypedDict

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage
from langgraph.config import get_stream_writer, get_store
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    count: int
    approved: str


def _model():
    # GenericFakeChatModel streams content split on whitespace -> several chunks.
    return GenericFakeChatModel(messages=iter([AIMessage(content="Hello from the fake model")] * 1000))


async def agent(state: State):
    writer = get_stream_writer()
    writer({"progress": "agent-start"})
    reply = await _model().ainvoke(state.get("messages", []))
    return {"messages": [reply], "count": state.get("count", 0) + 1}


def review(state: State):
    answer = interrupt({"question": "approve?", "count": state.get("count", 0)})
    return {"approved": str(answer)}


def finish(state: State):
    store = get_store()
    store.put(("memories", "demo"), "last", {"approved": state.get("approved")})
    return {"count": state.get("count", 0) + 100}


builder = StateGraph(State)
builder.add_node("agent", agent)
builder.add_node("review", review)
builder.add_node("finish", finish)
builder.add_edge(START, "agent")
builder.add_edge("agent", "review")
builder.add_edge("review", "finish")
builder.add_edge("finish", END)
hitl = builder.compile()


async def slow_step(state: State):
    await asyncio.sleep(float(state.get("count", 0) or 0) / 10.0)
    return {"count": state.get("count", 0) + 1}


b2 = StateGraph(State)
b2.add_node("slow", slow_step)
b2.add_edge(START, "slow")
b2.add_edge("slow", END)
simple = b2.compile()


# a parent graph with a subgraph, to show namespaced events and /subgraphs
def inner_node(state: State):
    return {"count": state.get("count", 0) + 10}


ib = StateGraph(State)
ib.add_node("inner", inner_node)
ib.add_edge(START, "inner")
inner = ib.compile()

pb = StateGraph(State)
pb.add_node("child", inner)
pb.add_edge(START, "child")
parent = pb.compile()


def explode(state: State):
    raise ValueError("boom: intentional failure for the error-event transcript")


bb = StateGraph(State)
bb.add_node("explode", explode)
bb.add_edge(START, "explode")
bb.add_edge("explode", END)
boom = bb.compile()
