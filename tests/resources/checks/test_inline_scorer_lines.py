"""Where an inline scorer's code starts in its YAML file, whatever the scalar's style: what an
error inside it is reported at (the scorer's own line counted from there)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalward.definitions.loader import load_resources
from evalward.resources.checks.code_scorer_files import code_sources

pytestmark = pytest.mark.unit

FIXTURE = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {name: bot}
spec:
  models: [openai/gpt-test]
---
# a comment, so that the fixture does not start on its file's first lines
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {name: fx}
spec:
  targetAgent: bot
  conversation:
    maxTurns: 2
    turns:
      - user: hi
        assertions:
          - {type: code, language: python, source: "'hi' in output"}
  assertions:
    - type: code
      language: python
      source: |
        said = output.lower()
        return 'hi' in said
    - {type: code, language: javascript, source: "output.length > 0"}
    - type: code
      language: python
      source:
        "'hi' in output"
    - {type: code, file: scorers/s.py}
  scoringFunction:
    language: python
    source: >-
      all(namedScores.values())
"""


def test_each_inline_scorer_is_placed_at_the_line_its_code_starts_on(tmp_path: Path) -> None:
    (tmp_path / "scorers").mkdir()
    (tmp_path / "scorers" / "s.py").write_text("def get_assert(output, context):\n    return 1\n")
    (tmp_path / "suite.yaml").write_text(FIXTURE)
    lines = FIXTURE.splitlines()

    fixture = load_resources(tmp_path).fixtures["fx"].resource

    placed = {at: code.source_at for at, code in code_sources(fixture)}
    assert placed == {
        ("spec", "assertions", 0): ("suite.yaml", lines.index("        said = output.lower()") + 1),
        ("spec", "assertions", 1): ("suite.yaml", 25),
        ("spec", "assertions", 2): ("suite.yaml", lines.index("        \"'hi' in output\"") + 1),
        ("spec", "assertions", 3): None,  # a file's: its own lines
        ("spec", "conversation", "turns", 0, "assertions", 0): ("suite.yaml", 18),
        ("spec", "scoringFunction"): (
            "suite.yaml",
            lines.index("      all(namedScores.values())") + 1,
        ),
    }
    assert lines[24].startswith("    - {type: code, language: javascript")
    assert lines[17].startswith("          - {type: code, language: python")
