"""A pull request that changes an agent: its prompt in three places, its model, one tool's
description, and a tool it adds; committed in a real repository."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from evalward.attribution.hunks import AgentFiles
from evalward.git import Git
from support.gitrepo import GitRepo

BASE_AGENT = """\
# The support agent.
apiVersion: evalward.dev/v1
kind: Agent
metadata:
  name: support
spec:
  models: [openai/gpt-4.1-mini]   # the cheap one
  temperature: 0
  systemFile: prompts/support.md
  tools:
    - name: lookup_order
      description: Look up an order.
      parameters:
        type: object
        properties: { order_id: { type: string } }
      mock:
        output: shipped
    - name: clarify
      description: Ask the customer.
      mock:
        output: damaged
"""

HEAD_AGENT = (
    BASE_AGENT.replace("# The support agent.", "# The support agent, answering refunds too.")
    .replace("[openai/gpt-4.1-mini]", "[openai/gpt-4.1]")
    .replace("Look up an order.", "Look up an order and its refund status.")
    + "    - name: refund\n      description: Refund an order.\n"
    + "      mock:\n        output: refunded\n"
)
"""Its model (line 7), lookup_order's description (line 12) and a new tool (lines 22-25)
change; its first comment too, which changes nothing the agent does."""

BASE_PROMPT = "".join(f"Rule {n}.\n" for n in range(1, 11))
HEAD_PROMPT = (
    "Rule 1.\nRule 2, said more firmly.\nRule 3.\nRule 4.\nRule 5.\n"
    "A new rule.\nAn example of it.\n"
    "Rule 6.\nRule 7.\nRule 8.\nRule 10.\n"
)
"""Hunk 1 rewords line 2; hunk 2 adds lines 6-7; hunk 3 deletes `Rule 9.` (before line 11)."""

SUPPORT = AgentFiles("support", "agents/support.yaml", ("prompts/support.md",))

INLINE_BASE = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata:
  name: support
spec:
  models: [openai/gpt-4.1-mini]
  temperature: 0
  system: |
    You are the support agent.
    Ask why before you refund.
    Be brief.
    Sign with your name.
  tools:
    - name: lookup_order
      description: >
        Look up an order
        by its id.
      mock:
        output: shipped
"""

INLINE_HEAD = (
    INLINE_BASE.replace("temperature: 0", "temperature: 0.3")
    .replace("    Ask why before you refund.\n", "    Refund at once.\n")
    .replace("    Sign with your name.\n", "    Sign with your name.\n    Never apologise.\n")
    .replace("        by its id.\n", "        by its id or email.\n")
)
"""The temperature (line 7), two blocks of the system prompt written in the YAML (line 10:
the refund rule; line 13: a new last line) and a line of a tool's folded description (line
18) change."""

INLINE = AgentFiles("support", "agents/support.yaml")


@dataclass(frozen=True)
class Change:
    repo: GitRepo
    git: Git
    base: str
    head: str


@pytest.fixture
def change(repo: GitRepo) -> Change:
    base = repo.commit(
        "base",
        {
            "agents/support.yaml": BASE_AGENT,
            "prompts/support.md": BASE_PROMPT,
            "README.md": "support\n",
        },
    )
    head = repo.commit(
        "head", {"agents/support.yaml": HEAD_AGENT, "prompts/support.md": HEAD_PROMPT}
    )
    return Change(repo, Git(repo.path), base, head)
