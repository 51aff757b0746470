"""The README's third path: the quickstart agent served by `examples/server`
(as `agent`), driven by the official Python SDK exactly as the README shows.

Only stategraph's example server serves `agent`; against the official
server's fixture (STATEGRAPH_SERVER_KIND=official) this file is skipped, and
says so.
"""
from __future__ import annotations

import os

import pytest

from langgraph_sdk import get_sync_client

if os.environ.get("STATEGRAPH_SERVER_KIND") == "official":
    pytest.skip("the official fixture serves no quickstart agent", allow_module_level=True)

URL = os.environ["STATEGRAPH_SERVER_URL"]


def test_the_readme_conversation_with_the_quickstart_agent():
    # As in README.md ("Serve the agent").
    client = get_sync_client(url=URL, api_key=None)
    thread = client.threads.create()
    answers = []
    # The tools node runs once per tool call (LangGraph's v2 tool node).
    turns = [
        ("What's the weather in Paris, and what is 21 * 2?", ["agent", "tools", "tools", "agent"]),
        ("And in Tokyo?", ["agent", "tools", "agent"]),
    ]
    for question, steps in turns:
        updates = [
            part.data
            for part in client.runs.stream(
                thread["thread_id"],
                "agent",
                input={"messages": [{"role": "user", "content": question}]},
                stream_mode="updates",
            )
            if part.event == "updates"
        ]
        nodes = [next(iter(update)) for update in updates]
        assert nodes == steps, updates
        answers.append(updates[-1]["agent"]["messages"][-1]["content"])
    assert answers[0] == "Paris: 18°C and sunny; 21 * 2 = 42."
    assert answers[1] == "Tokyo: 22°C with light rain (question 2 of this conversation)."
    state = client.threads.get_state(thread["thread_id"])
    kinds = [message["type"] for message in state["values"]["messages"]]
    assert kinds == ["human", "ai", "tool", "tool", "ai", "human", "ai", "tool", "ai"]
    # The thread keeps the whole conversation.
    assert state["values"]["messages"][4]["content"] == answers[0]
    assert client.threads.get(thread["thread_id"])["status"] == "idle"
