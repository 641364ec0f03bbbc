"""A judge that cannot score, through the command line against a scripted model server: its
calibration cannot be computed, so an Eval it judges is never passed (`evalward run`), and
`evalward calibrate` says why each example got no verdict, exits 3 on an outage, and keeps
its calls within the provider's `maxConcurrency`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes.model_server import Reply, ScriptedModelServer, error, text
from support.clirun import evalward
from support.suite import provider_env

pytestmark = pytest.mark.integration

RESOURCES = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: tutor }
spec:
  models: [openai/agent]
  system: AGENT-PROMPT Answer with "answer:" first.
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: tutor-add, labels: { agent: tutor } }
spec:
  targetAgent: tutor
  input: { type: prompt, payload: { prompt: "What is 2 + 2?" } }
  assertions:
    - { type: judge, rubric: "JUDGE-RUBRIC: answer correctly.", minScore: 0.8 }
    - { type: contains, value: "SEVEN" }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: tutor-prefix, labels: { agent: tutor } }
spec:
  targetAgent: tutor
  input: { type: prompt, payload: { prompt: "What is 3 + 3?" } }
  assertions:
    - { type: contains, value: "answer:" }
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: tutor-eval }
spec:
  targetAgent: tutor
  fixtureSelector: { matchLabels: { agent: tutor } }
  judge: { model: openai/judge, calibration: tutor-judge }
  scoring: { passThreshold: 0.5 }
---
apiVersion: evalward.dev/v1
kind: JudgeCalibration
metadata: { name: tutor-judge }
spec:
  rubric: "CAL-RUBRIC: answer correctly."
  judgeModels: [openai/judge]
  examples:
{examples}"""

CANDIDATES = {"CAND-1": 1.0, "CAND-2": 0.0, "CAND-3": 1.0, "CAND-4": 0.0}
FAST_RETRY = "providers:\n  openai:\n    retry: { attempts: 2, baseDelaySeconds: 0.01 }\n"


def write_repo(root: Path, candidates: dict[str, float] = CANDIDATES, config: str = "") -> None:
    examples = "".join(
        f'    - {{ input: "sum?", candidateOutput: {out}, humanScore: {score} }}\n'
        for out, score in candidates.items()
    )
    (root / "evals.yaml").write_text(RESOURCES.replace("{examples}", examples))
    (root / "evalward.yaml").write_text(FAST_RETRY + config)


def verdict(score: float) -> Reply:
    return text(json.dumps({"score": score, "confidence": 0.9, "summary": "s"}))


def agent_answers(model: ScriptedModelServer) -> None:
    model.script("AGENT-PROMPT", text("answer: 4"))
    model.script("JUDGE-RUBRIC", verdict(1.0))


def env_of(model: ScriptedModelServer) -> dict[str, str]:
    return provider_env(model, "sk-test-key-value")


def calibrate(root: Path, model: ScriptedModelServer, *extra: str):  # type: ignore[no-untyped-def]
    return evalward("calibrate", "tutor-judge", str(root), *extra, cwd=root, **env_of(model))


def test_calibrate_says_why_each_example_got_no_verdict(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    write_repo(tmp_path)
    model.script("CAND-1", verdict(1.0))
    model.script("CAND-2", text("I think it is fine."))  # prose, twice: not JSON
    model.script("CAND-3", error(400, headers={}))
    model.script("CAND-4", verdict(0.0))

    done = calibrate(tmp_path, model)

    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert (
        "  example 2: the judge openai/judge gave no valid verdict after a retry: it is not "
        "JSON, twice" in lines
    )
    assert any(
        line.startswith("  example 3: the judge openai/judge failed: openai: HTTP 400 from ")
        for line in lines
    ), lines
    assert not any(line.startswith(("  example 1:", "  example 4:")) for line in lines)
    assert "some examples got no verdict" in done.stdout


def test_calibrate_exits_3_on_an_outage_and_names_the_status(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    write_repo(tmp_path)
    model.script("CAL-RUBRIC", error(503))

    done = calibrate(tmp_path, model)

    assert done.returncode == 3, (done.stdout, done.stderr)
    assert "no example could be scored (provider unavailable)" in done.stdout
    for index in range(1, 5):
        assert f"  example {index}: the judge openai/judge failed: openai: HTTP 503 after 2 " in (
            done.stdout
        )
    assert "provider unavailable — not a verdict on the judge" in done.stdout
    assert "phase: Failed" in done.stdout


def test_calibrate_keeps_within_the_providers_concurrency(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    """A server that answers one call at a time (`maxConcurrency: 1`): calls waiting for their
    turn would spend their timeout waiting, so no more are sent at once than it takes."""
    write_repo(tmp_path, config="    maxConcurrency: 1\n")
    for candidate, score in CANDIDATES.items():
        model.script(candidate, Reply(**vars(verdict(score)) | {"delay": 1.0}))

    # 4 calls of 1 s, one at a time, each well within its 2.5 s. Sent 4 at once (the default
    # --parallel), the third and fourth would wait 2 and 3 s for their turn, and time out.
    done = calibrate(tmp_path, model, "--timeout", "2.5")

    assert done.returncode == 0, done.stdout
    assert "agreement: 1.00  phase: Calibrated" in done.stdout
    assert "example" not in done.stdout


@pytest.mark.parametrize(
    ("judge", "code", "result", "reason"),
    [
        (error(503), 3, "unavailable", "HTTP 503"),
        (text("Looks fine to me."), 1, "incomplete", "it is not JSON"),
    ],
    ids=["outage", "not-json"],
)
def test_a_run_whose_judge_cannot_be_calibrated_is_never_passed(
    tmp_path: Path,
    model: ScriptedModelServer,
    judge: Reply,
    code: int,
    result: str,
    reason: str,
) -> None:
    write_repo(tmp_path)
    agent_answers(model)
    model.script("CAL-RUBRIC", judge)
    out = tmp_path / "out"

    done = evalward("run", str(tmp_path), "--output-dir", str(out), cwd=tmp_path, **env_of(model))

    assert done.returncode == code, (done.stdout, done.stderr)
    results = json.loads((out / "results.json").read_text())
    assert results["result"] == result
    assert "tutor-eval is incomplete: " in results["reason"]
    assert "the judge's calibration 'tutor-judge' could not be computed" in results["reason"]
    assert reason in results["reason"]
    [evaluation] = results["evals"]
    assert evaluation["passed"] is False and evaluation["advisory"] is False
    assert evaluation["last_result"] == result.capitalize()
    fixture = next(f for f in results["fixtures"] if f["fixture"] == "tutor-add")
    judged, missing = fixture["assertions"]
    assert (judged["status"], judged["uncalibrated"]) == ("error", True)
    assert judged["message"].startswith("not scored: ")
    # one word each: the judge's assertion errored, the other one failed
    assert fixture["message"] == (
        f"judge: error: {judged['message']}; contains: fail: {missing['message']}"
    )
    # the deterministic fixture still ran and passed; the judge was asked nothing more
    other = next(f for f in results["fixtures"] if f["fixture"] == "tutor-prefix")
    assert other["status"] == "pass"
    assert not model.requests_mentioning("JUDGE-RUBRIC")
    # no verdict is no point in the Eval's history
    assert not (tmp_path / ".evalward" / "history" / "tutor-eval.json").exists()
    comment = (out / "comment.md").read_text()
    assert "❌ Fail" not in comment and "Failing fixtures" not in comment
    word = "⚠️ Unavailable" if result == "unavailable" else "⏹️ Incomplete"
    assert f"| {word} |" in comment
