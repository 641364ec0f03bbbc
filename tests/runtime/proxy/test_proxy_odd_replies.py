"""The proxy's call (`runtime.proxy_calls`) given replies a provider should not send: a success
whose body is not a JSON object, and an error page that is not JSON and quotes evalward's key.
The agent gets an error in its own API's shape, the trace records it, no key reaches either."""

from __future__ import annotations

from pathlib import Path

import anthropic
import openai
import pytest

from evalward.runtime.proxy.model_proxy import Grant
from fakes.model_server import Reply, ScriptedModelServer, shaped
from runtime.proxy.test_proxy_streams import (
    ANTHROPIC_KEY,
    OPENAI_KEY,
    claude,
    gpt,
    providers_for,
    through_proxy,
)

pytestmark = pytest.mark.integration


async def ask_gpt(grant: Grant) -> openai.APIStatusError:
    with pytest.raises(openai.APIStatusError) as failed:
        await gpt(grant).chat.completions.create(
            model="gpt-4.1-mini", messages=[{"role": "user", "content": "odd reply"}]
        )
    return failed.value


async def ask_claude(grant: Grant) -> anthropic.APIStatusError:
    with pytest.raises(anthropic.APIStatusError) as failed:
        await claude(grant).messages.create(
            model="claude-haiku-4-5",
            max_tokens=50,
            messages=[{"role": "user", "content": "odd reply"}],
        )
    return failed.value


def test_a_success_that_is_not_a_json_object_is_a_502_in_the_agents_api(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    model.script("odd reply", shaped(["not", "an", "object"]))

    refused, trace = through_proxy(providers_for(model, tmp_path), ask_gpt)

    assert refused.status_code == 502
    assert "not a JSON object" in refused.message
    (call,) = trace.proxy_calls
    assert call.status == 502
    assert call.error is not None and "not a JSON object" in call.error


def test_an_error_page_quoting_the_key_is_passed_on_redacted_in_the_agents_api(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    page = f"<html>bad gateway; request had {ANTHROPIC_KEY}</html>".encode()
    model.script("odd reply", Reply(status=418, raw=page, headers={"content-type": "text/html"}))

    refused, trace = through_proxy(providers_for(model, tmp_path), ask_claude)

    assert refused.status_code == 418
    assert isinstance(refused.body, dict)
    assert refused.body["type"] == "error"  # Anthropic's error shape, though the page was HTML
    assert "bad gateway" in refused.message
    (call,) = trace.proxy_calls
    assert call.status == 418
    for seen in (str(refused.body), refused.message, call.error or ""):
        assert ANTHROPIC_KEY not in seen
        assert OPENAI_KEY not in seen
