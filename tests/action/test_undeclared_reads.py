"""A pull request that breaks what a program agent reads without naming it in a way change
detection once missed: a script named with no extension or a module run with `-m` (its
`watch` covering neither), a module the program imports where it declares no `watch` at
all. Each changes the agent, so its Eval runs and the gate fails; a result of the base's
program is never the head's."""

from __future__ import annotations

import json

import pytest

from fakes.github_api import FakeGitHub, FakePull
from support.actionrun import pull_request_event, run_action
from support.documents import labelled_suite
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

GOOD = (
    'import json, sys\nsys.stdin.read()\nprint(json.dumps({"type": "final", "content": "hello"}))\n'
)
BAD = GOOD.replace('"hello"', '"go away"')
SUITE = labelled_suite("pr-agent", "greets", "hi", "{ type: contains, value: hello }")
WAVES = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: waves, labels: { agent: pr-agent } }
spec:
  targetAgent: pr-agent
  input: { type: prompt, payload: { prompt: wave } }
  assertions:
    - { type: contains, value: o }
"""
"""A fixture the pull request adds to the agent's Eval: it makes the Eval run whatever the
change detection says of the agent."""


def agent(argv: list[str], watch: list[str]) -> str:
    return (
        "apiVersion: evalward.dev/v1\nkind: Agent\nmetadata: { name: pr-agent }\n"
        f"spec:\n  runtime: {{ command: {{ run: {json.dumps(argv)} }} }}\n"
        f"  watch: {json.dumps(watch)}\n"
    )


IMPORTING = "from helper import answer\nanswer()\n"
HELPER = f"def answer():\n{''.join('    ' + line + chr(10) for line in GOOD.splitlines())}"

CASES = {
    "a script with no extension": (
        ["/usr/bin/python3", "agentmain"],
        ["prompts/**"],
        {"agentmain": GOOD},
    ),
    "a module run with -m": (
        ["/usr/bin/python3", "-m", "agentpkg.cli"],
        ["prompts/**"],
        {"agentpkg/__init__.py": "", "agentpkg/cli.py": GOOD},
    ),
    "a module imported from a folder no watch names": (
        ["/usr/bin/python3", "bot/main.py"],
        [],
        {
            "bot/main.py": "import sys\nsys.path.insert(0, 'lib')\n" + IMPORTING,
            "lib/helper.py": HELPER,
        },
    ),
}


def _broken(files: dict[str, str]) -> dict[str, str]:
    """The pull request's change: the file that says "hello" says "go away"."""
    return {
        path: text.replace('"hello"', '"go away"')
        for path, text in files.items()
        if '"hello"' in text
    }


@pytest.mark.parametrize("case", sorted(CASES))
def test_breaking_what_the_program_reads_runs_its_eval_and_fails(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str], case: str
) -> None:
    argv, watch, files = CASES[case]
    base = repo.commit(
        "agent", {"agents/a.yaml": agent(argv, watch), "evals/a.yaml": SUITE, **files}
    )
    repo.branch("feature")
    head = repo.commit("break the agent", _broken(files))
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))

    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    changed = run.results()["changedAgents"]["pr-agent"]
    assert any("changed" in why for why in changed), changed


def test_a_program_with_no_watch_never_reads_the_bases_cached_pass(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str]
) -> None:
    """The base's run of `greets` fills the cache; the head breaks only the module its
    program imports, and adds a fixture. The head's `greets` runs its own program."""
    argv, watch, files = CASES["a module imported from a folder no watch names"]
    base = repo.commit(
        "agent", {"agents/a.yaml": agent(argv, watch), "evals/a.yaml": SUITE, **files}
    )
    repo.branch("feature")
    head = repo.commit(
        "break the helper, add a fixture", {**_broken(files), "evals/waves.yaml": WAVES}
    )
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    event = pull_request_event(github.repository, 7, base, head)

    run = run_action(repo.path, github, event, env=env)

    assert run.returncode == 1, run.stdout + run.stderr
    greets = [
        (f["side"], f["status"], bool(f.get("cached")))
        for f in run.results()["fixtures"]
        if f["fixture"] == "greets"
    ]
    assert sorted(greets) == [("base", "pass", False), ("head", "fail", False)], greets
    why = run.results()["changedAgents"]["pr-agent"]
    assert any("names no `watch`: any file may change it" in w for w in why), why
