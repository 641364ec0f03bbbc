"""Robust JSON POSTs for providers: retries on 429, 5xx and connection errors with
exponential backoff and jitter, honouring Retry-After (capped)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import json
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from evalward.errors import (
    HttpFailure,
    HttpTimeout,
    KeyRejected,
    ProviderError,
    ProviderUnavailable,
)
from evalward.http.client import HttpClient, Reply, StreamingReply
from evalward.text.counts import counted
from evalward.text.cuts import cap_chars

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 30.0

    def delay(self, attempt: int, reply: Reply | None) -> float:
        """Seconds to wait before retry number `attempt` (1-based)."""
        hinted = retry_after_seconds(reply.headers) if reply is not None else None
        if hinted is not None:
            return min(hinted, self.max_delay)
        backoff = self.base_delay * (2 ** (attempt - 1))
        return float(min(backoff * (0.5 + random.random() / 2), self.max_delay))  # noqa: S311


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    for name, unit in (("retry-after-ms", 1000), ("retry-after", 1)):
        with contextlib.suppress(KeyError, ValueError):  # absent, or not a number
            return max(float(headers[name]) / unit, 0.0)
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        when = parsedate_to_datetime(value)
        return max((when - dt.datetime.now(dt.UTC)).total_seconds(), 0.0)
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class Endpoint:
    """Where a provider posts, and how to word its failures (never with the key itself)."""

    provider: str
    base_url: str
    url: str
    key_env: str

    def at(self, url: str) -> Endpoint:
        """The same provider's endpoint at another URL (another route of its API)."""
        return dataclasses.replace(self, url=url)

    @property
    def shown_url(self) -> str:
        """`base_url` as messages show it: without the user and password a URL may carry
        (a gateway's basic auth), nor a query or a fragment (a gateway's key, which the
        settings refuse there), as those messages reach logs, comments and agents."""
        parts = urlsplit(self.base_url)
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit(parts._replace(netloc=host, query="", fragment=""))


def settle(
    answer: Answer, endpoint: Endpoint, headers: Mapping[str, str], policy: RetryPolicy
) -> dict[str, Any]:
    """The JSON object of `send`'s last reply, or the error that says why there is none.

    When every attempt failed in a way worth retrying, the error is `ProviderUnavailable`
    and carries the server's own words from its last reply."""
    if answer.data is not None:
        return answer.data
    if answer.problem is not None:
        retryable = answer.reply.status in RETRYABLE_STATUS
        said = server_message(answer.reply, headers) if retryable else ""
        raise ProviderUnavailable(exhausted(endpoint, policy, answer.problem, said))
    refused = refusal(answer.reply, endpoint, headers)
    raise KeyRejected(refused) if answer.reply.status == 401 else ProviderError(refused)


@dataclass(frozen=True)
class Answer:
    """The last reply of `send`: `data` is its JSON object when it succeeded; `problem` says
    why it would have been retried when the attempts ran out on it."""

    reply: Reply
    data: dict[str, Any] | None
    problem: str | None


async def send(
    client: HttpClient,
    endpoint: Endpoint,
    body: dict[str, Any] | None,
    headers: dict[str, str],
    policy: RetryPolicy,
) -> Answer:
    """POST `body` (GET when it is None), retrying 408/409/429/5xx, timeouts, broken
    connections and a success that is not a JSON object; return the last reply whatever its
    status. Raises ProviderUnavailable only when the last attempt got no reply at all."""

    async def attempt() -> Reply:
        if body is None:
            return await client.get(endpoint.url, headers)
        return await client.post_json(endpoint.url, body, headers)

    return await _retried(endpoint, policy, attempt)


@dataclass
class Opened:
    """A streamed reply on its way, held open until `aclose`."""

    reply: StreamingReply
    _scope: contextlib.AsyncExitStack

    async def aclose(self) -> None:
        await self._scope.aclose()


async def open_stream(
    client: HttpClient,
    endpoint: Endpoint,
    body: dict[str, Any],
    headers: dict[str, str],
    policy: RetryPolicy,
) -> Opened | Answer:
    """POST a request for a streamed reply, retrying as `send` does until a stream begins:
    `Opened` once the server streams, else the last whole reply as `send` returns it (an
    error status, or a server that answered with one JSON object). Once a stream has begun
    nothing is retried — its first events may already be with the agent."""

    async def attempt() -> Reply | Opened:
        async with contextlib.AsyncExitStack() as scope:
            reply = await scope.enter_async_context(client.stream_json(endpoint.url, body, headers))
            if reply.status == 200 and reply.event_stream:
                return Opened(reply, scope.pop_all())  # kept open: the caller closes it
            return await reply.read()

    return await _retried(endpoint, policy, attempt)


async def _retried(
    endpoint: Endpoint, policy: RetryPolicy, attempt: Callable[[], Awaitable[Reply | T]]
) -> Answer | T:
    """`attempt` made until its reply needs no retry or the attempts run out (`send`); what
    it gives that is not a reply (a stream begun) is returned as it is, at once."""
    last_problem = ""
    for number in range(1, policy.attempts + 1):
        reply: Reply | None = None
        try:
            got = await attempt()
        except HttpTimeout:
            last_problem = "the request timed out"
        except HttpFailure as exc:
            last_problem = f"no complete reply ({exc})"
        else:
            if not isinstance(got, Reply):
                return got
            reply, answer = got, _judge(got)
            if answer.problem is None or number == policy.attempts:
                return answer
            last_problem = answer.problem
        if number < policy.attempts:
            await asyncio.sleep(policy.delay(number, reply))
    raise ProviderUnavailable(exhausted(endpoint, policy, last_problem))


def _judge(response: Reply) -> Answer:
    if response.status in RETRYABLE_STATUS and not quota_used_up(response):
        return Answer(response, None, f"HTTP {response.status}")
    if response.status >= 300:
        return Answer(response, None, None)
    try:
        data = response.json()
    except ValueError:
        return Answer(response, None, "the response was not valid JSON")
    if not isinstance(data, dict):
        return Answer(response, None, "the response was not a JSON object")
    return Answer(response, data, None)


def quota_used_up(response: Reply) -> bool:
    """A 429 that says the account's quota is used up (OpenAI's `insufficient_quota`): no
    retry or later run gets past it until someone pays, so it is a refusal with the server's
    words, not an outage to wait out."""
    if response.status != 429:
        return False
    error = error_of(response)
    return "insufficient_quota" in (error.get("code"), error.get("type"))


def error_of(response: Reply) -> dict[str, Any]:
    """The `error` object of a JSON reply (`{"error": {...}}`); {} when it has none."""
    try:
        data = response.json()
    except ValueError:
        return {}
    error = data.get("error") if isinstance(data, dict) else None
    return error if isinstance(error, dict) else {}


def exhausted(endpoint: Endpoint, policy: RetryPolicy, problem: str, said: str = "") -> str:
    return (
        f"{endpoint.provider}: {problem} after {counted(policy.attempts, 'attempt')} "
        f"({endpoint.shown_url})" + (f"; the server said: {said}" if said else "")
    )


SERVER_MESSAGE_CHARS = 300
SECRET_HEADERS = ("authorization", "x-api-key", "api-key")


def server_message(response: Reply, headers: Mapping[str, str]) -> str:
    """What the server said about its failure: the `error.message` (or `error`, `message`,
    `detail`) of a JSON body, else the body's text; one line, at most 300 characters, with
    the key this request sent blotted out (files and logs redact the rest)."""
    text = ""
    try:
        data = response.json()
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        candidates = [error.get("message") if isinstance(error, dict) else error]
        candidates += [data.get("message"), data.get("detail")]
        text = next((c for c in candidates if isinstance(c, str) and c.strip()), "")
        if not text and isinstance(data.get("detail"), list | dict):
            text = json.dumps(data["detail"], ensure_ascii=False)
    if not text:
        text = response.text(SERVER_MESSAGE_CHARS * 2)
    for name, value in headers.items():
        if name.lower() in SECRET_HEADERS:
            for secret in {value, value.split()[-1] if value.split() else value}:
                if len(secret) >= 8:
                    text = text.replace(secret, "***")
    return cap_chars(" ".join(text.split()), SERVER_MESSAGE_CHARS)


def refusal(response: Reply, endpoint: Endpoint, headers: Mapping[str, str]) -> str:
    detail = server_message(response, headers)
    if response.status in (401, 403):
        said = f": {detail}" if detail else ""
        return (
            f"{endpoint.provider}: the server at {endpoint.shown_url} rejected the API key "
            f"(HTTP {response.status}{said}). "
            + (
                f"Check {endpoint.key_env}."
                if endpoint.key_env
                else f"Name the variable that holds its key: `apiKeyEnv` of {endpoint.provider} "
                "in evalward.yaml."
            )
        )
    return f"{endpoint.provider}: HTTP {response.status} from {endpoint.shown_url}" + (
        f": {detail}" if detail else ""
    )
