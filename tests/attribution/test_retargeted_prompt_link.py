"""A pull request that changes only where a symbolic link points (the agent's `systemFile`
retargeted at another committed file, which neither side changes) is blamed on the link it
changed: attribution never names the lines of a file the pull request did not touch, which
the pull request's diff does not show and whose author did nothing."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer
from support.actionrun import pull_request_event, run_action
from support.clerk import AGENT, BASE_PROMPT, HEAD_PROMPT, SUITE, script
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.hostile

CLERK = AGENT.format(model="openai/gpt-4.1-mini")


def test_a_retargeted_link_is_blamed_not_the_unchanged_file_it_now_names(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    script(model)
    # someone else's strict prompt, committed long before and never changed by the pull request
    repo.write(
        {
            "agents/clerk.yaml": CLERK,
            "prompts/lenient.md": BASE_PROMPT,
            "prompts/strict.md": HEAD_PROMPT,
            "evals/suite.yaml": SUITE,
            ".gitignore": ".evalward/\n",
            "evalward.yaml": "attribution: { mode: on-block, budget: 4 }\n",
        }
    )
    os.symlink("lenient.md", repo.path / "prompts/clerk.md")
    base = repo.commit("the clerk")
    repo.branch("feature")
    os.unlink(repo.path / "prompts/clerk.md")
    os.symlink("strict.md", repo.path / "prompts/clerk.md")
    head = repo.commit("point the clerk at the strict prompt")
    changed = repo.git("diff", "--name-only", base, head).split()
    assert changed == ["prompts/clerk.md"]
    diff = [
        {
            "filename": "prompts/clerk.md",
            "status": "modified",
            "patch": "@@ -1 +1 @@\n-lenient.md\n\\ No newline at end of file\n+strict.md\n"
            "\\ No newline at end of file",
        }
    ]
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base, files=diff))

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        inputs={"cache": "off", "output-dir": ".evalward/out"},
        env=provider_env(model),
    )

    assert run.returncode == 1, run.stdout + run.stderr  # the strict prompt regresses refunds
    results: dict[str, Any] = json.loads((repo.path / ".evalward/out/results.json").read_text())
    (regression,) = results["attribution"]["regressions"]
    blamed = {regression["hunks"][i]["path"] for i in regression.get("culprit") or ()}
    named = {hunk["path"] for hunk in regression["hunks"]}
    (comment,) = github.comments_on(7)
    # every hunk is of a file the pull request changed; none is prompts/strict.md's lines
    assert named <= set(changed), (named, regression)
    assert blamed <= set(changed), blamed
    assert "strict.md:" not in comment["body"], comment["body"]
    assert not any(c["path"] == "prompts/strict.md" for c in github.review_comments_on(7))
