"""YAML's double-quoted `\\0` is a NUL character: a pull request whose agent's command tool is
`["python3\\0", tools/t.py]` or `[python3, "tools/t.py\\0"]` reached the preflight's program
check, where the path went to an OS call (the working tree's `resolve`, `git ls-tree -- PATH`)
that raised ValueError: embedded null byte, and the run ended as an internal error with a
traceback (exit 4). No file is named with a NUL: the program is refused at the field's YAML
line as one the repository does not hold (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from action.test_gate_evasion import gate
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.clirun import evalward
from support.documents import documents
from support.gitrepo import GitRepo
from support.greeter import greeter_agent, greeter_eval, greeting_fixture
from support.suite import HEAD_PROMPT, SUPPORT_BOT, make_pr, script_model

pytestmark = pytest.mark.hostile

MOCK = """\
replies:
  - match: { agent: greeter }
    always: { content: "Hello there" }
"""


def suite(tools: str = "") -> str:
    return documents(
        greeter_agent("openai/gpt-4.1-mini") + tools,
        greeter_eval(),
        greeting_fixture("{ type: contains, value: Hello }"),
    )


@pytest.mark.parametrize(
    "argv",
    [r'["python3\0", tools/t.py]', r'[python3, "tools/t.py\0"]'],
    ids=["program", "script"],
)
def test_a_nul_in_a_command_tools_path_is_refused_at_its_line(
    repo: GitRepo, tmp_path: Path, argv: str
) -> None:
    repo.commit(
        "a greeter", {"greeter.yaml": suite(), "mock.yaml": MOCK, ".gitignore": ".evalward/\n"}
    )
    repo.branch("tools")
    tools = f"  tools:\n    - name: lookup\n      description: Look up.\n      command: {argv}\n"
    repo.commit("a tool", {"greeter.yaml": suite(tools), "tools/t.py": "print('{}')\n"})

    done = evalward(
        "run", "--base", "main", "--mock-script", "mock.yaml", "--output-dir",
        str(tmp_path / "out"), cwd=repo.path,
    )  # fmt: skip

    said = done.stdout + done.stderr
    assert "internal error" not in said and "Traceback" not in said, said[-2500:]
    assert done.returncode == 2, said[-2500:]


def test_in_the_action_too(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, _ = make_pr(repo, github)
    agent = SUPPORT_BOT.format(prompt=HEAD_PROMPT).replace(
        "  tools:\n",
        '  tools:\n    - { name: probe, description: Probe., command: ["python3\\0", t.py] }\n',
        1,
    )
    head = repo.commit("a tool", {"agents/support-bot.yaml": agent, "t.py": "print('{}')\n"})
    github.pulls[7].head_sha = head
    script_model(model, head_greets_well=True)

    run = gate(repo, github, base, head, env)

    output = run.stdout + run.stderr
    assert "internal error" not in output and "Traceback" not in output, output[-3000:]
    assert run.returncode == 2, output[-3000:]


def test_a_nul_in_a_programs_argument_is_refused_before_anything_runs(repo: GitRepo) -> None:
    """Not a path, an argument (`python3 -c "…\\0"`): validate passed it, and every run of the
    agent failed to start ("embedded null byte"); it is refused at its line as a path is."""
    tools = (
        "  tools:\n    - name: lookup\n      description: Look up.\n"
        '      command: [python3, -c, "print(1)\\0"]\n'
    )
    repo.commit("a tool", {"greeter.yaml": suite(tools), "mock.yaml": MOCK})

    done = evalward("validate", cwd=repo.path)

    said = done.stdout + done.stderr
    assert done.returncode == 2, said[-2500:]
    assert "greeter.yaml:" in said and "spec.tools[0].command" in said, said[-2500:]
    assert "argument 2 of the command tool 'lookup' holds a NUL character" in said, said
