"""A key of the model proxy and what it keeps (`runtime/proxy/grants.py`,
`runtime/proxy/call_record.py`): a fresh key under every variable an SDK reads, nothing sent
past loopback or to a vendor's tracing; a refused call kept in the run's trace with its own
error and not counted as a model call; calls in flight cut short once the run's time is up;
an http agent server's own key used while its runs are under way, an error of each."""

from __future__ import annotations

import asyncio
import json

import pytest

from evalward.providers.base import RunLabels
from evalward.rundata.trace import Trace
from evalward.runtime.proxy import endpoints
from evalward.runtime.proxy.call_record import Call
from evalward.runtime.proxy.grants import (
    KEY_NAMES,
    KEY_PREFIX,
    SERVER_KEY_CALLED,
    Grant,
    new_grant,
)
from evalward.runtime.proxy.wire.problems import WireProblem

pytestmark = pytest.mark.unit

URL = "http://127.0.0.1:40123"


def test_each_grant_is_a_fresh_key_under_every_name_and_stays_on_loopback() -> None:
    one = new_grant(URL, KEY_NAMES, RunLabels(agent="bot"), Trace())
    other = new_grant(URL, KEY_NAMES, RunLabels(agent="bot"), Trace())
    assert one.key != other.key
    assert one.key.startswith(KEY_PREFIX)
    assert all(one.env[name] == one.key for name in KEY_NAMES)
    assert one.env["OPENAI_BASE_URL"] == f"{URL}/v1"
    assert one.env["NO_PROXY"] == one.env["no_proxy"] == "127.0.0.1,localhost,::1"
    assert endpoints.OFFLINE.items() <= one.env.items()
    assert one.request_field() == {
        "apiKey": one.key,
        "openaiBaseUrl": f"{URL}/v1",
        "anthropicBaseUrl": URL,
        "geminiBaseUrl": URL,
    }
    assert one.observer is None  # only a bring-your-own agent's run is observed


def test_a_refused_call_is_answered_in_the_provider_s_shape_and_kept_in_the_trace() -> None:
    trace = Trace()
    grant = new_grant(URL, KEY_NAMES, RunLabels(), trace)
    call = Call(grant, "anthropic", "POST /v1/messages", started=0.0, model="anthropic/x")
    answer = call.refuse(WireProblem.budget, "the job's budget is spent")
    assert answer.status == 429
    assert answer.headers["x-should-retry"] == "false"
    assert answer.body is not None
    assert json.loads(bytes(answer.body))["error"] == {  # type: ignore[arg-type]
        "type": "rate_limit_error",
        "message": "the job's budget is spent",
    }
    (kept,) = trace.proxy_calls
    assert (kept.status, kept.error, kept.model) == (
        429,
        "the job's budget is spent",
        "anthropic/x",
    )
    assert trace.model_calls == 0  # no model saw it


def test_calls_still_in_flight_when_the_run_ends_are_cut_short() -> None:
    grant = new_grant(URL, KEY_NAMES, RunLabels(), Trace())
    outcome: list[str] = []

    async def held_call(started: asyncio.Event) -> None:
        with grant.calling():
            started.set()
            try:
                await asyncio.Event().wait()  # an upstream that never answers
            except asyncio.CancelledError:
                outcome.append("cut")
                raise

    async def run() -> None:
        started = asyncio.Event()
        task = asyncio.create_task(held_call(started))
        await started.wait()
        assert grant.calls_in_flight == 1
        await grant.end_calls(within=0)
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run())
    assert outcome == ["cut"]
    assert grant.ended
    assert grant.calls_in_flight == 0


def test_a_call_with_an_http_servers_own_key_is_an_error_of_each_of_its_runs_under_way() -> None:
    """A call made with the server's key before any run, or after a run ended, blames none;
    one made while runs are under way, or still in flight as a run begins, blames each of
    them once."""
    server = new_grant(URL, KEY_NAMES, RunLabels(agent="bot"), None)
    early, late, over = (new_grant(URL, KEY_NAMES, RunLabels(), Trace()) for _ in range(3))

    async def call(key: Grant, held: asyncio.Event | None = None) -> None:
        with key.calling():
            if held is not None:
                await held.wait()

    async def run() -> None:
        await call(server)  # at start: no run is under way
        server.serve(early)
        server.serve(late)
        await call(server)
        await call(server)
        await early.end_calls(within=0)
        await late.end_calls(within=0)
        held = asyncio.Event()
        in_flight = asyncio.create_task(call(server, held))
        await asyncio.sleep(0)
        server.serve(over)  # begins while the server's call is in flight
        held.set()
        await in_flight

    asyncio.run(run())
    for blamed in (early, late, over):
        assert blamed.trace is not None
        assert [s.content for s in blamed.trace.steps] == [SERVER_KEY_CALLED]
    assert "modelProxy" in SERVER_KEY_CALLED
