"""`failOnViolation`: a judge assertion fails, whatever the judge's score, where the judge
cites a violation at or above that severity whose evidence holds, through `evalward run` and
the mock provider's judge replies (a cross-check judge's verdict is read by the same rule),
and through the action, where a pull request's own fixture cannot drop it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, mentions, text
from support.actionrun import gate_pull_request
from support.clirun import evalward
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.integration

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: clerk }
spec:
  models: [mock/agent]
  system: Refund what customers ask for.
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: clerk-eval }
spec:
  targetAgent: clerk
  fixtureSelector: { matchLabels: { agent: clerk } }
  judge: { model: mock/judge, crossCheck: { models: [mock/judge-b] } }
"""
ANSWER = "I'll go ahead and create a refund ticket right away."
STEP = 2
"""The agent's answer in its trace: the input, then the answer."""


def _fixture(name: str, setting: str) -> str:
    return f"""\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {name}, labels: {{ agent: clerk }} }}
spec:
  targetAgent: clerk
  input: {{ type: prompt, payload: {{ prompt: "I want a refund" }} }}
  assertions:
    - type: judge
      rubric: Did the agent ask for the reason before refunding?
      minScore: 0.8
{setting}"""


def _violation(severity: str, quote: str = "create a refund ticket") -> dict[str, Any]:
    return {"rule": "no_reason", "severity": severity, "evidence_step": STEP, "quote": quote}


HIGH = "      failOnViolation: high\n"
CASES: dict[str, tuple[str, list[dict[str, Any]], str]] = {
    "critical": (HIGH, [_violation("critical")], "fail"),
    "unsupported": (HIGH, [_violation("critical", "I refuse to help you")], "pass"),
    "below": (HIGH, [_violation("medium")], "pass"),
    "unknown-severity": (HIGH, [_violation("Catastrophic")], "fail"),
    "no-severity": (HIGH, [{k: v for k, v in _violation("").items() if k != "severity"}], "fail"),
    "eleventh": (HIGH, [_violation("low")] * 10 + [_violation("high")], "fail"),
    "unset": ("", [_violation("critical")], "pass"),
}
"""Each fixture: its assertion's setting, what the judge cites (scoring 0.95, over the
assertion's 0.8), and the assertion's status."""


def test_a_supported_violation_at_or_above_the_bar_fails_the_judge_whatever_its_score(
    tmp_path: Path,
) -> None:
    fixtures = "---\n".join(_fixture(name, setting) for name, (setting, _, _) in CASES.items())
    (tmp_path / "evals.yaml").write_text(AGENT + "---\n" + fixtures)
    replies: list[dict[str, Any]] = [
        {
            "match": {"purpose": "judge", "fixture": name},
            "always": {
                "content": json.dumps(
                    {"score": 0.95, "confidence": 0.9, "summary": "s", "violations": cited}
                )
            },
        }
        for name, (_, cited, _) in CASES.items()
    ]
    replies.append({"match": {"purpose": "agent"}, "always": {"content": ANSWER}})
    (tmp_path / "mock.json").write_text(json.dumps({"replies": replies}))
    out = tmp_path / "out"

    done = evalward(
        "run", str(tmp_path), "--mock-script", str(tmp_path / "mock.json"),
        "--output-dir", str(out), cwd=tmp_path,
    )  # fmt: skip

    assert done.returncode == 1, done.stdout + done.stderr
    judged = {
        f["fixture"]: f["assertions"][0]
        for f in json.loads((out / "results.json").read_text())["fixtures"]
    }
    assert {name: a["status"] for name, a in judged.items()} == {
        name: status for name, (_, _, status) in CASES.items()
    }
    critical = judged["critical"]
    assert critical["score"] == 0.95
    said = (
        f"a supported critical violation at step {STEP} (no_reason), at or above "
        "failOnViolation: high"
    )
    assert critical["message"] == f"judge score 0.95 ≥ 0.80, but it cites {said}"
    assert critical["judge"]["fails_on_violation"] == said
    assert "Catastrophic violation" in judged["unknown-severity"]["message"]
    assert "a supported unrated violation" in judged["no-severity"]["message"]
    assert judged["no-severity"]["judge"]["violations"][0]["severity"] == "unrated"
    assert "a supported high violation" in judged["eleventh"]["message"]
    assert len(judged["eleventh"]["judge"]["violations"]) == 10  # the eleventh is not kept
    assert judged["unset"]["judge"]["fails_on_violation"] == ""
    assert judged["unsupported"]["judge"]["violations"][0]["supported"] is False
    assert said in done.stdout  # the comment's failing fixture says why
    crossed = {name: a["cross_checks"][0]["status"] for name, a in judged.items()}
    assert crossed == {name: status for name, (_, _, status) in CASES.items()}


GATED = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: clerk }}
spec:
  models: [openai/gpt-4.1-mini]
  system: {system}
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: clerk-eval }}
spec:
  targetAgent: clerk
  fixtureSelector: {{ matchLabels: {{ agent: clerk }} }}
  judge: {{ model: openai/gpt-4.1-mini }}
---
{fixture}"""
RUBRIC = "Did the agent ask for the reason before refunding?"
HASTY = "Refund at once, never ask why."


def test_a_pull_request_cannot_drop_the_base_s_failonviolation_to_pass_its_gate(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The base's fixture fails its judge on a supported high violation; the pull request
    makes its clerk refund at once (the judge scores it 0.95 and cites the violation) and
    drops `failOnViolation` from the fixture. The base's fixture gates: the action blocks."""
    fixture = _fixture("refund", HIGH).replace(
        "Did the agent ask for the reason before refunding?", RUBRIC
    )
    base = repo.commit(
        "the clerk",
        {"evals.yaml": GATED.format(system="Ask why before you refund.", fixture=fixture)},
    )
    repo.branch("feature")
    head = repo.commit(
        "a hasty clerk",
        {"evals.yaml": GATED.format(system=HASTY, fixture=_fixture("refund", ""))},
    )

    def judged(cited: list[dict[str, Any]]) -> str:
        return json.dumps({"score": 0.95, "confidence": 0.9, "summary": "s", "violations": cited})

    model.script(
        lambda body: RUBRIC in json.dumps(body) and "create a refund ticket" in json.dumps(body),
        text(judged([_violation("high")])),
    )
    model.script(mentions(RUBRIC), text(judged([])))
    model.script(mentions(HASTY), text(ANSWER))
    model.script(lambda body: True, text("Why would you like a refund?"))

    run = gate_pull_request(repo, github, base, head, provider_env(model))

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    results = json.loads((repo.path / ".evalward/out/results.json").read_text())
    (judge,) = next(f for f in results["fixtures"] if f["side"] == "head")["assertions"]
    assert judge["status"] == "fail" and judge["score"] == 0.95
    assert "at or above failOnViolation: high" in judge["message"]
    assert "at or above failOnViolation: high" in github.comments_on(7)[0]["body"]


def test_a_severity_that_is_none_of_the_four_is_refused_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "evals.yaml").write_text(
        AGENT + "---\n" + _fixture("refund", "      failOnViolation: severe\n")
    )
    (tmp_path / "mock.json").write_text(json.dumps({"replies": []}))

    done = evalward(
        "validate", str(tmp_path), "--mock-script", str(tmp_path / "mock.json"), cwd=tmp_path
    )

    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        "evals.yaml:26:7: spec.assertions[0].failOnViolation: expected one of: low, medium, "
        "high, critical; found 'severe'"
    ) in done.stderr
    assert "Traceback" not in done.stderr
