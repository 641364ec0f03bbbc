"""`evalward calibrate NAME` in-process (`cli/calibrate.py`): `evalward init`'s labelled pairs
replayed through the mock judge, its κ printed and the exit code saying whether it gates; a
judge that disagrees with people, exit 1; a name that is not defined, refused with the
nearest."""

from __future__ import annotations

import pytest

from evalward.cli import calibrate
from support.clirun import in_process, initialised, quiet_host, refused
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration


@pytest.fixture
def started(repo: GitRepo) -> GitRepo:
    return initialised(repo)


def calibrated(repo: GitRepo) -> tuple[int, str]:
    script = str(repo.path / "evals" / "mock-replies.yaml")
    return in_process(
        calibrate.main,
        *("calibrate", "assistant-pairs", str(repo.path), "--mock-script", script),
        host=quiet_host(repo.path),
    )


def test_a_judge_that_agrees_with_people_on_every_pair_gates(started: GitRepo) -> None:
    code, said = calibrated(started)
    assert code == 0
    lines = said.strip().splitlines()
    assert lines[0] == "labelled pairs (pairwise judge, both orders):"
    assert lines[2].split() == ["openai/gpt-4.1-mini", "1.00", "100", "%", "14", "0"]
    assert lines[3].strip().startswith("gates: κ between ")


def test_a_judge_that_calls_every_pair_a_tie_does_not_gate(started: GitRepo) -> None:
    script = started.path / "evals" / "mock-replies.yaml"
    # the pairwise judge is left its catch-all reply: it prefers neither reply of any pair
    text = script.read_text()
    script.write_text(text.replace("purpose: pairwise, contains:", "purpose: judge, contains:"))
    code, said = calibrated(started)
    assert code == 1
    lines = said.strip().splitlines()
    assert lines[2].split() == ["openai/gpt-4.1-mini", "0.00", "100", "%", "14", "0"]
    assert lines[3].strip().startswith("cannot decide: κ between 0.00 and ")
    assert lines[3].endswith("below the floor 0.60")


def test_a_calibration_that_is_not_defined_is_refused_with_the_nearest(
    started: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    script = str(started.path / "evals" / "mock-replies.yaml")
    said = refused(
        capsys,
        *("calibrate", "assistant-pair", str(started.path), "--mock-script", script),
        host=quiet_host(started.path),
    )
    assert said == (
        f"no JudgeCalibration named 'assistant-pair' under {started.path} (did you mean "
        "'assistant-pairs'?); defined: assistant-pairs"
    )
