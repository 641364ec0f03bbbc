"""The review's lines are where git's diff, and so GitHub's, shows the change. A prompt whose
paragraphs are kept apart by runs of blank lines can be aligned in more than one way: a
paragraph added with blank lines around it was put on lines 2-7 by a matcher of our own
while git shows it on lines 6-12, and GitHub refuses a comment on a line its diff does not
show, and the whole review with it."""

from __future__ import annotations

import pytest

from attribution.test_hunks import diff_blocks
from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer
from support.actionrun import pull_request_event, run_action
from support.clerk import AGENT, SUITE, script
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.e2e

BASE = (
    "You are a refund clerk.\n\n\n\n\nSay approved when you approve one.\n"
    "Greet people with hello.\n"
)
HEAD = BASE.replace("\n\n\n\n\n", "\n\n\n\n\n\nNEVER REFUND anything.\n\n\n\n\n")


def test_a_paragraph_added_between_blank_lines_is_commented_where_the_diff_shows_it(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    script(model)
    base = repo.commit(
        "the clerk",
        {
            "agents/clerk.yaml": AGENT.format(model="openai/gpt-4.1-mini"),
            "prompts/clerk.md": BASE,
            "evals/suite.yaml": SUITE,
            ".gitignore": ".evalward/\n",
            "evalward.yaml": "attribution: { mode: on-block, budget: 4 }\n",
        },
    )
    repo.branch("feature")
    head = repo.commit("never refund", {"prompts/clerk.md": HEAD})
    files = repo.pull_files(base, head)
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base, files=files))

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        inputs={"cache": "off", "output-dir": ".evalward/out"},
        env=provider_env(model),
    )

    assert run.returncode == 1, run.stdout + run.stderr  # NEVER REFUND regresses refunds
    assert "no review on the changed lines" not in run.stdout, run.stdout
    (line,) = github.review_comments_on(7)
    first = line.get("start_line") or line["line"]
    assert line["path"] == "prompts/clerk.md"
    blocks = diff_blocks(repo, base, head, "prompts/clerk.md")
    assert any({first, line["line"]} <= block for block in blocks), (line, blocks)
    assert "NEVER REFUND anything." in HEAD.splitlines()[first - 1 : line["line"]]
