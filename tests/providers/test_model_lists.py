"""Each provider's own model list (`providers/model_lists.py`), asked of a real server on
loopback: the ids listed, in OpenAI's and Anthropic's shapes, and for each provider that gave
none, why (no such route, an answer that is no list, nothing to ask)."""

from __future__ import annotations

import asyncio

import pytest

from evalward.providers.config import provider_config
from evalward.providers.model_lists import ModelLists, ask_providers
from evalward.providers.registry import build_providers
from fakes.model_server import ScriptedModelServer
from support.rawhttp import RawServer

pytestmark = pytest.mark.unit

NOT_A_LIST = (
    b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 14\r\n\r\n{"models": []}'
)


def asked(settings: dict[str, object], names: list[str], env: dict[str, str]) -> ModelLists:
    async def go() -> ModelLists:
        providers = build_providers(env, config=provider_config({"providers": settings}))
        try:
            return await ask_providers(providers, names)
        finally:
            await providers.aclose()

    return asyncio.run(go())


def test_both_vendors_shapes_give_the_ids_listed(model: ScriptedModelServer) -> None:
    model.models = ["llama3.2:3b", "qwen2.5:7b"]
    found = asked(
        {
            "ollama": {"api": "openai", "baseUrl": model.base_url},
            "anthropic": {"baseUrl": model.anthropic_url},
        },
        ["ollama", "anthropic", "ollama"],
        {"ANTHROPIC_API_KEY": "sk-ant-test"},
    )
    assert found.unanswered == {}
    assert found.listed == {
        "ollama": frozenset({"llama3.2:3b", "qwen2.5:7b"}),
        "anthropic": frozenset({"llama3.2:3b", "qwen2.5:7b"}),
    }
    # once each, asking for every model on one page
    assert sorted(model.targets) == ["GET /v1/models?limit=1000"] * 2


def test_a_provider_that_lists_nothing_is_said_so_with_why() -> None:
    server = RawServer(replies=(NOT_A_LIST,))
    try:
        found = asked(
            {
                "gateway": {"api": "openai", "baseUrl": f"{server.url}/v1"},
                "closed": {
                    "api": "openai",
                    "baseUrl": "http://127.0.0.1:9/v1",
                    "retry": {"attempts": 1},  # refused at once: no backoff to wait out
                },
            },
            ["gateway", "closed", "mock", "nowhere"],
            {},
        )
    finally:
        server.close()
    assert found.listed == {}
    assert found.unanswered["gateway"] == "HTTP 200: not a list of models"
    assert found.unanswered["mock"] == found.unanswered["nowhere"] == "it cannot be asked"
    assert found.unanswered["closed"]  # refused on a port nothing listens on: its own words
