"""evalward's own embeddings calls (`runtime/proxy/embedding_calls.py`) against the scripted
model server: one call for all the texts, vectors in the texts' order, metered as grading and
kept in the response cache (a second call is served from it); under a mock script, equal texts
get equal vectors; a provider without OpenAI's embeddings API is refused by name."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from evalward.errors import EmbeddingError
from evalward.providers.registry import Providers, build_providers
from evalward.runtime.proxy.embedding_calls import embed
from fakes.model_server import ScriptedModelServer
from runtime.proxy.test_proxy_streams import providers_for

pytestmark = pytest.mark.integration


def _embed(providers: Providers, model_id: str, texts: list[str]) -> list[list[float]]:
    async def run() -> list[list[float]]:
        try:
            return await embed(providers, model_id, texts, 0)
        finally:
            await providers.aclose()

    return asyncio.run(run())


def test_texts_are_embedded_in_one_call_and_kept_for_the_next(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    providers = providers_for(model, tmp_path, "read-write")
    first = _embed(providers, "openai/text-embedding-3-small", ["refund", "shipped", "refund"])
    assert len(first) == 3
    assert len({len(v) for v in first}) == 1
    assert first[0] == first[2]  # the scripted server's: equal texts, equal vectors
    assert first[0] != first[1]
    assert providers.spent.calls_by == {"judge": 1} and providers.spent.tokens > 0
    calls = len([r for r in model.requests if "input" in r])
    assert calls == 1
    providers = providers_for(model, tmp_path, "read-write")
    again = _embed(providers, "openai/text-embedding-3-small", ["refund", "shipped", "refund"])
    assert again == first and providers.spent.calls == 0  # from the cache: counted nowhere
    assert len([r for r in model.requests if "input" in r]) == calls


def test_a_mock_script_answers_equal_texts_with_equal_vectors(tmp_path: Path) -> None:
    script = tmp_path / "mock.yaml"
    script.write_text("replies: []\n", encoding="utf-8")
    providers = build_providers({}, mock_script=str(script))
    found = _embed(providers, "openai/text-embedding-3-small", ["a", "b", "a"])
    assert found[0] == found[2] != found[1]
    assert providers.spent.calls_by == {"judge": 1}
    assert providers.spent.unpriced == 0  # priced as the named provider's would be


def test_a_provider_without_openai_s_embeddings_is_refused_by_name() -> None:
    with pytest.raises(EmbeddingError, match="does not serve OpenAI's embeddings API"):
        _embed(
            build_providers({"ANTHROPIC_API_KEY": "k" * 20}), "anthropic/claude-3-5-haiku", ["x"]
        )
    with pytest.raises(EmbeddingError):
        _embed(build_providers({}), "nowhere/model", ["x"])


def test_an_embeddings_call_past_the_providers_ceiling_is_refused_as_unavailable(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    """Attribution's hard cap holds evalward's own grading calls too: with no call left, the
    embeddings are not asked for, and the assertion's error says it was the budget, an
    outage of evalward's making that says nothing of the agent."""
    providers = providers_for(model, tmp_path, "off")
    with providers.ceiling.held_to(0), pytest.raises(EmbeddingError) as raised:
        _embed(providers, "openai/text-embedding-3-small", ["refund"])

    assert "attribution's budget is spent" in str(raised.value)
    assert raised.value.unavailable
    assert not [r for r in model.requests if "input" in r]
