"""What a load makes is handed to the cyclic collector's oldest generation unscanned: left
in the youngest, the first pass after a 20,000-fixture load scanned all of it at once (0.3 s
of a plan, docs/benchmarks.md P2)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from evalward.definitions.loader import load_resources

pytestmark = pytest.mark.unit

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: bot }
spec:
  models: [openai/gpt-test]
"""
FIXTURE = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: f{n} }}
spec:
  targetAgent: bot
  input: {{ type: prompt, payload: {{ prompt: "question {n}" }} }}
  assertions: [{{ type: contains, value: answer }}]
"""


def test_a_load_leaves_what_it_made_in_the_oldest_generation(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(AGENT)
    (tmp_path / "fixtures.yaml").write_text("---\n".join(FIXTURE.format(n=n) for n in range(200)))

    enabled = gc.isenabled()

    loaded = load_resources(tmp_path)

    # in the oldest generation, or frozen where the process keeps objects frozen already
    young = {id(o) for generation in (0, 1) for o in gc.get_objects(generation=generation)}
    fixtures = [f.resource for f in loaded.fixtures.values()]
    assert len(fixtures) == 200
    assert not any(id(f) in young or id(f.spec) in young for f in fixtures)
    assert gc.isenabled() == enabled
