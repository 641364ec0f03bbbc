"""Uncommitted changes in the working tree count as the pull request's own, wherever the
definitions look: an edited or untracked definition, a file an agent reads, names of any bytes.
Only the paths the definitions name are asked of git (not every file of the repository), so
each case here is alone in its working tree: a miss cannot hide behind another change."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

ODD_FILE = os.fsdecode(b"agents/caf\xe9 two\nlines.yaml")
"""A definition whose name is not UTF-8 and holds a space and a newline."""
ODD_PROMPT = "prompts/odd one\nhere.md"


def _agent(name: str, system: str = "", watch: str = "") -> str:
    prompt = f"systemFile: {json.dumps(system)}" if system else "system: be brief"
    watched = f"\n  watch: [{json.dumps(watch)}]" if watch else ""
    return f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: {name} }}
spec:
  models: [openai/gpt-test]
  {prompt}{watched}
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: {name}-eval }}
spec:
  targetAgent: {name}
  fixtureSelector: {{ matchLabels: {{ agent: {name} }} }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {name}-hello, labels: {{ agent: {name} }} }}
spec:
  targetAgent: {name}
  input: {{ type: prompt, payload: {{ prompt: hello }} }}
  assertions:
    - {{ type: contains, value: hi }}
"""


def _write(repo: GitRepo, name: str, text: str) -> None:
    target = repo.path / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(text.encode())


def _repo(tmp_path: Path) -> GitRepo:
    """Three agents on main, a pull request branch with one unrelated commit, and many other
    files: nothing the definitions name differs between the two until a case edits it."""
    repo = GitRepo(tmp_path / "repo")
    _write(repo, "agents/bot.yaml", _agent("bot", system="prompts/bot.md"))
    _write(repo, "prompts/bot.md", "You are bot.\n")
    _write(repo, ODD_FILE, _agent("odd", system=ODD_PROMPT))
    _write(repo, ODD_PROMPT, "You are odd.\n")
    _write(repo, "watcher/agent.yaml", _agent("watcher", watch="tools/**"))
    _write(repo, "tools/helper.py", "x = 1\n")
    for index in range(30):
        _write(repo, f"src/pkg{index % 3}/mod{index}.py", f"v = {index}\n")
    repo.commit("base")
    repo.branch("pr")
    repo.commit("unrelated", {"src/pkg0/mod0.py": "v = -1\n"})
    return repo


def _edit(name: str, text: str) -> Callable[[GitRepo], None]:
    return lambda repo: _write(repo, name, text)


def _delete(name: str) -> Callable[[GitRepo], None]:
    return lambda repo: (repo.path / name).unlink()


def _stage(change: Callable[[GitRepo], None]) -> Callable[[GitRepo], None]:
    def staged(repo: GitRepo) -> None:
        change(repo)
        repo.git("add", "-A")

    return staged


EDITED_BOT = _agent("bot", system="prompts/bot.md").replace("test", "4o")

CASES: dict[str, tuple[Callable[[GitRepo], None], dict[str, str]]] = {
    "edited definition": (
        _edit("agents/bot.yaml", EDITED_BOT),
        {"bot": "models changed"},
    ),
    "edited definition, staged": (
        _stage(_edit("agents/bot.yaml", EDITED_BOT)),
        {"bot": "models changed"},
    ),
    "untracked new definition": (
        _edit("agents/new/fresh.yaml", _agent("fresh")),
        {"fresh": "new agent"},
    ),
    "untracked definition named in bytes that are not UTF-8": (
        _edit(os.fsdecode(b"more/n\xe9w one\n.yaml"), _agent("fresh")),
        {"fresh": "new agent"},
    ),
    "edited systemFile": (
        _edit("prompts/bot.md", "You are bot. Be kind.\n"),
        {"bot": "prompts/bot.md changed"},
    ),
    "edited definition named in bytes that are not UTF-8": (
        _edit(ODD_FILE, _agent("odd", system=ODD_PROMPT).replace("test", "4o")),
        {"odd": "models changed"},
    ),
    "edited systemFile named with a space and a newline": (
        _edit(ODD_PROMPT, "You are odd. Be kind.\n"),
        {"odd": "changed"},
    ),
    "edited file in a watched folder": (
        _edit("tools/helper.py", "x = 2\n"),
        {"watcher": "watched path tools/helper.py changed"},
    ),
    "watched file deleted and staged": (
        _stage(_delete("tools/helper.py")),
        {"watcher": "watched path tools/helper.py changed"},
    ),
}


def _plan(repo: GitRepo) -> dict[str, Any]:
    done = evalward("plan", ".", "--base", "main", "--json", cwd=repo.path)
    assert done.returncode == 0, done.stdout + done.stderr
    plan: dict[str, Any] = json.loads(done.stdout)
    return plan


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_uncommitted_change_where_the_definitions_look_counts(tmp_path: Path, case: str) -> None:
    repo = _repo(tmp_path)
    change, expected = CASES[case]
    change(repo)

    plan = _plan(repo)

    changed = {name: " / ".join(reasons) for name, reasons in plan["changedAgents"].items()}
    assert changed.keys() == expected.keys(), changed
    for name, reason in expected.items():
        assert reason in changed[name], changed
    assert {row["name"] for row in plan["evals"]} == {f"{name}-eval" for name in expected}


def test_a_definition_deleted_from_the_working_tree_is_a_removed_agent(tmp_path: Path) -> None:
    """The head names no file of it any more: the definitions' folders are asked of git."""
    repo = _repo(tmp_path)
    (repo.path / "agents" / "bot.yaml").unlink()

    plan = _plan(repo)

    assert plan["changedAgents"] == {}
    assert plan["notRun"] == {"bot-eval": "agent bot was removed"}


def test_changes_the_definitions_do_not_name_change_nothing(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _write(repo, "src/pkg1/mod1.py", "v = 100\n")
    _write(repo, "src/pkg2/untracked.py", "w = 1\n")
    _write(repo, "notes/todo.txt", "later\n")

    plan = _plan(repo)

    assert plan["changedAgents"] == {}
    assert plan["evals"] == []
