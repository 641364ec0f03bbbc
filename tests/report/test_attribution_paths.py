"""A pull request names where its prompt lives: a file name is bytes, and attribution names the
file a hunk lies in, as a link in the comment and as the path of a review comment. A name
that is not UTF-8 (reached through a link the pull request commits) must not crash the gate
that blocks it: the gate fails (exit 1) and says where it regressed, with the name escaped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer
from support.actionrun import ActionRun, pull_request_event, run_action
from support.clerk import AGENT, BASE_PROMPT, HEAD_PROMPT, SUITE, script
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.hostile

ROOMY = "attribution: { mode: on-block, budget: 4 }\n"


def _gate(repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer) -> ActionRun:
    pull = github.pulls[7]
    return run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, pull.base_sha, pull.head_sha),
        inputs={"cache": "off", "output-dir": ".evalward/out"},
        env=provider_env(model),
    )


def test_a_prompt_linked_to_a_name_that_is_not_utf8_does_not_crash_the_comment(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The base's clerk reads `prompts/clerk.md`; the pull request makes that a link to
    `prompts/caf\\xe9.md`, holding the head's prompt (NEVER REFUND). The gate blocks, and
    attribution proves the hunk in the file the link leads to, whose name is not UTF-8.
    Rendering its `path:line` link (urllib's `quote` of a str with a surrogate) raised
    UnicodeEncodeError: the run ended as an internal error (exit 4), with no comment."""
    script(model)
    base = repo.commit(
        "the clerk",
        {
            "agents/clerk.yaml": AGENT.format(model="openai/gpt-4.1-mini"),
            "prompts/clerk.md": BASE_PROMPT,
            "evals/suite.yaml": SUITE,
            ".gitignore": ".evalward/\n",
            "evalward.yaml": ROOMY,
        },
    )
    repo.branch("feature")
    prompts = os.fsencode(repo.path / "prompts")
    with open(prompts + b"/caf\xe9.md", "wb") as stream:
        stream.write(HEAD_PROMPT.encode())
    Path(repo.path / "prompts/clerk.md").unlink()
    os.symlink(b"caf\xe9.md", prompts + b"/clerk.md")
    head = repo.commit("the prompt moves beside its link")
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base, files=[]))

    run = _gate(repo, github, model)

    assert "internal error" not in run.stderr, run.stderr[-3000:]
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-3000:]
    (comment,) = github.comments_on(7)
    assert "Where it regressed" in comment["body"]
    assert "caf\\xe9.md" in comment["body"], comment["body"]
