"""A provider's refusal as the proxy passes it on (`runtime.proxy_forward.upstream_error`):
its status and body as they came, secrets struck out; a success that is no JSON object as the
proxy's own upstream error; and a rejected key as evalward's to fix, never quoting the key."""

from __future__ import annotations

import json
import time

import pytest
from aiohttp import web

from evalward.http.client import Reply
from evalward.providers.base import RunLabels
from evalward.providers.retry import Answer, server_message
from evalward.rundata.trace import Trace
from evalward.runtime.proxy.call_record import Call
from evalward.runtime.proxy.grants import Grant
from evalward.runtime.proxy.proxy_forward import upstream_error
from evalward.runtime.proxy.wire.base import Api
from evalward.security import Redactor
from evalward.text.cuts import hide_before_cuts

pytestmark = pytest.mark.unit

KEY = "sk-upstream-secret-0123456789abcdef"


def refused(api: Api, status: int, body: bytes) -> tuple[web.Response, Trace]:
    trace = Trace()
    call = Call(Grant("k", RunLabels(agent="a"), trace, {}), api, "POST /v1/x", time.time())
    answer = Answer(Reply(status, {}, body), None, None)
    return upstream_error(call, answer, Redactor([KEY])), trace


def body_of(response: web.Response) -> object:
    assert isinstance(response.body, bytes)
    return json.loads(response.body)


def test_a_refusal_is_passed_on_as_it_came_with_secrets_struck_out() -> None:
    sent = {"error": {"message": f"slow down, {KEY}", "type": "rate_limit"}}
    response, trace = refused("openai", 429, json.dumps(sent).encode())

    assert response.status == 429
    assert response.headers["x-should-retry"] == "false"  # the proxy has retried already
    passed = json.dumps(body_of(response))
    assert "rate_limit" in passed and KEY not in passed
    (call,) = trace.proxy_calls
    assert call.status == 429 and (call.error or "").startswith("HTTP 429: ")
    assert KEY not in (call.error or "")


def test_a_refusal_that_is_not_json_is_said_in_the_providers_error_shape() -> None:
    response, _ = refused("anthropic", 503, b"<html>bad gateway</html>")

    assert response.status == 503
    body = body_of(response)
    assert isinstance(body, dict) and body["type"] == "error"
    assert "anthropic answered HTTP 503: <html>bad gateway</html>" in json.dumps(body)


def test_a_success_that_is_no_json_object_is_the_proxys_upstream_error() -> None:
    response, trace = refused("openai", 200, b"[1, 2]")

    assert response.status == 502
    assert "not a JSON object" in json.dumps(body_of(response))
    assert trace.proxy_calls[0].status == 502


@pytest.mark.parametrize("status", [401, 403])
def test_a_rejected_key_is_evalwards_to_fix_and_never_quoted(status: int) -> None:
    response, trace = refused("openai", status, f'{{"error": "bad key {KEY[:12]}"}}'.encode())

    assert response.status == 401
    said = json.dumps(body_of(response))
    assert "rejected evalward's key" in said and KEY[:12] not in said
    assert "needs fixing, not the agent's" in (trace.proxy_calls[0].error or "")


def test_a_secret_the_cut_of_a_providers_message_falls_in_is_redacted() -> None:
    """A provider's message is cut at 300 characters where it is shown (the proxy's record of
    the call, evalward's own refusal): a key it quotes across that cut would be shown in part,
    which no form of the key matches. The process's secrets are hidden before the cut."""
    other = "sk-proj-Z9y8X7w6V5u4T3s2R1q0"
    said = "x" * 280 + other + " and more"
    body = json.dumps({"error": {"message": said}}).encode()
    hide_before_cuts(Redactor([other]))
    try:
        message = server_message(Reply(400, {}, body), {})
    finally:
        hide_before_cuts(str)

    assert message == "x" * 280 + "*** and more"
