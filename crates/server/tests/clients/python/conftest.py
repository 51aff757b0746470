"""Layer 1 client-conformance suite: the official Python SDK (langgraph-sdk) as client.

The server under test is given by STATEGRAPH_SERVER_URL. Every test runs twice, with
the async client (`get_client`, httpx.AsyncClient) and the sync client
(`get_sync_client`, httpx.Client: a separate HTTP and SSE code path in the SDK).

Tests are written once, as `async def`, against `Sdk`: an adapter whose methods are
coroutines. For the async client they await the SDK call; for the sync client they
call it directly (blocking the test's event loop, which nothing else uses). Streaming
calls (`runs.stream`, `runs.join_stream`, `threads.join_stream`) return the list of
parts the SDK yielded, so both variants assert on the same values.
"""
from __future__ import annotations

import os

import pytest

# The SDK would load an API key from these and send it; the suite must send none.
for _var in ("LANGGRAPH_API_KEY", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
    os.environ.pop(_var, None)

from langgraph_sdk import get_client, get_sync_client  # noqa: E402

ENV_URL = "STATEGRAPH_SERVER_URL"

# connect, read, write, pool (seconds); a read never needs more than a few seconds here.
HTTP_TIMEOUT = (5.0, 25.0, 25.0, 5.0)

STREAMING = {
    ("runs", "stream"),
    ("runs", "join_stream"),
    ("threads", "join_stream"),
}


def pytest_configure(config):
    if not os.environ.get(ENV_URL):
        raise pytest.UsageError(
            f"{ENV_URL} is not set: export it to the base URL of a LangGraph-API-"
            f"compatible server, e.g. {ENV_URL}=http://127.0.0.1:8123"
        )


class _Section:
    def __init__(self, kind: str, name: str, section):
        self._kind = kind
        self._name = name
        self._section = section

    def __getattr__(self, method: str):
        fn = getattr(self._section, method)
        streaming = (self._name, method) in STREAMING
        kind = self._kind

        async def call(*args, **kwargs):
            if kind == "async":
                if streaming:
                    return [part async for part in fn(*args, **kwargs)]
                return await fn(*args, **kwargs)
            if streaming:
                return list(fn(*args, **kwargs))
            return fn(*args, **kwargs)

        call.__name__ = f"{self._name}.{method}"
        return call


class Sdk:
    """`await sdk.threads.create(...)`, `await sdk.runs.stream(...)` -> list, etc."""

    def __init__(self, kind: str, raw):
        self.kind = kind
        self.raw = raw

    def __getattr__(self, name: str):
        return _Section(self.kind, name, getattr(self.raw, name))

    def __repr__(self):
        return f"Sdk({self.kind})"


@pytest.fixture(scope="session")
def server_url() -> str:
    return os.environ[ENV_URL].rstrip("/")


@pytest.fixture(params=["async", "sync"])
async def client(request, server_url):
    if request.param == "async":
        raw = get_client(url=server_url, api_key=None, timeout=HTTP_TIMEOUT)
        try:
            yield Sdk("async", raw)
        finally:
            await raw.aclose()
    else:
        raw = get_sync_client(url=server_url, api_key=None, timeout=HTTP_TIMEOUT)
        try:
            yield Sdk("sync", raw)
        finally:
            raw.close()
