"""A broken assertion is a configuration error with its location, before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError

from evalward.definitions.loader import load_resources
from evalward.errors import ResourceError
from evalward.resources.checks.assertions import Assertion

pytestmark = pytest.mark.integration

FIXTURE = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: f }}
spec:
  targetAgent: bot
  input: {{ type: prompt, payload: {{ prompt: hi }} }}
  assertions:
    - {{ type: contains, value: ok }}
    - {assertion}
"""


@pytest.mark.parametrize(
    ("assertion", "says"),
    [
        ('{ type: regex, pattern: "(unclosed" }', "invalid regular expression"),
        (
            "{ type: jsonSchema, schema: { type: objekt } }",
            "invalid JSON Schema at type: 'objekt' is not valid",
        ),
        (
            "{ type: trajectory, tools: [a], mode: sorted }",
            "expected one of: strict, unordered, subset, superset; found 'sorted'",
        ),
        (
            "{ type: toolArgs, tool: t, args: {}, mode: fuzzy }",
            "expected one of: partial, exact; found 'fuzzy'",
        ),
        ("{ type: maxSteps, max: -1 }", "greater than or equal to 0"),
        ("{ type: latency, maxMs: 10, scope: turn }", "expected one of: run, step; found 'turn'"),
        ("{ type: equals }", "missing required field 'value'"),
        (
            "{ type: fileState, path: a.json, contains: x, equalsJson: {} }",
            "needs exactly one of `exists`, `contains`, `equalsJson`; it has 2",
        ),
    ],
)
def test_invalid_assertions_are_located(tmp_path: Path, assertion: str, says: str) -> None:
    (tmp_path / "fixture.yaml").write_text(FIXTURE.format(assertion=assertion))
    with pytest.raises(ResourceError) as caught:
        load_resources(tmp_path)
    [problem] = caught.value.problems
    assert problem.file == "fixture.yaml"
    assert problem.line == 9
    assert problem.path.startswith("spec.assertions[1]")
    assert says in problem.message


@pytest.mark.parametrize(
    ("fields", "refused"),
    [
        ({"threshold": -2}, True),
        ({"threshold": -1}, True),
        ({"threshold": 2, "negate": True}, True),
        ({"threshold": -0.5, "metric": "euclidean"}, True),
        ({"threshold": 1}, False),
        ({"threshold": 1, "negate": True}, True),
        ({"threshold": 0.2, "metric": "dot"}, False),
        ({"threshold": 5, "metric": "dot"}, False),  # a dot product has no bounds
        ({"threshold": -3, "metric": "dot", "negate": True}, False),
        ({"threshold": -1, "negate": True}, False),  # passes an opposite text alone
        ({"threshold": 1.4, "metric": "euclidean"}, False),
    ],
)
def test_a_similarity_threshold_no_similarity_can_cross_is_refused(
    fields: dict[str, object], refused: bool
) -> None:
    """`threshold: -2` passed every run (a cosine is at least -1), and `threshold: 1` with
    `negate` did too; a dot product of vectors not of length 1 may be anything."""
    written = {"type": "similar", "value": "refunded", **fields}
    if not refused:
        TypeAdapter(Assertion).validate_python(written)
        return
    with pytest.raises(ValidationError, match="so the check would decide nothing"):
        TypeAdapter(Assertion).validate_python(written)
