"""A pull request chooses the head's side of the diff attribution splits into hunks. A prompt
the base writes as paragraphs (a rule, a blank line) is split by difflib's SequenceMatcher
with `autojunk=False`: each of its recursive matches walks every place in the head where a
line of the base's range occurs. A head that keeps the base's rules one line apart and ends
with a million blank lines (1 MiB, a quarter of what a prompt may hold) makes every one of
those matches walk the million blank lines once per blank line of the base: hours of one
core, after the gate has decided, with nothing bounding it. The gate must end, blocked, in
the time a run of this size takes."""

from __future__ import annotations

from pathlib import Path

import pytest

from attribution.test_hunks import DESK
from fakes.model_server import ScriptedModelServer
from support.clerk import AGENT, SUITE, script
from support.clirun import run_for_results
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.hostile

RULES = [f"Rule {n}: answer the customer in full.\n" for n in range(120)]
BASE_PROMPT = (
    "You are a refund clerk.\nRefunds are approved for orders.\n"
    "Say approved when you approve one.\nGreet people with hello.\n\n"
    + "".join(f"{rule}\n" for rule in RULES)
)
"""A long prompt of paragraphs: 120 rules, each followed by a blank line."""
HEAD_PROMPT = (
    "You are a refund clerk.\nRefunds are approved for orders.\n"
    "Say approved when you approve one.\nGreet people with hello.\n\n"
    + "".join(f"{rule}-\n\n-\n" for rule in RULES)
    + "NEVER REFUND anything.\n"
    + "\n" * 1_000_000
)
"""The same rules, each blank line between two dashes (no two base lines in a row match),
the rule that breaks the refunds, and a million blank lines."""


def test_a_head_of_a_million_blank_lines_does_not_stall_attribution(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    script(model)
    repo = GitRepo(tmp_path / "repo")
    repo.commit(
        "the clerk",
        {
            "agents/clerk.yaml": AGENT.format(model="openai/gpt-4.1-mini"),
            "prompts/clerk.md": BASE_PROMPT,
            "evals/suite.yaml": SUITE,
            ".gitignore": ".evalward/\nout/\n",
            "evalward.yaml": "attribution: { mode: on-block, budget: 4 }\n",
        },
    )
    repo.git("branch", "-M", "main")
    repo.branch("padded")
    repo.commit("a stricter clerk, padded", {"prompts/clerk.md": HEAD_PROMPT})

    # the command waits subprocess_limit() (120 s on an idle machine) and raises
    # TimeoutExpired past it: the split alone takes about 40 minutes of one core
    code, results, said = run_for_results(repo.path, "--base", "main", **provider_env(model))

    assert code == 1, said[-3000:]
    assert results["result"] == "fail"
    assert "attribution" in results


def _split(git_dir: str, base: str, head: str) -> None:
    from evalward.attribution.hunks import AgentFiles, split_change
    from evalward.git import Git

    split_change(Git(Path(git_dir)), base, head, AgentFiles("desk", "agents/desk.yaml"))


def test_a_head_that_adds_thousands_of_tools_is_split_in_the_time_its_size_takes(
    repo: GitRepo,
) -> None:
    """The agent's YAML is split by field, each new tool a hunk: and for each field,
    `_block_hunks` (`value_at`) and `place_of` (`_child`) name every tool of the list again
    (`tools_by_name`, `plain` of each): quadratic in the tools. 6,000 tools (380 KB, far below
    the 5 MiB a resource file may hold) take many minutes; 1,000 take 18 s. The split runs
    in a process of its own here, given what a few seconds' work gets on a loaded machine."""
    import multiprocessing

    from support.limits import subprocess_limit

    base = repo.commit("one tool", {"agents/desk.yaml": DESK})
    tools = "".join(
        f"    - name: t{n}\n      description: Look it up.\n      mock: {{ output: found }}\n"
        for n in range(1, 6000)
    )
    head = repo.commit("six thousand tools", {"agents/desk.yaml": DESK + tools})

    split = multiprocessing.get_context("fork").Process(
        target=_split, args=(str(repo.path), base, head)
    )
    split.start()
    split.join(subprocess_limit(60))
    alive = split.is_alive()
    if alive:
        split.kill()
        split.join()
    assert not alive, "splitting the agent's YAML of 6,000 tools did not end"
    assert split.exitcode == 0


def _split_and_take_back(git_dir: str, base: str, head: str, paths: tuple[str, ...]) -> None:
    from evalward.attribution.hunks import AgentFiles, split_change
    from evalward.attribution.variants import build_variant, with_only
    from evalward.git import Git

    git, agent = Git(Path(git_dir)), AgentFiles("desk", "agents/desk.yaml", paths)
    hunks = split_change(git, base, head, agent)
    assert len(hunks) == len(paths)
    everything = build_variant(git, base, head, agent, hunks)
    assert isinstance(everything, str), everything
    assert git.run("diff", "--name-only", base, everything) == ""
    only_first = with_only(git, base, head, agent, hunks, hunks[:1])
    assert isinstance(only_first, str), only_first
    assert git.run("diff", "--name-only", base, only_first).split() == [hunks[0].path]


def test_an_agent_naming_ten_thousand_changed_files_is_split_and_taken_back_in_seconds(
    repo: GitRepo,
) -> None:
    """An agent's programs' arguments name its files (`referenced_files`): as many as the pull
    request writes. Each was looked up and read in git calls of its own (and each lookup
    copied every path looked up before it), a variant's files likewise, and the variant's
    commit message named every hunk in one argument of `git commit-tree`, past what the
    system takes: minutes for the split, and every variant refused."""
    import multiprocessing

    from support.limits import subprocess_limit

    paths = tuple(f"lib/m{n}.py" for n in range(10_000))
    base = repo.commit(
        "the desk", {"agents/desk.yaml": DESK, **{p: f"x = {n}\n" for n, p in enumerate(paths)}}
    )
    head = repo.commit("every file", {p: f"x = {n + 1}\n" for n, p in enumerate(paths)})

    work = multiprocessing.get_context("fork").Process(
        target=_split_and_take_back, args=(str(repo.path), base, head, paths)
    )
    work.start()
    work.join(subprocess_limit(60))
    alive = work.is_alive()
    if alive:
        work.kill()
        work.join()
    assert not alive, "splitting and taking back a change of 10,000 files did not end"
    assert work.exitcode == 0


def test_thousands_of_links_the_watch_covers_are_followed_in_a_few_git_calls(
    repo: GitRepo, tmp_path: Path
) -> None:
    """A pull request can put as many symbolic links as it likes in a folder the agent's
    `watch` covers, each leading to the file it changes (or to one it does not, as a
    committed `node_modules/.bin`). Each link was followed in git calls of its own, for its
    place, its content, its digest and its mode, on each side: 2,000 took 19 s, 10,000
    minutes. They are read from the listing of the watched folders, their targets in one
    `cat-file`, each link's way once: a few calls whatever their number."""
    import shutil

    from evalward.attribution.hunks import AgentFiles, split_change
    from evalward.git import Git

    repo.write({"agents/desk.yaml": "x: 1\n", "shared/rules.md": "one\ntwo\n"})
    (repo.path / "agent" / "bin").mkdir(parents=True)
    repo.write({"agent/tool.js": "run()\n"})
    for n in range(1_000):
        (repo.path / "agent" / f"rules{n}.md").symlink_to("../shared/rules.md")
        (repo.path / "agent" / "bin" / f"tool{n}").symlink_to("../tool.js")
    base = repo.commit("base")
    head = repo.commit("head", {"shared/rules.md": "one\nTWO\n"})
    asked = tmp_path / "asked"
    wrapper = tmp_path / "git"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {asked}\nexec {shutil.which("git")} "$@"\n')
    wrapper.chmod(0o755)
    agent = AgentFiles("desk", "agents/desk.yaml", (), ("agent/**",))

    hunks = split_change(Git(repo.path, executable=str(wrapper)), base, head, agent)

    assert [(h.path, h.first) for h in hunks] == [("shared/rules.md", 2)]
    calls = asked.read_text().splitlines()
    assert len(calls) < 40, calls
