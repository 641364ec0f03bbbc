"""A pull request's agent YAML built to make the split walk far more than it holds: aliases
that expand to billions of values are compared as text, in the time a small file takes."""

from __future__ import annotations

import pytest

from attribution.conftest import BASE_AGENT, SUPPORT
from evalward.attribution.hunks import split_change
from evalward.git import Git
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

LAUGHS = "".join(
    f"    l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 10)}]\n" for n in range(1, 10)
).replace("*l0", '"ha"')
"""Nine labels, each ten of the one before: 10**9 values once expanded."""


def test_aliases_that_expand_past_the_bound_are_split_as_text(repo: GitRepo) -> None:
    base = repo.commit("base", {"agents/support.yaml": BASE_AGENT})
    bomb = BASE_AGENT.replace("metadata:\n", f"metadata:\n  labels:\n{LAUGHS}", 1)
    head = repo.commit("head", {"agents/support.yaml": bomb})
    hunks = split_change(Git(repo.path), base, head, SUPPORT)
    assert {h.kind for h in hunks} == {"text"}
    assert sum(len(h.head_lines) for h in hunks) == 10  # `labels:` and its nine lines
