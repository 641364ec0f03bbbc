"""A tool with neither `mock` nor `command` has nothing to answer its call but an error, which
the model reads as the tool's result: it passed `validate` without a word and showed only
inside a run's trace. `validate` and a run warn at the tool's line where a fixture run
against its agent neither shadows nor replays it (a warning: an imported promptfoo suite's
tools are answered so by design); where every fixture stands in for it (`shadowTools`,
`toolReplay`), the evals never call it, and nothing is said."""

from __future__ import annotations

import pytest

from support.clirun import evalward, initialised
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

UNANSWERED = """\
    - name: cancel_order
      description: Cancel an order.
"""
MOCK_SCRIPT = "evals/mock-replies.yaml"


def with_tool(repo: GitRepo) -> int:
    """`repo` made by `evalward init`, its agent given a tool with no implementation; the
    tool's line."""
    initialised(repo)
    agent = repo.path / "agents/assistant.yaml"
    text = agent.read_text(encoding="utf-8")
    agent.write_text(text + UNANSWERED, encoding="utf-8")
    return len(text.splitlines()) + 1


def run(repo: GitRepo) -> tuple[int, str]:
    done = evalward(
        "run", ".", "--mock-script", MOCK_SCRIPT, "--no-history", "--no-cache", cwd=repo.path
    )
    assert "Traceback" not in done.stderr
    return done.returncode, done.stdout + done.stderr


def test_a_tool_nothing_answers_is_told_at_its_line_by_validate_and_run(repo: GitRepo) -> None:
    line = with_tool(repo)
    repo.commit("a tool with no implementation")

    validated = evalward("validate", ".", cwd=repo.path)

    assert validated.returncode == 0, validated.stdout + validated.stderr
    (warning,) = [w for w in validated.stdout.splitlines() if "agents/assistant.yaml" in w]
    where = f"warning: agents/assistant.yaml:{line}:7: spec.tools[1]: tool 'cancel_order' has "
    assert warning.startswith(where), warning
    assert "neither `mock` nor `command`" in warning
    assert "`shadowTools`" in warning and "`toolReplay`" in warning
    code, said = run(repo)
    assert code == 0, said
    assert f"agents/assistant.yaml:{line}:7: spec.tools[1]: tool 'cancel_order'" in said


def test_a_tool_every_fixture_stands_in_for_needs_no_implementation(repo: GitRepo) -> None:
    with_tool(repo)
    evals = repo.path / "evals/assistant.yaml"
    text = evals.read_text(encoding="utf-8")
    stood_in = text.replace(
        "  targetAgent: assistant\n  severity: high\n",
        "  targetAgent: assistant\n  severity: high\n  shadowTools: [cancel_order]\n",
    ).replace(
        "  kind: edge\n",
        "  kind: edge\n  toolReplay: [{ tool: cancel_order, output: cancelled }]\n",
    )
    assert stood_in.count("cancel_order") == 2
    evals.write_text(stood_in, encoding="utf-8")
    repo.commit("every fixture stands in for the tool")

    validated = evalward("validate", ".", cwd=repo.path)

    assert validated.returncode == 0, validated.stderr
    assert validated.stdout == "1 agents, 2 fixtures, 1 evals OK\n"
    assert "cancel_order" not in validated.stdout + validated.stderr
    code, said = run(repo)
    assert code == 0, said
    assert "cancel_order" not in said
