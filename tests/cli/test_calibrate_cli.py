"""`evalward calibrate` and a judged `evalward run`, through the real entry point and the mock
provider's `purpose: judge` replies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.clirun import evalward

pytestmark = pytest.mark.integration

RESOURCES = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: tutor }
spec:
  models: [mock/agent]
  system: Answer with "answer:" first.
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: tutor-add, labels: { agent: tutor } }
spec:
  targetAgent: tutor
  input: { type: prompt, payload: { prompt: "What is 2 + 2?" } }
  assertions:
    - { type: contains, value: "answer:" }
    - type: judge
      rubric: Did the agent answer correctly with the literal prefix "answer:"?
      minScore: 0.8
      weight: 2
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: tutor-eval }
spec:
  targetAgent: tutor
  fixtureSelector: { matchLabels: { agent: tutor } }
  judge: { model: mock/judge-a, calibration: tutor-judge }
---
apiVersion: evalward.dev/v1
kind: JudgeCalibration
metadata: { name: tutor-judge }
spec:
  rubric: Did the agent answer correctly with the literal prefix "answer:"?
  judgeModels: [mock/judge-a, mock/judge-b]
  examples:
    - { input: "2 + 2?", candidateOutput: "answer: 4", humanScore: 1.0 }
    - { input: "2 + 2?", candidateOutput: "5", humanScore: 0.0 }
    - { input: "3 + 3?", candidateOutput: "answer: 6", humanScore: 1.0 }
    - { input: "3 + 3?", candidateOutput: "answer: 7", humanScore: 0.0 }
"""


def verdict(score: float) -> str:
    return json.dumps({"score": score, "confidence": 0.9, "summary": "s", "violations": []})


def mock_script(tmp_path: Path, wrong_on: str) -> Path:
    """Every judge call is served by the same mock, so judge-a and judge-b answer alike; the
    replies are chosen by the candidate output the prompt contains."""
    replies = [
        {"match": {"purpose": "judge", "contains": out}, "turns": [{"content": verdict(s)}]}
        for out, s in [
            ("answer: 4", 1.0),
            ('"5"', 0.0),
            ("answer: 6", 1.0),
            ("answer: 7", 1.0 if wrong_on == "answer: 7" else 0.0),
        ]
    ]
    replies.append(
        {"match": {"purpose": "agent"}, "turns": [{"content": "answer: 4"}]},
    )
    path = tmp_path / "mock.json"
    path.write_text(json.dumps({"replies": replies}))
    return path


def test_calibrate_prints_kappa_per_model(tmp_path: Path) -> None:
    (tmp_path / "evals.yaml").write_text(RESOURCES)
    script = mock_script(tmp_path, wrong_on="")
    done = evalward(
        "calibrate", "tutor-judge", str(tmp_path), "--mock-script", str(script), cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("mock/judge-a") and " 1.00 " in line for line in lines)
    assert any(line.startswith("mock/judge-b") and " 1.00 " in line for line in lines)
    assert "agreement: 1.00  phase: Calibrated" in done.stdout


def test_calibrate_exits_1_when_the_judge_is_not_calibrated(tmp_path: Path) -> None:
    # one of four wrong: human 1 0 1 0, judge 1 0 1 1 -> p_o 3/4, p_e 1/2 -> κ = 0.5
    (tmp_path / "evals.yaml").write_text(RESOURCES)
    script = mock_script(tmp_path, wrong_on="answer: 7")
    done = evalward(
        "calibrate", "tutor-judge", str(tmp_path), "--mock-script", str(script), cwd=tmp_path
    )
    assert done.returncode == 1, done.stderr
    assert "agreement: 0.50  phase: Stale" in done.stdout


def test_calibrate_an_unknown_name_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "evals.yaml").write_text(RESOURCES)
    script = mock_script(tmp_path, wrong_on="")
    done = evalward(
        "calibrate", "tutor-jugde", str(tmp_path), "--mock-script", str(script), cwd=tmp_path
    )
    assert done.returncode == 2
    assert "no JudgeCalibration named 'tutor-jugde'" in done.stderr
    assert "did you mean 'tutor-judge'?" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_judged_run_records_the_verdict_and_gates_when_calibrated(tmp_path: Path) -> None:
    (tmp_path / "evals.yaml").write_text(RESOURCES)
    script = mock_script(tmp_path, wrong_on="")
    out = tmp_path / "out"
    done = evalward(
        "run", str(tmp_path), "--mock-script", str(script), "--output-dir", str(out), cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    results = json.loads((out / "results.json").read_text())
    [evaluation] = results["evals"]
    assert evaluation["judge_agreement"] == 1.0
    assert (evaluation["last_result"], evaluation["last_score"]) == ("Pass", "1.00")
    [fixture] = results["fixtures"]
    judge = fixture["assertions"][1]
    assert judge["status"] == "pass"
    assert judge["judge"]["score"] == 1.0
    assert judge["advisory"] is False


def test_a_judge_below_its_floor_leaves_the_run_inconclusive_never_passing(
    tmp_path: Path,
) -> None:
    """Its verdicts are advisory, not the Eval's: the Eval its other checks pass is
    inconclusive (exit 1), never a pass a judge that cannot decide would give."""
    (tmp_path / "evals.yaml").write_text(RESOURCES)
    script = mock_script(tmp_path, wrong_on="answer: 7")
    out = tmp_path / "out"
    done = evalward(
        "run", str(tmp_path), "--mock-script", str(script), "--output-dir", str(out), cwd=tmp_path
    )
    assert done.returncode == 1, done.stdout + done.stderr
    document = json.loads((out / "results.json").read_text())
    assert document["result"] == "inconclusive"
    judge = document["fixtures"][0]["assertions"][1]
    assert judge["advisory"] is True
    assert "below the floor 0.60" in judge["judge"]["advisory_reason"]
