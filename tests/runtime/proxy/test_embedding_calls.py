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
from evalward.runtime.proxy.embedding_calls import Embedded, embed
from fakes.model_server import ScriptedModelServer
from runtime.proxy.test_proxy_streams import providers_for

pytestmark = pytest.mark.integration


def _embed(providers: Providers, model_id: str, texts: list[str]) -> Embedded:
    async def run() -> Embedded:
        try:
            return await embed(providers, model_id, texts, 0)
        finally:
            await providers.aclose()

    return asyncio.run(run())


def test_texts_are_embedded_in_one_call_and_kept_for_the_next(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    first = _embed(
        providers_for(model, tmp_path, "read-write"),
        "openai/text-embedding-3-small",
        ["refund", "shipped", "refund"],
    )
    assert len(first.vectors) == 3
    assert len({len(v) for v in first.vectors}) == 1
    assert first.vectors[0] == first.vectors[2]  # the scripted server's: equal texts, equal
    assert first.vectors[0] != first.vectors[1]
    assert first.usage.input_tokens > 0 and not first.cached
    calls = len([r for r in model.requests if "input" in r])
    assert calls == 1
    again = _embed(
        providers_for(model, tmp_path, "read-write"),
        "openai/text-embedding-3-small",
        ["refund", "shipped", "refund"],
    )
    assert again.cached and again.vectors == first.vectors
    assert len([r for r in model.requests if "input" in r]) == calls


def test_a_mock_script_answers_equal_texts_with_equal_vectors(tmp_path: Path) -> None:
    script = tmp_path / "mock.yaml"
    script.write_text("replies: []\n", encoding="utf-8")
    found = _embed(
        build_providers({}, mock_script=str(script)),
        "openai/text-embedding-3-small",
        ["a", "b", "a"],
    )
    assert found.vectors[0] == found.vectors[2] != found.vectors[1]
    assert found.usage.cost_usd is not None  # priced as the named provider's would be


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
