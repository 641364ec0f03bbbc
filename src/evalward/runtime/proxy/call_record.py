"""One request of an agent to the model proxy, as its run's trace shows it, and the answers
the proxy writes itself (its own errors in each provider's shape)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from evalward.http.client import encode_json
from evalward.rundata.trace import ModelCall, Usage
from evalward.runtime.proxy.grants import Grant
from evalward.runtime.proxy.wire.base import Api
from evalward.runtime.proxy.wire.problems import WireProblem, error_body
from evalward.text.cuts import cap_chars

if TYPE_CHECKING:
    from aiohttp import web

NO_RETRY = {"x-should-retry": "false"}
"""The official SDKs obey it: the proxy has retried already, or retrying cannot help."""
FREE = Usage(cost_usd=0.0)
"""What a model list costs: nothing, known."""
STREAM_HEADERS = {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"}
MAX_REFUSALS_KEPT = 100
"""Requests the proxy refused that a run's trace keeps a record of; the rest are counted
on one record after them. A refusal costs an agent nothing, so neither the budget nor the
run's share of calls bounds them as it bounds answered calls (an agent sent 3,000 refused
requests of a 7,000-character path in 2 s, each kept whole). The first refusals are the
ones that say why an agent failed, and 100 of them, each bounded below, are at most about
140 kB of a run's record."""
ENDPOINT_CHARS = 200
"""Characters of a request's method and path its record keeps: the routes served are
shorter than 40, and a path of 8 kB is the agent's bytes, not evalward's to keep."""
REFUSAL_CHARS = 1_000
"""Characters of a refusal's message its record keeps: evalward's own messages are shorter,
and one that quotes what the agent sent is cut."""


def answer_json(
    status: int, data: object, headers: Mapping[str, str] | None = None
) -> web.Response:
    from aiohttp import web

    return web.Response(
        status=status, body=encode_json(data), content_type="application/json", headers=headers
    )


def clipped(text: str, limit: int) -> str:
    """`text`, cut to `limit` characters and an ellipsis when it is longer, its secrets
    hidden before the cut (`cap_chars`)."""
    return cap_chars(text, limit + 1)


def problem(api: Api, kind: WireProblem, message: str) -> web.Response:
    """An error the proxy answers itself, in the provider's error shape."""
    return answer_json(kind.value.status, error_body(api, kind, message), NO_RETRY)


@dataclass
class Call:
    """One request of an agent, as its run's trace will show it."""

    grant: Grant
    api: Api
    endpoint: str
    started: float
    clock: float = field(default_factory=time.monotonic)
    model: str = ""
    streamed: bool = False
    charged: Usage | None = None
    """What a call cut before its reply is counted at (the most it could cost, which it held
    while in flight): recorded with it as the run ends."""

    def record(
        self,
        status: int,
        usage: Usage | None = None,
        *,
        cached: bool = False,
        error: str | None = None,
        made: bool = True,
    ) -> ModelCall | None:
        """Add the call to the run's trace; `made` is False for a request refused before
        any model saw it (it is not one of the run's model calls)."""
        trace = self.grant.trace
        if trace is None:
            return None
        entry = ModelCall(
            api=self.api,
            model=self.model or f"{self.api}/",
            status=status,
            endpoint=self.endpoint,
            streamed=self.streamed,
            usage=usage,
            started_at=self.started,
            duration_ms=self.elapsed_ms(),
            cached=cached,
            error=error,
            after_step=len(trace.steps),
        )
        trace.proxy_calls.append(entry)
        trace.model_calls += made
        trace.cache_hits += cached
        return entry

    def elapsed_ms(self) -> float:
        return (time.monotonic() - self.clock) * 1000

    def refuse(self, kind: WireProblem, message: str) -> web.Response:
        """Answer with the proxy's own error, and keep it in the trace: a refused call is
        why many an agent fails, and its message is the one to read. A run keeps the first
        MAX_REFUSALS_KEPT; the rest are counted on one record after them."""
        grant = self.grant
        grant.refusals += 1
        if grant.refusals <= MAX_REFUSALS_KEPT:
            self.record(kind.value.status, error=clipped(message, REFUSAL_CHARS), made=False)
        else:
            self._count_unkept(kind)
        return problem(self.api, kind, message)

    def _count_unkept(self, kind: WireProblem) -> None:
        """One more refusal past MAX_REFUSALS_KEPT, counted on the record that stands for
        them all (made with the first of them, where it came in the run)."""
        note = self.grant.unkept_refusals
        if note is None:
            note = self.record(kind.value.status, made=False)
            if note is None:
                return
            note.model, note.endpoint = f"{self.api}/", ""
            self.grant.unkept_refusals = note
        unkept = self.grant.refusals - MAX_REFUSALS_KEPT
        note.error = (
            f"{unkept:,} more refused request{'s were' if unkept > 1 else ' was'} not kept: "
            f"a run keeps the first {MAX_REFUSALS_KEPT} the proxy refused"
        )


def uncancel() -> None:
    """Take back the cancellation `Grant.end_calls` sent this task, once it has been handled:
    the server goes on to send the reply."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
