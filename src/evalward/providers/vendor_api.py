"""What a provider that calls a vendor's API over HTTP does alike whatever the API (OpenAI's
Chat Completions, Anthropic's Messages): the name evalward.yaml gives it, the concurrency
limit every call waits for, an agent's request forwarded (a streamed reply held open under that
limit), its client closed. Each API says where a call goes (`_at`) and what headers it sends
(`_headers`)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Mapping
from typing import Any, Self

from evalward.http.client import HttpClient
from evalward.providers.retry import Answer, Endpoint, Opened, RetryPolicy, open_stream, send


class VendorApi:
    """The part of `OpenAIProvider` and `AnthropicProvider` that is not their API's. Their
    constructors take each `providers` setting of evalward.yaml as a keyword parameter with a
    default; a parameter object would only rename them."""

    name: str

    def __init__(
        self,
        client: HttpClient,
        endpoint: Endpoint,
        retry: RetryPolicy | None,
        max_concurrency: int,
    ) -> None:
        self._client = client
        self._endpoint = endpoint
        self._retry = retry or RetryPolicy()
        self._limit = asyncio.Semaphore(max_concurrency)

    def named(self, name: str) -> Self:
        """This provider under the name evalward.yaml gives another server that speaks its
        API (`ollama`, `azure`): its model ids and its messages say that name."""
        self.name = name
        self._endpoint = dataclasses.replace(self._endpoint, provider=name)
        return self

    async def forward(
        self, path: str, body: dict[str, Any] | None, headers: Mapping[str, str]
    ) -> Answer:
        """Send an agent's own request body (the model proxy's upstream call), or a
        provider's own (`AnthropicProvider.complete`), to `path` below the API's root — GET
        when there is no body — with the key, the retries and the concurrency limit of every
        other call, and of the agent's headers those the API passes on (`_headers`)."""
        at = self._at(path, str(body.get("model", "")) if body else "")
        async with self._limit:
            return await send(self._client, at, body, self._headers(headers), self._retry)

    @contextlib.asynccontextmanager
    async def stream(
        self, path: str, body: dict[str, Any], headers: Mapping[str, str]
    ) -> AsyncIterator[Opened | Answer]:
        """`forward` for a streamed reply, held open (and counted against the concurrency
        limit) until the block ends."""
        at = self._at(path, str(body.get("model", "")))
        async with self._limit:
            opened = await open_stream(self._client, at, body, self._headers(headers), self._retry)
            try:
                yield opened
            finally:
                if isinstance(opened, Opened):
                    await opened.aclose()

    def _at(self, path: str, model: str) -> Endpoint:
        """`path` below the API's root, for a call to `model` ("" for a model list)."""
        raise NotImplementedError

    def _headers(self, agent: Mapping[str, str]) -> dict[str, str]:
        """What a call sends besides its body: the key, and of the `agent`'s headers those
        the API passes on."""
        raise NotImplementedError

    async def aclose(self) -> None:
        await self._client.aclose()
