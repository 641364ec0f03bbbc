"""An Eval judged only by a judge below its calibration floor, run as GitHub runs the action:
the judge cannot decide, so the Eval is inconclusive (exit 1, a failing check, the Eval, the
judge, why and what to do), never advisory or skipped; the bypass label still honours it. A
check the base's definitions make reporting-only stays advisory. A pull request cannot make a
gating Eval's judge undecided to escape the gate either: the Eval (its judge model) and the
calibration it is replayed on come from the base branch."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import pull_request_event, run_action
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

AGENT = """\
apiVersion: pai.io/v1
kind: Agent
metadata: {{ name: support-bot }}
spec:
  models: [openai/gpt-test]
  system: "You are the support agent. Prompt version {version}."
"""

EVAL = """\
apiVersion: pai.io/v1
kind: Eval
metadata: { name: refund-eval }
spec:
  targetAgent: support-bot
  fixtureSelector: { matchLabels: { agent: support-bot } }
  judge: { model: "{judge}", calibration: refund-judge }
  scoring: { passThreshold: 1.0 }
---
apiVersion: pai.io/v1
kind: EvalFixture
metadata: { name: refund-asks-why, labels: { agent: support-bot } }
spec:
  targetAgent: support-bot
  severity: high
  input: { type: prompt, payload: { prompt: "I want a refund for order 777." } }
  assertions:
    - { type: judge, minScore: 0.8, rubric: "REFUND-RUBRIC: ask why before refunding." }
"""

CANDIDATES = [f"CANDIDATE-{i}" for i in range(6)]
LABELS = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]


def calibration(labels: list[float]) -> str:
    examples = "".join(
        f"    - {{ input: {{ ticket: refund }}, candidateOutput: {out}, humanScore: {score} }}\n"
        for out, score in zip(CANDIDATES, labels, strict=True)
    )
    return (
        "apiVersion: pai.io/v1\nkind: JudgeCalibration\nmetadata: { name: refund-judge }\n"
        "spec:\n  rubric: CAL-RUBRIC asks for the reason\n  judgeModels: [openai/judge-m]\n"
        f"  examples:\n{examples}"
    )


def verdict(score: float) -> str:
    return json.dumps({"score": score, "confidence": 0.9, "summary": f"scored {score}"})


def _has(*needles: str) -> Any:
    return lambda body: all(n in json.dumps(body) for n in needles)


def script(model: ScriptedModelServer, calibration_scores: list[float]) -> None:
    """The judge answers the calibration's examples with `calibration_scores`; it scores the
    base agent's answer 1.0 and the head's 0.0. Base asks why; head refunds at once."""
    model.script(_has("REFUND-RUBRIC", "May I ask why"), text(verdict(1.0)))
    model.script(_has("REFUND-RUBRIC", "Refund issued"), text(verdict(0.0)))
    for candidate, score in zip(CANDIDATES, calibration_scores, strict=True):
        model.script(_has("CAL-RUBRIC", candidate), text(verdict(score)))
    model.script(_has("BASE-V1"), text("May I ask why you want a refund?"))
    model.script(_has("HEAD-V2"), text("Refund issued for order 777."))


def base_commit(repo: GitRepo) -> str:
    return repo.commit(
        "support bot, its Eval and the judge's calibration",
        {
            "agents/support-bot.yaml": AGENT.format(version="BASE-V1"),
            "evals/refund.yaml": EVAL.replace("{judge}", "openai/judge-m"),
            "evals/calibration.yaml": calibration(LABELS),
        },
    )


BELOW_FLOOR = [0.6, 0.5, 0.9, 0.4, 0.1, 0.0]
"""κ = 1/3 (binarised at 0.5: 1 1 1 0 0 0 against the labels 1 0 1 0 1 0), below 0.6."""
WHY = "κ of openai/judge-m is 0.33, below the floor 0.60"
WHAT_TO_DO = "fix the judge's settings, recalibrate it, or bypass the gate with its label"


def below_floor_pull(repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer) -> FakePull:
    """A worse prompt, gated by an Eval whose only check is a judge below its floor."""
    base = base_commit(repo)
    repo.branch("feature")
    head = repo.commit(
        "a worse prompt", {"agents/support-bot.yaml": AGENT.format(version="HEAD-V2")}
    )
    script(model, BELOW_FLOOR)
    return github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))


def test_an_eval_judged_only_by_a_judge_below_its_floor_is_inconclusive_never_passing(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    pull = below_floor_pull(repo, github, model)
    event = pull_request_event(github.repository, 7, pull.base_sha, pull.head_sha)

    run = run_action(repo.path, github, event, env=env, inputs={"check-run": "true"})

    assert run.returncode == 1, run.stdout + run.stderr
    results = run.results()
    assert results["result"] == "inconclusive"
    reason = results["reason"]
    assert reason.startswith("refund-eval is inconclusive: its judge openai/judge-m cannot decide")
    assert WHY in reason and WHAT_TO_DO in reason
    head_eval = next(e for e in results["evals"] if e["side"] == "head")
    assert head_eval["advisory"] is False and head_eval["passed"] is False
    assert head_eval["phase"] == "Inconclusive" and WHY in head_eval["inconclusive_reason"]
    # the judge's verdicts are still shown, as advisory: they are why, not a verdict
    head_run = next(f for f in results["fixtures"] if f["side"] == "head")
    verdict = head_run["assertions"][0]
    assert verdict["advisory"] is True and verdict["judge"]["score"] == 0.0
    (check,) = github.check_runs
    assert check["conclusion"] == "failure"
    body = github.comments_on(7)[0]["body"]
    assert body.splitlines()[1].startswith("## ❔ evalward: refund-eval is inconclusive:")
    assert "❔ Inconclusive" in body and "⚪ Advisory" not in body and "✅" not in body
    assert "nothing gates" not in body


def test_an_eval_judged_below_its_floor_is_bypassed_by_the_label(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    pull = below_floor_pull(repo, github, model)
    github.add_label(7, "force-eval-bypass", actor="alice")
    github.permissions["alice"] = "write"
    event = pull_request_event(
        github.repository, 7, pull.base_sha, pull.head_sha,
        labels=["force-eval-bypass"], action="labeled", label="force-eval-bypass", sender="alice",
    )  # fmt: skip

    run = run_action(repo.path, github, event, env=env)

    assert run.returncode == 0, run.stdout + run.stderr
    assert run.results()["result"] == "bypassed"
    (audit,) = run.json_lines()
    assert audit["event"] == "eval_gate_bypass" and audit["actor"] == "alice"


def test_a_reporting_only_check_stays_advisory(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """A `latency` without `maxMs` only reports, as the base's definitions chose: an Eval of
    nothing else is advisory, not inconclusive, as no judge failed to decide."""
    reporting = EVAL.replace(
        '- { type: judge, minScore: 0.8, rubric: "REFUND-RUBRIC: ask why before refunding." }',
        "- { type: latency }",
    ).replace(", calibration: refund-judge", "")
    base = repo.commit(
        "support bot and a latency report",
        {
            "agents/support-bot.yaml": AGENT.format(version="BASE-V1"),
            "evals/refund.yaml": reporting.replace("{judge}", "openai/judge-m"),
        },
    )
    repo.branch("feature")
    head = repo.commit("a new prompt", {"agents/support-bot.yaml": AGENT.format(version="HEAD-V2")})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    script(model, BELOW_FLOOR)

    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )

    assert run.returncode == 0, run.stdout + run.stderr
    results = run.results()
    assert results["result"] == "skipped"
    assert results["reason"].startswith("nothing gates this change: refund-eval is advisory")
    head_eval = next(e for e in results["evals"] if e["side"] == "head")
    assert head_eval["advisory"] is True and head_eval["inconclusive_reason"] == ""


@pytest.mark.parametrize(
    ("attack", "files"),
    [
        (
            "the pull request flips its calibration's labels, so the judge's κ falls to -1",
            {"evals/calibration.yaml": calibration([1 - label for label in LABELS])},
        ),
        (
            "the pull request points the Eval at a judge model its calibration does not list",
            {"evals/refund.yaml": EVAL.replace("{judge}", "openai/judge-x")},
        ),
    ],
)
def test_a_pull_request_cannot_make_its_gating_eval_advisory(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    attack: str,
    files: dict[str, str],
) -> None:
    base = base_commit(repo)
    repo.branch("feature")
    head = repo.commit(
        "a worse prompt, and an uncalibrated judge",
        {"agents/support-bot.yaml": AGENT.format(version="HEAD-V2"), **files},
    )
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    script(model, [1.0, 0.0, 1.0, 0.0, 1.0, 0.0])  # κ = 1 on the base's labels: it gates
    model.script(_has("REFUND-RUBRIC"), text(verdict(0.0)))  # judge-x, if it were asked
    event = pull_request_event(github.repository, 7, base, head)

    run = run_action(repo.path, github, event, env=env)

    assert run.returncode == 1, (attack, run.stderr)
    head_eval = next(e for e in run.results()["evals"] if e["side"] == "head")
    assert head_eval["advisory"] is False and head_eval["judge_agreement"] == pytest.approx(1.0)
    assert run.results()["gateChanges"], "the PR's change to its own gate is reported"
    body = github.comments_on(7)[0]["body"]
    assert "| refund-eval |" in body and "❌ Fail" in body and "⚪ Advisory" not in body
    assert "1. 🔻 **high** · [refund-eval / refund-asks-why]" in body

    # with its own definitions gating (`gate-config: head`, which the workflow chooses) the
    # judge it made undecided still does not pass the gate: the Eval is inconclusive
    own = run_action(repo.path, github, event, env=env, inputs={"gate-config": "head"})
    assert own.returncode == 1, own.stdout + own.stderr
    assert own.results()["result"] == "inconclusive"
    assert own.results()["reason"].startswith("refund-eval is inconclusive: its judge")
