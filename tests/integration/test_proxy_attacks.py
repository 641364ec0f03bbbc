"""Hostile agents and failing upstreams against the model proxy: no secret of evalward's
reaches the agent, and every call is metered and recorded."""

from __future__ import annotations

from pathlib import Path

import anthropic

from evalward.providers.config import provider_config
from evalward.providers.registry import build_providers
from evalward.runtime.model_proxy import Grant
from fakes.model_server import ScriptedModelServer, text
from integration.test_proxy_streams import ANTHROPIC_KEY, claude, through_proxy


def test_a_gateway_password_in_the_base_url_reaches_neither_the_agent_nor_the_trace(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    model.script("order 12345", text("Shipped.", cut=True))  # no reply at all
    url = model.anthropic_url.replace("http://", "http://gateway:hunter2-gateway-pass@")
    retry = {"retry": {"attempts": 1, "baseDelaySeconds": 0}}
    providers = build_providers(
        {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": ANTHROPIC_KEY},
        config=provider_config({"providers": {"anthropic": retry}}),
        cache_root=tmp_path,
    )

    async def agent(grant: Grant) -> str:
        try:
            await claude(grant).messages.create(
                model="claude-haiku-4-5",
                max_tokens=64,
                messages=[{"role": "user", "content": "order 12345"}],
            )
        except anthropic.APIError as exc:
            return str(exc)
        return "no error"

    said, trace = through_proxy(providers, agent)
    (upstream,) = model.calls  # the gateway was reached, with its credentials
    assert upstream.headers["authorization"].startswith("Basic ")
    assert "no complete reply" in said and "127.0.0.1" in said  # the message still says where
    (call,) = trace.proxy_calls
    assert call.error is not None and "127.0.0.1" in call.error
    for shown in (said, call.error):
        assert "hunter2-gateway-pass" not in shown and "gateway:" not in shown
