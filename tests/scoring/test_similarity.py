"""`similar` decides as promptfoo's does: cosine, dot and euclidean with their thresholds, the
negation, and a list of expected texts (any one passes; negated, every one must)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from evalward.providers.registry import build_providers
from evalward.resources.checks.assertions import SimilarAssertion
from evalward.rundata.results import Status
from evalward.scoring.similarity import _one, check_similar

pytestmark = pytest.mark.unit


def similar(**fields: object) -> SimilarAssertion:
    return SimilarAssertion.model_validate({"type": "similar", **fields})


@pytest.mark.parametrize(
    ("fields", "output", "status", "score"),
    [
        # the mock's embeddings: equal texts, equal unit vectors; others nearly orthogonal
        ({"value": "ahoy"}, "ahoy", Status.passed, 1.0),
        ({"value": "ahoy"}, "farewell", Status.failed, None),
        ({"value": "ahoy", "negate": True}, "farewell", Status.passed, None),
        ({"value": "ahoy", "negate": True}, "ahoy", Status.failed, 0.0),
        ({"value": "ahoy", "metric": "dot"}, "ahoy", Status.passed, 1.0),
        # euclidean: a distance, at most the threshold; its score 1 / (1 + distance)
        ({"value": "ahoy", "metric": "euclidean"}, "ahoy", Status.passed, 1.0),
        (
            {"value": "ahoy", "metric": "euclidean", "threshold": 0.5},
            "farewell",
            Status.failed,
            None,
        ),
        ({"value": ["farewell", "ahoy"]}, "ahoy", Status.passed, 1.0),
        ({"value": ["farewell", "ahoy"], "negate": True}, "ahoy", Status.failed, 0.0),
    ],
)
def test_similarity_decides_as_promptfoo_does(
    tmp_path: Path, fields: dict[str, object], output: str, status: Status, score: float | None
) -> None:
    script = tmp_path / "mock.yaml"
    script.write_text("replies: []\n")
    providers = build_providers({}, mock_script=str(script))

    found = asyncio.run(check_similar(similar(**fields), output, providers, 0))

    assert found.status is status, found.message
    if score is not None:
        assert found.score == pytest.approx(score)
    assert providers.spent.calls_by == {"judge": 1}  # one embeddings call, a grading one


def test_an_embedding_model_of_a_provider_without_embeddings_is_an_error(tmp_path: Path) -> None:
    providers = build_providers({"ANTHROPIC_API_KEY": "k" * 20})
    assertion = similar(value="ahoy", model="anthropic/claude-sonnet-4-5")

    found = asyncio.run(check_similar(assertion, "ahoy", providers, 0))

    assert found.status is Status.error
    assert "does not serve OpenAI's embeddings API" in found.message


def test_a_similarity_just_below_its_threshold_is_never_written_at_it() -> None:
    found = [0.796, (1 - 0.796**2) ** 0.5]  # a unit vector at cosine 0.796 from [1, 0]
    passed, _, said = _one(similar(value="x", threshold=0.8), found, [1.0, 0.0])
    assert not passed and said == "similarity 0.796 < threshold 0.8"
    passed, _, said = _one(similar(value="x", metric="euclidean", threshold=0.5), [0.504], [0.0])
    assert not passed and said == "distance 0.504 > threshold 0.5"
