"""The base side reads only what it needs: changed YAML from git, a worktree when agents read
files at run time — and either way runs the base's own definitions."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from evalward.errors import ResourceError
from evalward.flows.pipeline import evaluate_change
from evalward.git import Git
from evalward.plan.prepare import prepare_change
from evalward.plan.run_setup import Revisions, RunOptions, RunSetup
from evalward.providers.registry import build_providers
from evalward.rundata.sides import Side
from fakes.model_server import ScriptedModelServer, text, tool_call
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.integration

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: bot }
spec:
  models: [openai/gpt-test]
  systemFile: prompts/bot.md
"""
SUITE = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: bot-eval }
spec:
  targetAgent: bot
  fixtureSelector: { matchLabels: { agent: bot } }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: hello, labels: { agent: bot } }
spec:
  targetAgent: bot
  input: { type: prompt, payload: { prompt: hello } }
  assertions:
    - { type: contains, value: hi }
"""


def test_the_base_side_runs_the_base_system_prompt_file(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    base = repo.commit(
        "base",
        {"agents/bot.yaml": AGENT, "evals/bot.yaml": SUITE, "prompts/bot.md": "PROMPT-V1"},
    )
    repo.branch("pr")
    repo.commit("prompt", {"prompts/bot.md": "PROMPT-V2"})
    model.script("PROMPT", text("hi there"))
    env = provider_env(model, "sk-test")

    async def go() -> None:
        providers = build_providers(env)
        try:
            evaluation = await evaluate_change(
                RunSetup(
                    Git(repo.path), Revisions(base=base, head=None), providers, env, RunOptions()
                )
            )
        finally:
            await providers.aclose()
        assert [r.side for r in evaluation.fixtures] == ["head", "base"]
        assert all(r.passed for r in evaluation.fixtures)

    asyncio.run(go())
    systems = sorted(r["messages"][0]["content"] for r in model.requests)
    assert systems == ["PROMPT-V1", "PROMPT-V2"]
    assert json.dumps(model.requests).count("PROMPT-V1") == 1


ADAPTIVE = SUITE.replace(
    "  fixtureSelector: { matchLabels: { agent: bot } }\n",
    "  fixtureSelector: { matchLabels: { agent: bot } }\n"
    "  execution: { reps: { min: 2, max: 8 } }\n",
)


def _tree_files(root: Path) -> set[str]:
    return {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if (p.is_file() or p.is_symlink()) and p.name != ".git"
    }


def test_base_runs_added_by_adaptive_reps_read_the_base_s_files(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    """Adaptive reps plan the head's runs first and add the base's once the head fails: the
    base's system prompt file is there for them (it was read from nowhere before)."""
    base = repo.commit(
        "base",
        {"agents/bot.yaml": AGENT, "evals/bot.yaml": ADAPTIVE, "prompts/bot.md": "PROMPT-V1"},
    )
    repo.branch("pr")
    repo.commit("prompt", {"prompts/bot.md": "PROMPT-V2"})
    model.script("PROMPT-V1", text("hi there"))
    model.script("PROMPT-V2", text("no greeting"))
    env = provider_env(model, "sk-test")

    async def go() -> list[tuple[str, bool]]:
        providers = build_providers(env)
        try:
            evaluation = await evaluate_change(
                RunSetup(
                    Git(repo.path), Revisions(base=base, head=None), providers, env, RunOptions()
                )
            )
        finally:
            await providers.aclose()
        return [(r.side, r.passed) for r in evaluation.fixtures]

    ran = asyncio.run(go())
    assert ("base", True) in ran and ("head", False) in ran
    assert {side for side, _ in ran if side == "base"} == {"base"}
    assert all(passed for side, passed in ran if side == "base")
    systems = {r["messages"][0]["content"] for r in model.requests}
    assert systems == {"PROMPT-V1", "PROMPT-V2"}


def _prepared_base(repo: GitRepo, base: str) -> set[str]:
    """The files of the base side's checkout, as the pipeline writes it for this change."""
    setup = RunSetup(
        Git(repo.path), Revisions(base=base, head=None), build_providers({}), {}, RunOptions()
    )
    with prepare_change(setup) as prepared:
        return _tree_files(prepared.checkouts[Side.base].root)


def test_the_base_checkout_holds_what_its_runs_read_and_not_the_repository(
    repo: GitRepo,
) -> None:
    """A declarative agent reads its system prompt; the base side gets that file — through
    the link it is reached by, with the link's target and the attributes git writes it by —
    not the thousand other files of the repository."""
    linked = AGENT.replace("prompts/bot.md", "prompts/current/bot.md")
    others = {f"data/part-{i}/file-{i}.txt": f"{i}\n" for i in range(1000)}
    files = {"agents/bot.yaml": linked, "evals/bot.yaml": ADAPTIVE, "prompts/v1/bot.md": "V1"}
    files |= {".gitattributes": "*.md text\n", "prompts/unused.md": "not read", **others}
    repo.commit("base", files)
    (repo.path / "prompts" / "current").symlink_to("v1")
    base = repo.commit("a linked prompt folder")
    repo.branch("pr")
    repo.commit("prompt", {"prompts/v1/bot.md": "V2"})

    assert _prepared_base(repo, base) == {
        ".gitattributes",
        "prompts/current",
        "prompts/v1/bot.md",
    }


def test_a_program_without_watch_gets_the_whole_commit_and_one_with_watch_its_files(
    repo: GitRepo,
) -> None:
    program = AGENT.replace(
        "  models: [openai/gpt-test]\n  systemFile: prompts/bot.md\n",
        "  runtime: { command: { run: [python3, agent/main.py] } }\n",
    )
    files = {"agents/bot.yaml": program, "evals/bot.yaml": ADAPTIVE, "agent/main.py": "x = 1\n"}
    files |= {"agent/lib/util.py": "y = 2\n", "docs/readme.md": "docs\n"}
    base = repo.commit("base", files)
    repo.branch("pr")
    repo.commit("change", {"agent/main.py": "x = 2\n"})
    assert _prepared_base(repo, base) == set(files) | {"evals/bot.yaml", "agents/bot.yaml"}

    repo.checkout("main")
    watched = program + "  watch: [agent/**]\n"
    base = repo.commit("watch", {"agents/bot.yaml": watched})
    repo.checkout("pr")
    repo.git("merge", "-q", "--no-edit", "main")
    assert _prepared_base(repo, base) == {"agent/main.py", "agent/lib/util.py"}


def test_a_base_agent_that_cannot_run_makes_its_runs_errors_and_the_rest_goes_on(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    """The base branch's agent names a prompt file its commit lacks (the pull request adds
    it): each base run is an error saying so; the head's runs are scored as usual."""
    base = repo.commit("base", {"agents/bot.yaml": AGENT, "evals/bot.yaml": SUITE})
    repo.branch("pr")
    repo.commit("the prompt", {"prompts/bot.md": "PROMPT-V2"})
    model.script("PROMPT-V2", text("hi there"))
    env = provider_env(model, "sk-test")

    async def go() -> list[tuple[str, str, str]]:
        providers = build_providers(env)
        try:
            evaluation = await evaluate_change(
                RunSetup(
                    Git(repo.path),
                    Revisions(base=base, head=None),
                    providers,
                    env,
                    RunOptions(run_all=True),
                )
            )
        finally:
            await providers.aclose()
        return [(r.side, r.status, r.message) for r in evaluation.fixtures]

    ran = asyncio.run(go())
    assert {status for side, status, _ in ran if side == "head"} == {"pass"}
    base_runs = [(status, message) for side, status, message in ran if side == "base"]
    assert base_runs, ran
    for status, message in base_runs:
        assert status == "error"
        assert "the base side's agent cannot run: agents/bot.yaml: spec.systemFile" in message
        assert "'prompts/bot.md'" in message


def test_what_a_later_round_may_run_on_the_base_is_refused_before_the_first_run(
    repo: GitRepo, model: ScriptedModelServer, tmp_path: Path
) -> None:
    """The base's agent has a side-effecting tool its fixture does not shadow; the pull
    request drops the tool, so only base runs — which adaptive reps add in a later round —
    would run it. It is refused before any run, as a first round's would be."""
    marker = tmp_path / "sent"
    tool = (
        "  tools:\n    - name: send\n      sideEffects: true\n"
        f"      command: [python3, -c, \"open('{marker}', 'a').write('sent')\"]\n"
    )
    base = repo.commit(
        "base",
        {"agents/bot.yaml": AGENT + tool, "evals/bot.yaml": ADAPTIVE, "prompts/bot.md": "V1"},
    )
    repo.branch("pr")
    repo.commit("no tool", {"agents/bot.yaml": AGENT, "prompts/bot.md": "V2"})
    model.script("V2", text("no greeting"))
    model.script("V1", tool_call("send", {}), text("hi"))
    env = provider_env(model, "sk-test")

    async def go() -> None:
        providers = build_providers(env)
        try:
            await evaluate_change(
                RunSetup(
                    Git(repo.path), Revisions(base=base, head=None), providers, env, RunOptions()
                )
            )
        finally:
            await providers.aclose()

    with pytest.raises(ResourceError) as refused:
        asyncio.run(go())
    assert refused.value.source == "the base branch"
    assert "would run the side-effecting tool 'send'" in str(refused.value)
    assert not marker.exists()
    assert model.requests == []


def _head_reads(repo: GitRepo, base: str) -> frozenset[str] | None:
    """What an agent user's copy of the head holds for this change (None: all of it)."""
    setup = RunSetup(
        Git(repo.path), Revisions(base=base, head=None), build_providers({}), {}, RunOptions()
    )
    with prepare_change(setup) as prepared:
        return prepared.checkouts[Side.head].reads


def test_the_head_side_reads_what_the_base_side_does(repo: GitRepo) -> None:
    """The working tree holds the whole repository; an agent user's copy of it holds what
    the head's runs read, as the base's checkout does: a watched program's files (an
    untracked one the cache key also counts among them), all of it for one without watch."""
    program = AGENT.replace(
        "  models: [openai/gpt-test]\n  systemFile: prompts/bot.md\n",
        "  runtime: { command: { run: [python3, agent/main.py] } }\n",
    )
    files = {"agents/bot.yaml": program, "evals/bot.yaml": ADAPTIVE, "agent/main.py": "x = 1\n"}
    files |= {"docs/readme.md": "docs\n", **{f"data/{i}.txt": f"{i}\n" for i in range(200)}}
    base = repo.commit("base", files)
    repo.branch("pr")
    repo.commit("change", {"agent/main.py": "x = 2\n"})
    assert _head_reads(repo, base) is None

    repo.commit("watch", {"agents/bot.yaml": program + "  watch: [agent/**]\n"})
    (repo.path / "agent" / "untracked.py").write_text("z = 3\n")
    assert _head_reads(repo, base) == {"agent/main.py", "agent/untracked.py"}


def test_a_worktree_leaves_no_entry_in_git_even_when_its_folder_went_first(
    tmp_path: Path,
) -> None:
    """A worktree is removed by one `git worktree remove`, which drops git's entry of it
    (and `.git/worktrees` once empty), its folder there or not; no `prune` follows."""
    repo = GitRepo(tmp_path / "repo")
    commit = repo.commit("one", {"a.txt": "a"})
    git = Git(repo.path)
    with git.worktree(commit) as path:
        assert (path / "a.txt").read_text() == "a"
    with git.worktree(commit) as path:
        shutil.rmtree(path)  # something in the run deleted it
    listed = git.run("worktree", "list", "--porcelain")
    assert listed.count("worktree ") == 1, listed
    assert not (repo.path / ".git" / "worktrees").exists()
    assert not path.parent.exists()
