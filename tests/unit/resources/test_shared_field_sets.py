"""Loaded fixtures written alike share the sets of the fields they gave; each still says
exactly which fields its document gave, and nothing done to one changes another."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest

from evalward.resources import load_resources

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
