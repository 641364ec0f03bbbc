"""`scoring: { passThreshold: 0 }` under fixed reps: every score reaches it, so the Eval
passed with every fixture failing, and nothing said so. `validate` and a run warn at the
field. Beside `failOnRegression`, a threshold of 0 leaves the gate to regressions on purpose,
and nothing is said (adaptive reps do not read it, which is told apart:
tests/resources/test_unread_settings.py). A fixture's own `passThreshold: 0` passes each of
its runs, and is told the same way, unless its `scoringFunction` decides them."""

from __future__ import annotations

import pytest

from support.clirun import evalward, initialised
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

ADAPTIVE = "  execution: { reps: { min: 1, max: 8 } }\n"


SEVERITY = "  severity: high\n"


@pytest.mark.parametrize(
    ("before", "zero", "told"),
    [
        (
            ADAPTIVE,
            "  scoring: { passThreshold: 0 }",
            ":14: spec.scoring.passThreshold: Eval 'assistant-eval' has passThreshold 0, which "
            "every score reaches: it passes whatever its fixtures score",
        ),
        (
            SEVERITY,
            SEVERITY + "  passThreshold: 0",
            ":3: spec.passThreshold: fixture 'assistant-order-status' has passThreshold 0, "
            "which every run's score reaches: its runs pass whatever its assertions find",
        ),
    ],
    ids=["the Eval's", "a fixture's"],
)
def test_a_zero_pass_threshold_is_told_at_its_line_by_validate_and_run(
    repo: GitRepo, before: str, zero: str, told: str
) -> None:
    """Either decides nothing: the Eval's passes it whatever its fixtures score; a fixture's
    passes each of its runs whatever its assertions find, so the head could break every
    check of it and neither side would fail or regress."""
    initialised(repo)
    evals = repo.path / "evals/assistant.yaml"
    text = evals.read_text(encoding="utf-8")
    assert text.count(before) == 1 and text.count("value: shipped") == 1
    zeroed = text.replace(before, zero + "\n")
    evals.write_text(zeroed.replace("value: shipped", "value: never said"), encoding="utf-8")
    repo.commit("a threshold every score reaches, and a check the fixture fails")
    line = zeroed.splitlines().index(zero.splitlines()[-1]) + 1

    validated = evalward("validate", ".", cwd=repo.path)

    assert validated.returncode == 0, validated.stderr
    (warning,) = [w for w in validated.stdout.splitlines() if w.startswith("warning")]
    assert warning.startswith(f"warning: evals/assistant.yaml:{line}{told}"), warning
    ran = evalward(
        "run",
        ".",
        "--mock-script",
        "evals/mock-replies.yaml",
        "--no-history",
        "--no-cache",
        cwd=repo.path,
    )
    said = ran.stdout + ran.stderr
    assert "Traceback" not in said
    # the Eval's: the fixture fails and the Eval passes; a fixture's: its run passes
    outcome = "pass" if before == SEVERITY else "fail"
    assert f"assistant-order-status #0: {outcome}" in said
    assert f"evals/assistant.yaml:{line}{told.partition(' has ')[0]}" in said


@pytest.mark.parametrize(
    "rule",
    [
        "  scoring: { passThreshold: 0, gate: { failOnRegression: significant } }\n",
        "  execution: { repsPerFixture: 3 }\n  scoring: { passThreshold: 0, minPassHatK: 1.0 }\n",
    ],
    ids=["a regression rule", "pass^k"],
)
def test_a_zero_pass_threshold_beside_another_rule_is_not_told(repo: GitRepo, rule: str) -> None:
    initialised(repo)
    evals = repo.path / "evals/assistant.yaml"
    text = evals.read_text(encoding="utf-8")
    evals.write_text(text.replace(ADAPTIVE, rule), encoding="utf-8")
    repo.commit("regressions alone gate")

    validated = evalward("validate", ".", cwd=repo.path)

    assert validated.returncode == 0, validated.stderr
    assert "passThreshold" not in validated.stdout + validated.stderr


def test_a_fixtures_zero_pass_threshold_beside_its_scoring_function_is_not_told(
    repo: GitRepo,
) -> None:
    """The function is given the threshold and decides the run itself."""
    initialised(repo)
    evals = repo.path / "evals/assistant.yaml"
    text = evals.read_text(encoding="utf-8")
    own_rule = (
        "  passThreshold: 0\n  scoringFunction:\n    language: python\n    source: |\n"
        "      def decide(named_scores, context):\n"
        "          return {'pass': True, 'score': 1.0, 'reason': 'decided here'}\n"
    )
    evals.write_text(text.replace(SEVERITY, SEVERITY + own_rule), encoding="utf-8")
    repo.commit("a fixture deciding its runs by its own function")

    validated = evalward("validate", ".", cwd=repo.path)

    assert validated.returncode == 0, validated.stdout + validated.stderr
    assert "passThreshold" not in validated.stdout + validated.stderr
