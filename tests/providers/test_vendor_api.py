"""What OpenAI's and Anthropic's providers share (`providers/vendor_api.py`), against real
servers on loopback: the name evalward.yaml gives a provider is the one its failures say, and a
streamed reply is held under the concurrency limit only until its block ends."""

from __future__ import annotations

import asyncio

import pytest

from evalward.errors import ProviderUnavailable
from evalward.http.client import HttpClient
from evalward.providers.anthropic import AnthropicProvider
from evalward.providers.openai import OpenAIProvider
from evalward.providers.retry import Answer, Opened, RetryPolicy
from evalward.providers.vendor_api import VendorApi
from support.rawhttp import RawServer

pytestmark = pytest.mark.unit

EVENTS = b"event: message_stop\ndata: {}\n\n"
STREAMED = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n%s" % (
    len(EVENTS),
    EVENTS,
)


def test_a_renamed_provider_s_failure_says_the_name_it_was_given() -> None:
    async def go() -> str:
        provider = OpenAIProvider(
            HttpClient(timeout_seconds=10),
            base_url="http://127.0.0.1:9/v1",  # nothing listens there
            retry=RetryPolicy(attempts=1),
        ).named("ollama")
        assert isinstance(provider, VendorApi) and provider.name == "ollama"
        try:
            await provider.forward("models", None, {})
        except ProviderUnavailable as exc:
            return str(exc)
        finally:
            await provider.aclose()
        raise AssertionError("a server that is not there answered")

    said = asyncio.run(go())
    assert said.startswith("ollama: no complete reply (cannot connect to 127.0.0.1:9")


def test_a_stream_is_held_under_the_limit_until_its_block_ends() -> None:
    server = RawServer(replies=(STREAMED, STREAMED))

    async def go() -> list[Opened | Answer]:
        provider = AnthropicProvider(
            HttpClient(timeout_seconds=10), base_url=server.url, max_concurrency=1
        )
        got: list[Opened | Answer] = []
        try:
            async with asyncio.timeout(60):  # a limit never given back would wait forever
                for _ in range(2):  # one at a time: the second waits for the first's end
                    async with provider.stream("messages", {"stream": True}, {}) as opened:
                        got.append(opened)
        finally:
            await provider.aclose()
        return got

    try:
        got = asyncio.run(go())
    finally:
        server.close()
    assert [type(o) for o in got] == [Opened, Opened]
    assert len(server.requests) == 2
    assert all(b"POST /v1/messages " in r and b"anthropic-version" in r for r in server.requests)
