"""A program run as `python3 -m agent.main` imports from the repository's root first (Python
puts the working directory at the head of its path): a module the pull request adds there
(`textwrap.py`) takes the place of the one the program imports. The agent reads the root's
modules, so it counts as changed, its Evals run, and no result of the base answers its
head runs."""

from __future__ import annotations

import json

import pytest

from evalward.plan.fingerprint import imports_from_root
from evalward.resources.agents.agent import AgentSpec
from fakes.github_api import FakeGitHub, FakePull
from support.actionrun import pull_request_event, run_action
from support.documents import documents, labelled_suite
from support.gitrepo import GitRepo
from support.suite import answered

pytestmark = pytest.mark.hostile

PYTHON = json.dumps("/usr/bin/python3")

AGENT = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: writer }}
spec:
  runtime: {{ command: [{PYTHON}, -m, agent.main] }}
  watch: [agent/**]
"""

PROGRAM = """\
import json, sys, textwrap
sys.stdin.readline()
print(json.dumps({"type": "final", "content": textwrap.dedent("  GOOD")}), flush=True)
"""

ECHO = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: echo }}
spec:
  runtime: {{ command: [{PYTHON}, echo/echo.py] }}
"""
"""Another agent, whose program names no `watch`: it reads every file of the checkout."""

ECHO_PROGRAM = """\
import json, sys
sys.stdin.readline()
print(json.dumps({"type": "final", "content": "ok"}), flush=True)
"""

EXTRA = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: extra, labels: { agent: writer } }
spec:
  targetAgent: writer
  input: { type: prompt, payload: { prompt: again } }
  assertions:
    - { type: contains, value: GOOD }
"""


def test_a_module_added_at_the_root_changes_an_agent_run_with_dash_m(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str]
) -> None:
    """The pull request adds `textwrap.py` at the root, whose `dedent` says BAD, and a fixture
    so that the writer's Eval runs: the writer changed, and its head run of `answers` is
    its own, not the base's cached pass."""
    base = repo.commit(
        "a writer and an echo",
        {
            "agents/writer.yaml": AGENT,
            "agent/__init__.py": "",
            "agent/main.py": PROGRAM,
            "agents/echo.yaml": ECHO,
            "echo/echo.py": ECHO_PROGRAM,
            "evals/writer.yaml": labelled_suite(
                "writer", "answers", "hi", "{ type: contains, value: GOOD }"
            ),
            "evals/echo.yaml": labelled_suite(
                "echo", "echoes", "hi", "{ type: contains, value: ok }"
            ),
        },
    )
    repo.branch("feature")
    head = repo.commit(
        "a helper module, and a fixture",
        {
            "textwrap.py": 'def dedent(text):\n    return "BAD"\n',
            "evals/extra.yaml": documents(EXTRA),
        },
    )
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))

    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )

    results = run.results()
    assert "writer" in results["changedAgents"], run.stdout + run.stderr
    sides = answered(results, "answers")
    assert sides == {"base": ("GOOD", False), "head": ("BAD", False)}, sides
    assert run.returncode == 1, run.stdout + run.stderr


@pytest.mark.parametrize(
    ("argv", "from_root"),
    [
        (["python3", "-m", "agent.main"], True),
        (["/usr/bin/python3.12", "-u", "-X", "utf8", "-m", "agent"], True),
        (["python", "-c", "import agent"], True),
        (["python3", "-Im", "agent.main"], False),
        (["python3", "-P", "-m", "agent.main"], False),
        (["python3", "agent/main.py", "-m", "x"], False),
        (["node", "-m", "x"], False),
        (["uv", "run", "python", "-m", "agent.main"], True),
        (["uv", "run", "-m", "agent.main"], True),
        (["poetry", "run", "python3", "-c", "import agent"], True),
        (["uv", "run", "python", "agent/main.py"], False),
        (["uv", "run", "python", "-I", "-m", "agent"], False),
    ],
)
def test_which_programs_import_from_the_root(argv: list[str], from_root: bool) -> None:
    """`-m` and `-c` put the working directory first, `-I` and `-P` keep it off; a script's
    own folder is first instead, and only Python is asked."""
    spec = AgentSpec.model_validate({"runtime": {"command": argv}, "watch": ["agent/**"]})
    assert imports_from_root(spec) is from_root
