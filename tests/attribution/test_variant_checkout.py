"""From a pull request to a variant on disk: a three-hunk prompt change and a model change
split into hunks, the prompt's second hunk taken back as a commit, and that commit checked
out as the head is (Git.worktree) and read back."""

from __future__ import annotations

import pytest

from attribution.conftest import BASE_AGENT, BASE_PROMPT, HEAD_PROMPT, SUPPORT
from evalward.attribution.hunks import split_change
from evalward.attribution.variants import build_variant
from evalward.git import Git
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

HEAD_AGENT = BASE_AGENT.replace("[openai/gpt-4.1-mini]", "[anthropic/claude-haiku-4-5]")


def test_a_variant_without_hunk_two_checks_out_as_the_head_does(repo: GitRepo) -> None:
    base = repo.commit(
        "base", {"agents/support.yaml": BASE_AGENT, "prompts/support.md": BASE_PROMPT}
    )
    head = repo.commit(
        "head", {"agents/support.yaml": HEAD_AGENT, "prompts/support.md": HEAD_PROMPT}
    )
    git = Git(repo.path)
    hunks = split_change(git, base, head, SUPPORT)
    assert [(h.path, h.index, h.first, h.last, h.field_name) for h in hunks] == [
        ("agents/support.yaml", 1, 7, 7, "spec.models"),
        ("prompts/support.md", 1, 2, 2, ""),
        ("prompts/support.md", 2, 6, 7, ""),
        ("prompts/support.md", 3, 11, 11, ""),
    ]
    built = build_variant(git, base, head, SUPPORT, [hunks[2]])
    assert isinstance(built, str)
    expected = HEAD_PROMPT.replace("A new rule.\nAn example of it.\n", "")
    listed = repo.git("ls-tree", "-r", built).splitlines()
    blob = repo.git("rev-parse", f"{built}:prompts/support.md")
    assert [line.split("\t")[1] for line in listed] == [
        "agents/support.yaml",
        "prompts/support.md",
    ]
    assert f"100644 blob {blob}\tprompts/support.md" in listed
    with git.worktree(built) as tree:
        assert (tree / "prompts/support.md").read_text(encoding="utf-8") == expected
        assert (tree / "agents/support.yaml").read_text(encoding="utf-8") == HEAD_AGENT
        assert Git(tree).resolve("HEAD") == built
    assert repo.git("status", "--porcelain") == ""  # the repository's own tree untouched
