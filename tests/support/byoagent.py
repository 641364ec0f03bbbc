"""Bring-your-own agents in the action: the Python the agent user may run, a one-agent suite
around an agent program, and the pull request that changes that program."""

from __future__ import annotations

import sys
from pathlib import Path

from fakes.github_api import FakeGitHub, FakePull
from support.actionrun import ActionRun, pull_request_event, run_action
from support.gitrepo import GitRepo

SYSTEM_PYTHON = "/usr/bin/python3"


def runnable_by_all(program: str) -> bool:
    """Whether a user other than this one can run `program` (every directory on the way open)."""
    path = Path(program).resolve()
    if not path.is_file() or not path.stat().st_mode & 0o001:
        return False
    return all(parent.stat().st_mode & 0o001 for parent in path.parents)


def agent_python() -> tuple[str, str]:
    """The Python an agent runs with in the action and the `agent-isolation` that allows it:
    the system's as another user where that user may run it (the agents use the standard
    library only), else this one's with isolation off."""
    if runnable_by_all(SYSTEM_PYTHON):
        return SYSTEM_PYTHON, "user"
    return sys.executable, "off"


def one_agent_suite(
    agent: str, fixture: str, *, command: str, prompt: str, assertion: str, eval_spec: str = ""
) -> str:
    """An Agent run by `command`, watching agent/*.py, its Eval `<agent>-eval` (with the spec
    line `eval_spec` too, when one is given: a judge, a timeout) and one fixture giving it
    `prompt` and checking `assertion` (a flow mapping)."""
    eval_line = f"  {eval_spec}\n" if eval_spec else ""
    return f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: {agent} }}
spec:
  runtime:
    command: {command}
  watch: [agent/*.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: {agent}-eval }}
spec:
  targetAgent: {agent}
  fixtures: [{fixture}]
{eval_line}---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {fixture} }}
spec:
  targetAgent: {agent}
  input: {{ type: prompt, payload: {{ prompt: "{prompt}" }} }}
  assertions:
    - {assertion}
"""


def pr_tuning(
    repo: GitRepo, github: FakeGitHub, number: int, files: dict[str, str], program: str
) -> tuple[str, str]:
    """Commit `files` as the base, then on a feature branch a head that only appends a
    comment to `program`, and open pull request `number` for it: (base, head)."""
    base = repo.commit("the agent", files)
    repo.branch("feature")
    head = repo.commit("tuned", {program: files[program] + "\n# tuned\n"})
    github.add_pull(FakePull(number=number, head_sha=head, base_sha=base))
    return base, head


def gate_program_change(
    repo: GitRepo, github: FakeGitHub, name: str, base: str, head: str
) -> ActionRun:
    """A command agent `name` (its program `agent/<name>.py`, asked "ask", passing when its
    answer holds "answer") whose pull request #9 changes its program from `base` to `head`,
    gated by the action, as the agent user where the machine has one."""
    python, isolation = agent_python()
    suite = one_agent_suite(
        name,
        "ask",
        command=f"[{python}, agent/{name}.py]",
        prompt="ask",
        assertion="{ type: contains, value: answer }",
    )
    before = repo.commit("the agent", {"agents.yaml": suite, f"agent/{name}.py": base})
    repo.branch("feature")
    after = repo.commit("the change", {f"agent/{name}.py": head})
    github.add_pull(FakePull(number=9, head_sha=after, base_sha=before))
    return run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 9, before, after),
        env={"OPENAI_API_KEY": "sk-unused-0123456789"},
        inputs={"cache": "off", "agent-isolation": isolation},
    )
