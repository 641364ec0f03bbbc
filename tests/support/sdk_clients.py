"""The official SDKs' clients a test makes against the model proxy, closed as its run ends:
their kept-alive connections would otherwise be collected, and reported as unclosed, in
whatever later test the garbage collector happens to run in."""

from __future__ import annotations

from typing import TypeVar

import anthropic
import openai

SdkClient = TypeVar("SdkClient", openai.AsyncOpenAI, anthropic.AsyncAnthropic)

_OPEN: list[openai.AsyncOpenAI | anthropic.AsyncAnthropic] = []


def kept(client: SdkClient) -> SdkClient:
    """`client`, to be closed by `close_kept`."""
    _OPEN.append(client)
    return client


async def close_kept() -> None:
    """Close every client `kept` holds."""
    while _OPEN:
        await _OPEN.pop().close()
