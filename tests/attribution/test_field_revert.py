"""`attribution.field_revert.revert_fields`: the head's agent YAML with some fields set back to
the base's, changed only where those fields are: comments and the other fields' lines kept,
a field the base lacks removed, one only the base has put back in the base's order, one
tool taken back by name."""

from __future__ import annotations

import pytest

from evalward.attribution.field_revert import revert_fields
from evalward.attribution.fields import AgentYaml, plain, read_agent_yaml, round_trip

pytestmark = pytest.mark.unit

BASE = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: support }
spec:
  models: [openai/gpt-test]
  system: Help politely.
  temperature: 0.2
  tools:
    - name: lookup
      description: Look an order up.
    - name: refund
      description: Refund an order.
"""

HEAD = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: support }
spec:
  # the model the team chose
  models: [openai/gpt-test-large]
  system: |
    Help politely,
    and quickly.
  maxTurns: 4
  tools:
    - name: lookup
      description: Look an order up, fast.
    - name: refund
      description: Refund an order.
"""


def agent(text: str) -> AgentYaml:
    found = read_agent_yaml(text, "support")
    assert found is not None
    return found


def spec_of(text: str) -> object:
    (document,) = round_trip().load_all(text)
    return plain(document)["spec"]


def test_a_field_is_set_back_where_it_is_and_nothing_else_moves() -> None:
    reverted = revert_fields(agent(BASE), agent(HEAD), [("spec", "system")])

    assert "  system: Help politely.\n" in reverted
    assert "and quickly" not in reverted
    assert "  # the model the team chose\n  models: [openai/gpt-test-large]\n" in reverted
    assert reverted.replace("  system: Help politely.\n", "") == HEAD.replace(
        "  system: |\n    Help politely,\n    and quickly.\n", ""
    )


def test_a_field_the_base_lacks_is_removed_and_one_only_it_has_put_back_in_its_order() -> None:
    reverted = revert_fields(
        agent(BASE), agent(HEAD), [("spec", "maxTurns"), ("spec", "temperature")]
    )

    spec = spec_of(reverted)
    assert isinstance(spec, dict)
    assert "maxTurns" not in spec and spec["temperature"] == 0.2
    assert list(spec) == ["models", "system", "temperature", "tools"]
    assert "# the model the team chose" in reverted


def test_one_tool_is_taken_back_by_name() -> None:
    reverted = revert_fields(agent(BASE), agent(HEAD), [("spec", "tools", "[lookup]")])

    spec = spec_of(reverted)
    assert isinstance(spec, dict)
    assert spec["tools"][0] == {"name": "lookup", "description": "Look an order up."}
    assert spec["models"] == ["openai/gpt-test-large"]


def test_reverting_every_changed_field_reads_as_the_base() -> None:
    paths = [("spec", f) for f in ("models", "system", "maxTurns", "temperature", "tools")]

    reverted = revert_fields(agent(BASE), agent(HEAD), paths)

    assert spec_of(reverted) == spec_of(BASE)
