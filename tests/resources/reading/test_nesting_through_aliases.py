"""Nesting is bounded however it is written. A collection nested in the text at most
MAX_DEPTH deep, anchored, and named by an alias inside another such collection nests as
deep as both together: a few lines of aliases reach thousands of levels. Such a definition
is refused at its line as too deep, like one written out (`evalward validate` and the
action's pull request gate: exit 2, one located message, never a traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub, FakePull
from support.actionrun import pull_request_event, run_action
from support.clirun import evalward
from support.gitrepo import GitRepo
from support.suite import GREETING_FIXTURE, HEAD_PROMPT, SUPPORT_BOT, SUPPORT_EVAL, make_pr

pytestmark = pytest.mark.hostile

LEVELS = 90
"""Each anchored collection's own nesting in the text: under the limit of 100."""
LINKS = 20
"""Anchors, each nesting the one before: 20 x 90 levels once the aliases are followed."""


def _deep_fixture() -> str:
    """A fixture whose payload holds a chain of anchored lists, each holding the one before."""
    chain = []
    for k in range(LINKS):
        inner = f"*a{k - 1}" if k else "1"
        chain.append(f"        - &a{k} " + "[" * LEVELS + inner + "]" * LEVELS)
    return (
        "apiVersion: evalward.dev/v1\n"
        "kind: EvalFixture\n"
        "metadata: { name: deep, labels: { agent: support-bot } }\n"
        "spec:\n"
        "  targetAgent: support-bot\n"
        "  input:\n"
        "    type: prompt\n"
        "    payload:\n"
        "      prompt: Hello there!\n"
        "      context:\n" + "\n".join(chain) + "\n"
        "  assertions:\n"
        "    - { type: contains, value: Hello }\n"
    )


DEEP = "evals/fixtures/deep.yaml"


def _refused_at_its_line(stderr: str) -> None:
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr[-3000:]
    assert f"{DEEP}:" in stderr and "levels deep" in stderr, stderr[-3000:]


def test_nesting_reached_through_aliases_is_refused_by_validate(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    files = {
        "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=HEAD_PROMPT),
        "evals/support-bot.yaml": SUPPORT_EVAL,
        "evals/fixtures/greeting.yaml": GREETING_FIXTURE,
        DEEP: _deep_fixture(),
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    validate = evalward("validate", str(root))
    assert validate.returncode == 2, validate.stderr[-3000:]
    _refused_at_its_line(validate.stderr)


def test_a_pull_request_adding_nesting_through_aliases_is_refused_at_its_line(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str], tmp_path: Path
) -> None:
    base, _ = make_pr(repo, github)
    head = repo.commit("a fixture with context", {DEEP: _deep_fixture()})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )
    assert run.returncode == 2, run.stdout[-3000:] + run.stderr[-3000:]
    assert run.outputs.get("result") != "pass"
    _refused_at_its_line(run.stdout + run.stderr)
