"""The estimate of a run (`stages.estimate`): what an agent's kind lets it foresee of its
model calls, from real definitions on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalward.definitions.loader import load_resources
from evalward.plan.estimate import REPLY_TOKENS, estimate_run
from evalward.plan.plan import PlannedRun
from evalward.providers.pricing import PriceTable
from evalward.rundata.sides import Side
from evalward.rundata.spending import Estimate

pytestmark = pytest.mark.unit

DECLARATIVE = "models: [openai/gpt-4.1-mini]"
COMMAND = "runtime: { command: [python3, agent.py] }"
DEFINITIONS = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: bot }
spec:
  %s
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: bot-eval }
spec:
  targetAgent: bot
  fixtures: [a]
  judge: { model: openai/gpt-4.1 }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: a }
spec:
  targetAgent: bot
  input: { type: prompt, payload: { prompt: "a question" } }
  reference: "%s"
  assertions:
%s
"""
JUDGE = "    - { type: judge, rubric: answers the question }"
CONTAINS = "    - { type: contains, value: x }"
SIMILAR = "    - { type: similar, value: an answer, model: openai/text-embedding-3-small }"
REFERENCE = "x" * 400
"""An answer of 101 tokens: what evalward's own loop is expected to answer."""


def estimate(tmp_path: Path, agent: str, *assertions: str) -> Estimate:
    (tmp_path / "suite.yaml").write_text(DEFINITIONS % (agent, REFERENCE, "\n".join(assertions)))
    resources = load_resources(tmp_path)
    return estimate_run(PlannedRun(Side.head, "bot-eval", "a", 0), resources, PriceTable())


@pytest.mark.parametrize(("agent", "calls"), [(DECLARATIVE, 2), (COMMAND, 1)])
def test_a_bring_your_own_agents_own_calls_are_not_counted(
    tmp_path: Path, agent: str, calls: int
) -> None:
    """evalward's own loop makes one call here, beside the judge's; a program calls its
    models itself (through the proxy, which meters them), so only the judge's counts."""
    assert estimate(tmp_path, agent, JUDGE).calls == calls


@pytest.mark.parametrize(("agent", "answer"), [(DECLARATIVE, 101), (COMMAND, REPLY_TOKENS)])
def test_an_embedding_reads_the_answer_the_agents_kind_foresees(
    tmp_path: Path, agent: str, answer: int
) -> None:
    """The `similar` assertion embeds its text and the run's answer: as long as the
    reference for evalward's own loop, a reply's usual length for a program's."""
    without = estimate(tmp_path, agent, CONTAINS)
    found = estimate(tmp_path, agent, CONTAINS, SIMILAR)
    assert found.calls == without.calls + 1
    assert found.tokens - without.tokens == len("an answer") // 4 + answer


def test_a_system_file_is_counted_as_the_same_prompt_written_inline(tmp_path: Path) -> None:
    """Every call sends the system prompt, from `system` or from a `systemFile`: 4,000
    characters either way are 1,000 tokens more than none, in the agent's call."""
    (tmp_path / "prompt.md").write_text("x" * 4000)
    none = estimate(tmp_path, DECLARATIVE, CONTAINS).tokens
    inline = estimate(tmp_path, DECLARATIVE + f"\n  system: {'x' * 4000}", CONTAINS).tokens
    in_file = estimate(tmp_path, DECLARATIVE + "\n  systemFile: prompt.md", CONTAINS).tokens
    assert inline == in_file == none + 1000
