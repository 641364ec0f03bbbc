"""What a provider that calls a vendor's API over HTTP does alike whatever the API (OpenAI's
Chat Completions, Anthropic's Messages): the name evalward.yaml gives it, the concurrency
limit every call waits for, a streamed reply held open under that limit, its client closed."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator
from typing import Any, Self

from evalward.http.client import HttpClient
from evalward.providers.retry import Answer, Endpoint, Opened, RetryPolicy, open_stream


class VendorApi:
    """The part of `OpenAIProvider` and `AnthropicProvider` that is not their API's."""

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

    @contextlib.asynccontextmanager
    async def _streamed(
        self, at: Endpoint, body: dict[str, Any], headers: dict[str, str]
    ) -> AsyncIterator[Opened | Answer]:
        """A streamed reply asked of `at`, held open (and counted against the concurrency
        limit) until the block ends."""
        async with self._limit:
            opened = await open_stream(self._client, at, body, headers, self._retry)
            try:
                yield opened
            finally:
                if isinstance(opened, Opened):
                    await opened.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()
