"""Checks across the resources of a tree (`resources/references.py`), asked of what a real
tree loads: an Eval's agent, fixtures and calibration exist, it selects a fixture and has a
judge for its judge assertions, and the files and programs an Agent names are in the
repository; each problem at the field that holds it, with the nearest name."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalward.definitions.loader import load_what_loads
from evalward.files.committed import RepoFiles
from evalward.git import Git
from evalward.resources.reading.yamlsource import PathKey
from evalward.resources.references import FROM_ROOT, check_references
from support.gitrepo import GitRepo
from support.reported import Reported

pytestmark = pytest.mark.unit

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: support-bot }
spec: { models: [openai/gpt-4.1-mini], systemFile: prompts/bot.md }
"""
FIXTURE = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: order-status, labels: { agent: support-bot } }
spec:
  targetAgent: support-bot
  input: { type: prompt, payload: { prompt: Where is my order? } }
  assertions: [{ type: judge, rubric: Gives the status. }]
"""
EVAL = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: bot-eval }
spec:
  targetAgent: support-bot
  fixtureSelector: { matchLabels: { agent: support-bot } }
  judge: { model: openai/gpt-4.1-mini }
"""


def checked(root: Path, files: dict[str, str]) -> list[tuple[str, PathKey, str]]:
    """The tree of `files`, committed, loaded as far as it loads, then checked: each
    problem's resource, field and message (a warning is a test's failure too)."""
    repo = GitRepo(root)
    repo.commit("a suite", {"prompts/bot.md": "You are Jane.\n", **files})
    resources, _ = load_what_loads(root)
    reported = Reported()
    check_references(resources, reported)
    assert reported.warnings == []
    return [(r.name, r.loc, r.message) for r in reported.problems]


def test_a_tree_whose_references_all_resolve_has_no_problem(tmp_path: Path) -> None:
    assert checked(tmp_path, {"suite.yaml": "---\n".join([AGENT, FIXTURE, EVAL])}) == []


def test_an_agent_that_is_not_defined_is_named_with_the_nearest(tmp_path: Path) -> None:
    other = EVAL.replace("targetAgent: support-bot", "targetAgent: suport-bot")
    reported = checked(tmp_path, {"suite.yaml": "---\n".join([AGENT, FIXTURE, other])})
    assert reported == [
        (
            "bot-eval",
            ("spec", "targetAgent"),
            "Eval 'bot-eval' targets agent 'suport-bot', which is not defined (did you mean "
            "'support-bot'?)",
        )
    ]


def test_judge_assertions_under_an_eval_with_no_judge_are_refused(tmp_path: Path) -> None:
    unjudged = EVAL.replace("  judge: { model: openai/gpt-4.1-mini }\n", "")
    reported = checked(tmp_path, {"suite.yaml": "---\n".join([AGENT, FIXTURE, unjudged])})
    ((name, where, message),) = reported
    assert (name, where) == ("bot-eval", ("spec",))
    assert message.startswith(
        "Eval 'bot-eval' sets no spec.judge.model, and the fixtures it selects have judge "
        "assertions that nothing could score: 'order-status' (suite.yaml:"
    )


def test_an_eval_that_selects_no_fixture_says_how_to_select_one(tmp_path: Path) -> None:
    other = EVAL.replace("{ agent: support-bot }", "{ agent: billing }")
    suite = {"suite.yaml": "---\n".join([AGENT, FIXTURE, other]), "prompts/bot.md": "Jane.\n"}
    GitRepo(tmp_path).commit("a suite", suite)
    resources, _ = load_what_loads(tmp_path)
    reported = Reported()
    check_references(resources, reported)
    ((name, where, message),) = [(r.name, r.loc, r.message) for r in reported.problems]
    assert (name, where) == ("bot-eval", ("spec", "fixtureSelector", "matchLabels"))
    assert "no EvalFixture has the labels {'agent': 'billing'}, so a run would score nothing" in (
        message
    )
    # and the fixture it was meant to select, a warning naming what the Eval selects
    ((fixture, at, unselected),) = [(r.name, r.loc, r.message) for r in reported.warnings]
    assert (fixture, at) == ("order-status", ("metadata", "name"))
    assert "is selected by no Eval, so no run runs it" in unselected
    assert "(Eval 'bot-eval' selects the labels {'agent': 'billing'})" in unselected


def test_a_system_file_that_is_not_there_and_a_program_outside_are_refused(
    tmp_path: Path,
) -> None:
    agent = AGENT.replace(
        "prompts/bot.md }",
        "prompts/jane.md,\n  tools: [{ name: refund, command: [../refund.sh] }] }",
    )
    reported = checked(tmp_path, {"suite.yaml": "---\n".join([agent, FIXTURE, EVAL])})
    assert reported == [
        (
            "support-bot",
            ("spec", "systemFile"),
            f"the file 'prompts/jane.md' does not exist{FROM_ROOT}",
        ),
        (
            "support-bot",
            ("spec", "tools", 0, "command"),
            "the program '../refund.sh' leaves the repository; run a program inside it, or one "
            "on PATH by its name",
        ),
    ]


OTHER_BOT = AGENT.replace("name: support-bot", "name: other-bot")


def test_an_eval_that_selects_a_fixture_for_another_agent_is_refused_at_its_selector(
    tmp_path: Path,
) -> None:
    """A run would run the fixture with the Eval's agent while its tool names are read as
    the other agent's: the Eval's selector is where the mistake is told, with the fixture's
    place and what to write."""
    other = FIXTURE.replace("targetAgent: support-bot", "targetAgent: other-bot")
    repo = GitRepo(tmp_path)
    repo.commit(
        "a fixture for another agent",
        {
            "prompts/bot.md": "You are Jane.\n",
            "agents.yaml": "---\n".join([AGENT, OTHER_BOT]),
            "evals/order-status.yaml": other,
            "evals/bot.yaml": EVAL,
        },
    )
    _, problems = load_what_loads(tmp_path)
    assert [p.render() for p in problems] == [
        "evals/bot.yaml:6:22: spec.fixtureSelector.matchLabels: Eval 'bot-eval' (agent "
        "support-bot) selects fixture 'order-status' (evals/order-status.yaml:1), whose "
        "targetAgent is other-bot: an Eval runs every fixture it selects with its own agent; "
        "give the fixture the labels of its own agent's Eval (or list it there), or "
        "`targetAgent: support-bot` if it is written for support-bot"
    ]


def test_a_fixture_listed_by_an_eval_of_another_agent_is_refused_at_its_entry(
    tmp_path: Path,
) -> None:
    other = FIXTURE.replace("targetAgent: support-bot", "targetAgent: other-bot").replace(
        "labels: { agent: support-bot }", "labels: { agent: other-bot }"
    )
    listing = EVAL.replace(
        "fixtureSelector: { matchLabels: { agent: support-bot } }", "fixtures: [order-status]"
    )
    reported = checked(tmp_path, {"suite.yaml": "---\n".join([AGENT, OTHER_BOT, other, listing])})
    ((name, where, message),) = reported
    assert (name, where) == ("bot-eval", ("spec", "fixtures", 0))
    assert message.startswith(
        "Eval 'bot-eval' (agent support-bot) selects fixture 'order-status' (suite.yaml:11), "
        "whose targetAgent is other-bot"
    )


def test_an_agentv_test_of_the_default_target_runs_with_the_agent_of_the_eval_that_selects_it(
    tmp_path: Path,
) -> None:
    agentv = (
        "evalcases:\n  - id: status\n    expected_outcome: Gives the status.\n"
        "    input: Where is my order?\n"
    )
    selecting = EVAL.replace("{ agent: support-bot }", "{ agent: default }")
    assert (
        checked(tmp_path, {"suite.yaml": "---\n".join([AGENT, selecting]), "a.eval.yaml": agentv})
        == []
    )


@pytest.mark.parametrize(
    ("script", "first_line", "example"),
    [
        ("tools/t.sh", "#!/bin/sh", ", e.g. `[sh, ./tools/t.sh]`"),
        ("tools/serve", "#!/usr/bin/env -S node --no-warnings", ", e.g. `[node, ./tools/serve]`"),
        ("tools/agent.py", "import sys", ", e.g. `[python3, ./tools/agent.py]`"),
        ("tools/agent", "echo hi", ""),
    ],
)
@pytest.mark.parametrize("side", ["working tree", "commit"])
def test_a_program_that_is_not_executable_is_shown_run_by_the_interpreter_it_names(
    tmp_path: Path, script: str, first_line: str, example: str, side: str
) -> None:
    """The example is the script's own interpreter, from its committed `#!` line or else its
    extension; a script that says neither gets no example, not a wrong one."""
    repo = GitRepo(tmp_path)
    agent = AGENT.replace(
        "spec: { models: [openai/gpt-4.1-mini], systemFile: prompts/bot.md }",
        f"spec:\n  runtime:\n    command: {{ run: [./{script}] }}",
    )
    head = repo.commit(
        "an agent whose program is not executable",
        {
            script: f"{first_line}\necho '{{}}'\n",
            "suite.yaml": "---\n".join([agent, FIXTURE, EVAL]),
        },
    )
    door = RepoFiles.at_commit(Git(tmp_path), head) if side == "commit" else None
    _, problems = load_what_loads(tmp_path, door=door)
    assert [p.message for p in problems] == [
        f"the program './{script}' is not executable; `chmod +x ./{script}` (and commit it), "
        f"or run it through its interpreter{example}"
    ]


CALIBRATION = """\
apiVersion: evalward.dev/v1
kind: JudgeCalibration
metadata: { name: warmth }
spec:
  rubric: Which reply is warmer?
  judgeModels: [openai/gpt-4.1-mini]
  pairs:
    - { input: hi, outputA: Hello!, outputB: What., humanPreference: A }
"""


@pytest.mark.parametrize(
    ("rubric", "warned"),
    [("Which  reply  is warmer? ", False), ("Which reply is longer?", True)],
    ids=["the calibration's, spaced otherwise", "another question"],
)
def test_a_pairwise_judge_asked_another_rubric_than_its_calibration_s_is_warned_of(
    tmp_path: Path, rubric: str, warned: bool
) -> None:
    """Its calibration's κ, which lets it gate, measured the judge on the calibration's
    rubric; asked another question, that agreement vouches for nothing it is asked."""
    pairwise = (
        "  judge:\n    model: openai/gpt-4.1-mini\n"
        f"    pairwise: {{ rubric: {rubric!r}, calibration: warmth }}\n"
    )
    suite = EVAL.replace("  judge: { model: openai/gpt-4.1-mini }\n", pairwise)
    files = {
        "suite.yaml": "---\n".join([AGENT, FIXTURE, suite, CALIBRATION]),
        "prompts/bot.md": "Jane.\n",
    }
    GitRepo(tmp_path).commit("a suite", files)
    resources, _ = load_what_loads(tmp_path)
    reported = Reported()
    check_references(resources, reported)
    assert reported.problems == []
    said = [(r.name, r.loc, r.message) for r in reported.warnings]
    if not warned:
        assert said == []
        return
    ((name, at, message),) = said
    assert (name, at) == ("bot-eval", ("spec", "judge", "pairwise", "rubric"))
    assert message.startswith(
        "Eval 'bot-eval' asks its pairwise judge another rubric than JudgeCalibration "
        "'warmth' (suite.yaml:"
    )
    assert "for 'order-status' (suite.yaml:" in message
