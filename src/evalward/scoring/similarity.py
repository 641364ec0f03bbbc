"""The `similar` assertion: how close the final message is in meaning to the expected text,
by the embeddings of both (promptfoo's `similar`, `similar:dot`, `similar:euclidean`).

The embeddings come from the assertion's `model` through evalward's own metered, cached
embeddings calls (runtime/proxy/embedding_calls.py), one call for the output and every expected
text. The numbers are promptfoo's, as docs/assertions.md gives them. A score outside [0, 1]
(a negative cosine) counts as its nearest end.
"""

from __future__ import annotations

import math

from evalward.errors import EmbeddingError
from evalward.providers.registry import Providers
from evalward.resources.checks.assertions import SimilarAssertion, SimilarityMetric
from evalward.rundata.results import Status
from evalward.runtime.proxy.embedding_calls import embed
from evalward.scoring.judges.panel import JudgeOutcome
from evalward.text.numbers import side_text

EPSILON = 2.220446049250313e-16
"""JavaScript's Number.EPSILON: promptfoo's tolerance at the threshold."""


async def check_similar(
    assertion: SimilarAssertion, output: str, providers: Providers | None, rep: int
) -> JudgeOutcome:
    """`assertion` on `output`: its verdict, score and why; an error when no embeddings came."""
    if providers is None:
        return JudgeOutcome(Status.error, 0.0, "embeddings are not computed here")
    values = assertion.values
    try:
        found, *expected = await embed(providers, assertion.model, [output, *values], rep)
    except EmbeddingError as exc:
        return JudgeOutcome(Status.error, 0.0, str(exc), unavailable=exc.unavailable)
    results = [_one(assertion, found, vector) for vector in expected]
    if assertion.negate:
        chosen = next((r for r in results if not r[0]), min(results, key=lambda r: r[1]))
    else:
        chosen = next((r for r in results if r[0]), max(results, key=lambda r: r[1]))
    passed, score, said = chosen
    if len(values) > 1 and not assertion.negate and not passed:
        said = f"none of the {len(values)} texts is similar enough (the closest: {said})"
    clamped = min(1.0, max(0.0, score))
    return JudgeOutcome(Status.passed if passed else Status.failed, clamped, said)


def _one(
    assertion: SimilarAssertion, found: list[float], expected: list[float]
) -> tuple[bool, float, str]:
    """promptfoo's verdict, score and reason for one expected text."""
    threshold, negate = assertion.threshold, assertion.negate
    if len(found) != len(expected):
        return False, 0.0, "the embeddings have different lengths"
    if assertion.metric is SimilarityMetric.euclidean:
        distance = math.dist(found, expected)
        near = distance <= threshold + EPSILON
        passed = distance >= threshold - EPSILON if negate else near
        score = 1 / (1 + distance)
        shown = side_text(distance, threshold, ".2f")
        said = f"distance {shown} {'≤' if near else '>'} threshold {threshold:g}"
    else:
        score = sum(a * b for a, b in zip(found, expected, strict=True))  # dot
        if assertion.metric is SimilarityMetric.cosine:
            norms = math.sqrt(sum(a * a for a in found)) * math.sqrt(sum(b * b for b in expected))
            score = score / norms if norms else 0.0
        high = score >= threshold - EPSILON
        passed = score <= threshold + EPSILON if negate else high
        shown = side_text(score, threshold, ".2f")
        said = f"similarity {shown} {'≥' if high else '<'} threshold {threshold:g}"
    return passed, 1 - score if negate else score, said
