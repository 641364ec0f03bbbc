"""Every reference a pairwise judge makes is checked before any model is called, run as
GitHub runs the action on a pull request: an unknown provider for `pairwise.model`, a missing
rubric and a misspelled calibration each end the run with exit 2 and one message at their
line, and the model server is never asked anything (not the agent, not the judge, not the
calibration). A pairwise judge on a provider whose key is missing is refused before any call
too, and `evalward validate` says all of it in the same words."""

from __future__ import annotations

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer, text
from scoring.judges.test_pairwise_gate import CALIBRATION, GOOD, RUBRIC
from support.actionrun import ActionRun, pull_request_event, run_action
from support.clirun import evalward
from support.documents import documents
from support.gitrepo import GitRepo
from support.greeter import greeter_agent, greeter_eval, greeting_fixture
from support.suite import provider_env

pytestmark = pytest.mark.e2e


def suite(system: str, pairwise: str, *, fixture_pairwise: str = "") -> str:
    """The greeter, its Eval judged by `judge: { model: openai/gpt-4.1-mini, pairwise }`
    and the calibration `greeting-pairs`."""
    fixture = greeting_fixture("{ type: contains, value: Hello }") + fixture_pairwise
    return documents(
        greeter_agent("openai/gpt-4.1-mini", system),
        fixture,
        greeter_eval(
            f"judge: {{ model: openai/gpt-4.1-mini, pairwise: {pairwise} }}",
            "execution: { repsPerFixture: 4 }",
        ),
        CALIBRATION,
    )


def gate(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    pairwise: str,
    *,
    env: dict[str, str] | None = None,
) -> ActionRun:
    """A pull request that changes the greeter's prompt, on a main whose Eval has the
    pairwise judge `pairwise`."""
    base = repo.commit("a greeter", {"greeter.yaml": suite("Greet warmly.", pairwise)})
    repo.branch("feature")
    head = repo.commit("a terser greeter", {"greeter.yaml": suite("Greet tersely.", pairwise)})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    model.script("Greet", text(GOOD))
    event = pull_request_event(github.repository, 7, base, head)
    return run_action(repo.path, github, event, env=env or provider_env(model))


def refused(run: ActionRun, model: ScriptedModelServer, expected: str) -> None:
    """The run ended with exit 2 and `expected` (a located problem, from its start) among its
    errors, before any model call."""
    assert run.returncode == 2, run.stdout + run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    errors = [line.removeprefix("::error::").strip() for line in run.stderr.splitlines()]
    assert any(line.startswith(expected) for line in errors), run.stderr
    assert model.requests == [], [r.get("model") for r in model.requests]


@pytest.mark.parametrize(
    ("pairwise", "expected"),
    [
        (
            f"{{ rubric: {RUBRIC}, model: gemini/flash, calibration: greeting-pairs }}",
            "greeter.yaml:23:122: spec.judge.pairwise.model: model 'gemini/flash': unknown "
            "provider 'gemini'",
        ),
        (
            "{ calibration: greeting-pairs }",
            "greeter.yaml:23:40: spec.judge.pairwise: Eval 'greeter-eval' judges fixtures "
            "pairwise, and no rubric says what makes one run better for 'greeting' "
            "(greeter.yaml:8)",
        ),
        (
            f"{{ rubric: {RUBRIC}, calibration: greeting-pair }}",
            "greeter.yaml:23:122: spec.judge.pairwise.calibration: Eval 'greeter-eval' names "
            "JudgeCalibration 'greeting-pair' for its pairwise judge, which is not defined "
            "(did you mean 'greeting-pairs'?)",
        ),
    ],
    ids=["unknown-provider", "no-rubric", "misspelled-calibration"],
)
def test_a_pairwise_judges_broken_reference_stops_the_gate_before_any_model_call(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    pairwise: str,
    expected: str,
) -> None:
    run = gate(repo, github, model, pairwise)
    refused(run, model, expected)

    validated = evalward("validate", ".", cwd=repo.path)
    assert validated.returncode == 2, validated.stdout
    assert expected in validated.stderr


def test_a_pairwise_judge_whose_key_is_missing_is_refused_before_any_model_call(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    pairwise = (
        f"{{ rubric: {RUBRIC}, model: anthropic/claude-haiku-4-5, calibration: greeting-pairs }}"
    )
    run = gate(repo, github, model, pairwise)

    assert run.returncode != 0, run.stdout + run.stderr
    assert "ANTHROPIC_API_KEY" in run.stdout + run.stderr
    assert model.requests == [], [r.get("model") for r in model.requests]


def test_validate_warns_of_a_misspelled_pairwise_model_as_of_any_judges(repo: GitRepo) -> None:
    pairwise = f"{{ rubric: {RUBRIC}, model: openai/gpt-4.1-mni, calibration: greeting-pairs }}"
    repo.commit("a greeter", {"greeter.yaml": suite("Greet warmly.", pairwise)})

    done = evalward("validate", ".", cwd=repo.path)

    assert done.returncode == 0, done.stderr  # a warning: the model may be newer than evalward
    warnings = [line for line in done.stdout.splitlines() if "pairwise" in line]
    assert len(warnings) == 1, done.stdout
    assert warnings[0].startswith(
        "warning: greeter.yaml:23:122: spec.judge.pairwise.model: no provider knows the model "
        "'openai/gpt-4.1-mni'"
    ), warnings
    assert "Did you mean 'openai/gpt-4.1-mini'?" in warnings[0]
