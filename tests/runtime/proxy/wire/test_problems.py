"""Errors the model proxy answers itself (`runtime/proxy/wire/problems.py`), in each API's
own shape (held to the official SDKs' published types by fakes/wire_contract.py), so the
agent's SDK raises its usual exception carrying evalward's message."""

from __future__ import annotations

import json

import pytest
from openai.types.responses import ResponseErrorEvent

from evalward.runtime.proxy.wire.base import Kind
from evalward.runtime.proxy.wire.problems import WireProblem, error_body, error_event
from fakes.wire_contract import anthropic_event_problem, chat_chunk_problem

pytestmark = pytest.mark.unit

STATUSES = {
    WireProblem.bad_request: 400,
    WireProblem.unauthorized: 401,
    WireProblem.not_found: 404,
    WireProblem.too_large: 413,
    WireProblem.budget: 429,
    WireProblem.upstream: 502,
}


@pytest.mark.parametrize("problem", list(WireProblem))
def test_each_problem_is_an_error_each_sdk_reads(problem: WireProblem) -> None:
    assert problem.value.status == STATUSES[problem]
    openai_body = error_body("openai", problem, "over the job's budget")
    assert chat_chunk_problem(openai_body) is None
    assert openai_body["error"]["message"] == "over the job's budget"
    assert openai_body["error"]["type"] == problem.value.openai_type
    assert openai_body["error"]["code"] == problem.value.openai_code
    anthropic_body = error_body("anthropic", problem, "no such route")
    if problem is not WireProblem.too_large:  # Anthropic's documented 413 type; the SDK's
        # types do not list it, and its client raises by the status alone
        assert anthropic_event_problem("error", anthropic_body) is None
    assert anthropic_body["error"] == {
        "type": problem.value.anthropic_type,
        "message": "no such route",
    }


def test_a_spent_budget_is_a_quota_error_not_one_to_retry_at_once() -> None:
    body = error_body("openai", WireProblem.budget, "spent")
    assert body["error"]["code"] == "insufficient_quota"
    assert error_body("anthropic", WireProblem.budget, "spent")["error"]["type"] == (
        "rate_limit_error"
    )


def _event(raw: bytes) -> tuple[str | None, dict[str, object]]:
    assert raw.endswith(b"\n\n")
    lines = raw.decode().strip().split("\n")
    event = lines[0].removeprefix("event: ") if lines[0].startswith("event: ") else None
    return event, json.loads(lines[-1].removeprefix("data: "))


def test_a_stream_s_error_is_said_as_each_api_s_stream_says_it() -> None:
    event, data = _event(error_event(Kind.messages, "cut"))
    assert anthropic_event_problem(event, data) is None
    assert data == {"type": "error", "error": {"type": "api_error", "message": "cut"}}
    event, data = _event(error_event(Kind.responses, "cut", 7))
    assert event == "error"
    expected = {"type": "error", "code": "server_error", "message": "cut", "param": None}
    assert data == {**expected, "sequence_number": 7}
    # the openai SDK's own type of the event takes it as it is
    assert ResponseErrorEvent.model_validate(data).sequence_number == 7
    event, data = _event(error_event(Kind.chat, "cut"))
    assert event is None  # Chat Completions' stream names no events
    assert chat_chunk_problem(data) is None
    assert data["error"] == {"message": "cut", "type": "server_error", "param": None, "code": None}
