"""A pull request that changes only where a symbolic link points (the agent's `systemFile`
retargeted at another committed file) is blamed on the link it changed: attribution never
names the lines of a file the pull request did not touch, which the pull request's diff does
not show and whose author did nothing; nor lines of a file it did touch whose diff is against
that file's own base, not the text the link led to. The link's change is the one line its
diff shows (where it leads), which the review comments on."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from evalward.attribution.hunks import AgentFiles, split_change
from evalward.attribution.variants import build_variant
from evalward.git import Git
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.actionrun import ActionRun, gate_pull_request
from support.clerk import AGENT, BASE_PROMPT, HEAD_PROMPT, SUITE, script
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.hostile

CLERK = AGENT.format(model="openai/gpt-4.1-mini")


def _retarget(repo: GitRepo, strict: str = "") -> tuple[str, str]:
    """The clerk's prompt a link to the lenient prompt on the base, to the strict one on the
    head (someone else's, committed long before); `strict` the head's strict prompt, when
    the pull request edits it too. The base and head commits."""
    # someone else's strict prompt, committed long before
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
    if strict:
        repo.write({"prompts/strict.md": strict})
    head = repo.commit("point the clerk at the strict prompt")
    return base, head


def _gate(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, base: str, head: str
) -> ActionRun:
    """The action's gate of the pull request, GitHub's diff of it taken from git's."""
    return gate_pull_request(repo, github, base, head, provider_env(model), {"cache": "off"})


def test_a_retargeted_link_is_blamed_not_the_unchanged_file_it_now_names(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    script(model)
    base, head = _retarget(repo)
    changed = repo.git("diff", "--name-only", base, head).split()
    assert changed == ["prompts/clerk.md"]

    run = _gate(repo, github, model, base, head)

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


def test_the_review_comments_on_the_one_line_the_links_diff_shows(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The link's diff is one line (where it leads): a comment on the nine lines of the text
    it leads to is refused by GitHub, and with it the whole review."""
    script(model)
    base, head = _retarget(repo)

    run = _gate(repo, github, model, base, head)

    assert run.returncode == 1, run.stdout + run.stderr
    assert "no review on the changed lines" not in run.stdout, run.stdout
    (line,) = github.review_comments_on(7)
    assert (line["path"], line["line"], line.get("start_line")) == ("prompts/clerk.md", 1, None)
    (comment,) = github.comments_on(7)
    anchor = "#L1)"  # the link to the link's one line
    assert f"prompts/clerk.md{anchor}" in comment["body"], comment["body"]


def test_a_link_retargeted_at_a_file_the_pull_request_edits_is_one_hunk_on_the_link(
    repo: GitRepo,
) -> None:
    """The strict prompt's diff is its own one changed line; the lines where it differs
    from the lenient prompt the link led to are not the pull request's."""
    base, head = _retarget(repo, strict=HEAD_PROMPT.replace("End politely.", "End warmly."))
    agent = AgentFiles("clerk", "agents/clerk.yaml", ("prompts/clerk.md",))

    hunks = split_change(Git(repo.path), base, head, agent)

    assert [(h.path, h.kind, h.first, h.last) for h in hunks] == [
        ("prompts/clerk.md", "file", 1, 1)
    ]


@pytest.mark.parametrize("target", ["../../../etc/passwd", "gone.md"])
def test_a_link_retargeted_out_of_the_repository_is_taken_back_where_it_is(
    repo: GitRepo, target: str
) -> None:
    """The head's link leads out of the repository, or to no file: the head has nothing at
    the name, and taking the change back writes the base's text at the name. It was written
    at the file the base's link led to, which the head holds unchanged: the variant was the
    head, and the search said the regression was in none of the hunks."""
    repo.write(
        {"agents/clerk.yaml": CLERK, "prompts/lenient.md": BASE_PROMPT, "evals/suite.yaml": SUITE}
    )
    os.symlink("lenient.md", repo.path / "prompts/clerk.md")
    base = repo.commit("the clerk")
    os.unlink(repo.path / "prompts/clerk.md")
    os.symlink(target, repo.path / "prompts/clerk.md")
    head = repo.commit("the clerk's prompt leads elsewhere")
    git = Git(repo.path)
    agent = AgentFiles("clerk", "agents/clerk.yaml", ("prompts/clerk.md",))

    (hunk,) = split_change(git, base, head, agent)
    variant = build_variant(git, base, head, agent, [hunk])

    assert (hunk.path, hunk.kind, hunk.first) == ("prompts/clerk.md", "file", 0)
    assert isinstance(variant, str), variant
    assert repo.git("show", f"{variant}:prompts/clerk.md") == BASE_PROMPT.rstrip("\n")


def test_a_new_link_to_a_file_the_base_holds_is_the_hunk_not_that_files_lines(
    repo: GitRepo,
) -> None:
    """The head's clerk reads a new name, a link to someone else's strict prompt: the
    change is the link (its one line), taken back by removing it, not the nine lines of
    the strict prompt, which the diff does not show and which taking back left as they
    were."""
    base = repo.commit(
        "the clerk",
        {
            "agents/clerk.yaml": CLERK,
            "prompts/clerk.md": BASE_PROMPT,
            "prompts/strict.md": HEAD_PROMPT,
            "evals/suite.yaml": SUITE,
        },
    )
    os.symlink("strict.md", repo.path / "prompts/firm.md")
    head = repo.commit(
        "the clerk reads the strict prompt",
        {"agents/clerk.yaml": CLERK.replace("clerk.md", "firm.md")},
    )
    git = Git(repo.path)
    agent = AgentFiles("clerk", "agents/clerk.yaml", ("prompts/firm.md",))

    hunks = split_change(git, base, head, agent)
    link = next(h for h in hunks if h.path != "agents/clerk.yaml")
    variant = build_variant(git, base, head, agent, [link])

    assert (link.path, link.kind, link.first, link.last) == ("prompts/firm.md", "file", 1, 1)
    assert isinstance(variant, str), variant
    assert repo.git("ls-tree", "--name-only", variant, "prompts/") == (
        "prompts/clerk.md\nprompts/strict.md"
    )


def test_a_link_the_head_makes_a_file_is_split_as_the_text_it_led_to(repo: GitRepo) -> None:
    """The base's name is a link; the head writes a file there: its diff is the file's
    lines, each changed block a hunk as a prompt's."""
    repo.write({"agents/clerk.yaml": CLERK, "prompts/lenient.md": BASE_PROMPT})
    os.symlink("lenient.md", repo.path / "prompts/clerk.md")
    base = repo.commit("the clerk")
    os.unlink(repo.path / "prompts/clerk.md")
    head = repo.commit("the clerk's own prompt", {"prompts/clerk.md": HEAD_PROMPT})
    agent = AgentFiles("clerk", "agents/clerk.yaml", ("prompts/clerk.md",))

    hunks = split_change(Git(repo.path), base, head, agent)

    assert {(h.path, h.kind) for h in hunks} == {("prompts/clerk.md", "text")}
    assert len(hunks) == 3
