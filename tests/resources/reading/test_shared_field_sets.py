"""Loaded fixtures written alike share the sets of the fields they gave; each still says
exactly which fields its document gave, and nothing done to one changes another."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import pydantic
import pytest

from evalward.definitions.loader import load_resources
from evalward.resources.reading.shared_sets import share_field_sets

pytestmark = pytest.mark.unit

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {name: bot}
spec:
  models: [openai/gpt-test]
"""

FIXTURE = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata:
  name: {name}
spec:
  targetAgent: bot
  input:
    type: prompt
    payload: {{prompt: hi}}
  assertions:
    - {{type: contains, value: hi}}
    - {{type: regex, pattern: 'h.', {extra}}}
"""


def test_fixtures_written_alike_share_their_field_sets_and_keep_them_exact(
    tmp_path: Path,
) -> None:
    (tmp_path / "agent.yaml").write_text(AGENT)
    (tmp_path / "fixtures.yaml").write_text(
        "---\n".join(
            [
                FIXTURE.format(name="a", extra="weight: 1"),
                FIXTURE.format(name="b", extra="weight: 1"),
                FIXTURE.format(name="c", extra="severity: high"),
            ]
        )
    )
    fixtures = {name: f.resource for name, f in load_resources(tmp_path).fixtures.items()}
    a, b, c = fixtures["a"], fixtures["b"], fixtures["c"]

    assert a.spec.model_fields_set is b.spec.model_fields_set
    assert a.spec.assertions[1].model_fields_set is b.spec.assertions[1].model_fields_set
    assert a.spec.assertions[1].model_fields_set == {"type", "pattern", "weight"}
    assert c.spec.assertions[1].model_fields_set == {"type", "pattern", "severity"}
    assert a.spec.model_fields_set is c.spec.model_fields_set

    copied = a.spec.model_copy(update={"severity": "high"})
    assert "severity" in copied.model_fields_set
    assert "severity" not in b.spec.model_fields_set
    with pytest.raises(pydantic.ValidationError):
        b.spec.target_agent = "other"  # type: ignore[misc]
    assert b.spec.model_fields_set == {"target_agent", "input", "assertions"}


class _Leaf(pydantic.BaseModel, frozen=True):
    a: int = 0
    b: int = 0


class _Kind(StrEnum):
    one = "one"


class _Holder(pydantic.BaseModel, frozen=True):
    kind: _Kind
    where: Path
    by_name: dict[str, _Leaf]
    pair: tuple[_Leaf, ...]


def test_models_under_dict_values_and_tuples_share_their_sets_past_other_values() -> None:
    """The walk passes over values that hold no model (an enum's, a path) and still reaches
    every model in a dict's values and a tuple, however often it has met those types."""
    made = [
        share_field_sets(
            _Holder(kind="one", where=Path("x"), by_name={"p": _Leaf(a=n)}, pair=(_Leaf(b=n),))
        )
        for n in range(3)
    ]
    first, *rest = made
    for other in rest:
        assert other.by_name["p"].model_fields_set is first.by_name["p"].model_fields_set
        assert other.pair[0].model_fields_set is first.pair[0].model_fields_set
        assert other.model_fields_set is first.model_fields_set
    assert first.by_name["p"].model_fields_set == {"a"}
    assert first.pair[0].model_fields_set == {"b"}
