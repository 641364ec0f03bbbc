"""A second, cross-vendor judge (`judge.crossCheck`) against the scripted model server: the
primary gates, the cross-check is shown beside it and flagged beyond the margin."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from evalward.providers.base import RunLabels
from evalward.providers.registry import build_providers
from evalward.resources import Eval, Located, ResourceSet
from evalward.resources.models import ScoringConfig
from evalward.rundata.results import FixtureResult, Status
from evalward.scoring.judges.panel import JudgePanel
from evalward.scoring.scores import fixture_outcome, score_fixture
from fakes.model_server import Reply, ScriptedModelServer, text
from scoring.judges.test_judge import (
    calibration,
    refund_fixture,
    refund_trace,
    script_judge,
    verdict,
)
from support.suite import provider_env

pytestmark = pytest.mark.integration

PRIMARY = "openai/judge-primary"
GEMINI = "openai/gemini-2.5-flash"


def an_eval(judge: dict[str, Any]) -> Located[Eval]:
    return Located(
        Eval.model_validate(
            {
                "apiVersion": "pai.io/v1",
                "kind": "Eval",
                "metadata": {"name": "support-bot-eval"},
                "spec": {"targetAgent": "support-bot", "judge": judge},
            }
        ),
        "eval.yaml",
        1,
    )


def cross_checked(margin: float | None = None) -> Located[Eval]:
    check: dict[str, Any] = {"models": [GEMINI]}
    if margin is not None:
        check["margin"] = margin
    return an_eval({"model": PRIMARY, "crossCheck": check})


def answers(model: ScriptedModelServer, name: str, reply: Reply) -> None:
    """The judge `provider/name` answers with `reply` (calibration replays are scripted
    first, when a test has them, so this rule sees the fixture's judging only)."""
    wire = name.split("/", 1)[1]
    model.script(lambda body: body["model"] == wire, reply)


def judge_with(
    model: ScriptedModelServer,
    evaluation: Located[Eval],
    resources: ResourceSet | None = None,
) -> FixtureResult:
    async def go() -> FixtureResult:
        providers = build_providers(provider_env(model, "k"))
        try:
            judge = await JudgePanel(providers).for_eval(
                evaluation, resources or ResourceSet(root=Path(".")), "head"
            )
            return await score_fixture(
                refund_fixture(min_score=0.8),
                refund_trace(),
                ScoringConfig(),
                judge,
                run=RunLabels(eval="support-bot-eval", side="head", rep=0),
            )
        finally:
            await providers.aclose()

    return asyncio.run(go())


def test_two_judges_far_apart_are_shown_and_the_primary_gates(model: ScriptedModelServer) -> None:
    answers(model, PRIMARY, text(verdict(0.9)))
    answers(model, GEMINI, text(verdict(0.2)))

    result = judge_with(model, cross_checked())

    judged = result.assertions[0]
    assert (judged.status, judged.score, judged.advisory) == (Status.passed, 0.9, False)
    assert judged.judge is not None and judged.judge.model == PRIMARY
    [check] = judged.cross_checks
    assert (check.model, check.status, check.score) == (GEMINI, Status.failed, 0.2)
    assert check.delta == pytest.approx(-0.7)
    assert (check.margin, check.disagrees) == (0.3, True)
    assert "disagrees with the primary judge: 0.20 against 0.90" in check.message
    assert check.verdict is not None and check.verdict.model == GEMINI
    assert check.verdict.advisory is True
    # the primary's 0.9 passes its minScore 0.8, and the cross-check does not change that
    assert (result.status, result.score) == (Status.passed, pytest.approx(0.95))
    assert result.judges_disagree is True
    assert fixture_outcome([result], ScoringConfig()).judge_disagreements == 1
    # both judges got the same prompt, each under its own model id
    assert sorted(r["model"] for r in model.requests) == ["gemini-2.5-flash", "judge-primary"]
    first, second = model.requests
    assert first["messages"] == second["messages"]


def test_a_cross_check_cannot_rescue_a_failing_primary(model: ScriptedModelServer) -> None:
    answers(model, PRIMARY, text(verdict(0.1)))
    answers(model, GEMINI, text(verdict(1.0)))

    result = judge_with(model, cross_checked())

    assert result.assertions[0].status is Status.failed
    assert result.status is Status.failed
    assert result.assertions[0].cross_checks[0].status is Status.passed
    assert result.judges_disagree is True


def test_within_the_margin_is_no_disagreement(model: ScriptedModelServer) -> None:
    answers(model, PRIMARY, text(verdict(0.9)))
    answers(model, GEMINI, text(verdict(0.6)))

    default_margin = judge_with(model, cross_checked())
    [check] = default_margin.assertions[0].cross_checks
    # 0.9 - 0.6 is 0.30000000000000004 in floating point: not beyond a 0.3 margin
    assert (check.delta, check.disagrees) == (pytest.approx(-0.3), False)
    assert default_margin.judges_disagree is False

    narrow = judge_with(model, cross_checked(margin=0.1))
    assert narrow.assertions[0].cross_checks[0].disagrees is True


def test_a_cross_check_that_fails_is_shown_and_never_gates(model: ScriptedModelServer) -> None:
    answers(model, PRIMARY, text(verdict(0.9)))
    answers(model, GEMINI, Reply(status=400))

    result = judge_with(model, cross_checked())

    [check] = result.assertions[0].cross_checks
    assert (check.status, check.score, check.delta, check.disagrees) == (
        Status.error,
        None,
        None,
        False,
    )
    assert "HTTP 400" in check.message
    assert result.status is Status.passed
    assert result.assertions[0].provider_unavailable is False


def test_without_a_cross_check_one_judge_is_called(model: ScriptedModelServer) -> None:
    answers(model, PRIMARY, text(verdict(0.9)))
    result = judge_with(model, an_eval({"model": PRIMARY}))
    assert result.assertions[0].cross_checks == []
    assert [r["model"] for r in model.requests] == ["judge-primary"]


def test_calibration_applies_per_judge_model(model: ScriptedModelServer) -> None:
    # the primary agrees with the humans (κ 1); the cross-check is sloppy (κ 1/3)
    script_judge(model, "judge-primary", [0.9, 0.1, 1.0, 0.0, 0.8, 0.2])
    script_judge(model, "gemini-2.5-flash", [0.6, 0.5, 0.9, 0.4, 0.1, 0.0])
    answers(model, PRIMARY, text(verdict(0.9)))
    answers(model, GEMINI, text(verdict(0.2)))
    resources = ResourceSet(root=Path("."))
    resources.calibrations["support-bot-judge"] = Located(
        calibration([PRIMARY, GEMINI]), "cal.yaml", 1
    )
    evaluation = an_eval(
        {"model": PRIMARY, "calibration": "support-bot-judge", "crossCheck": {"models": [GEMINI]}}
    )

    result = judge_with(model, evaluation, resources)

    judged = result.assertions[0]
    assert judged.advisory is False  # the primary is calibrated, so it gates
    assert judged.judge is not None and judged.judge.agreement == pytest.approx(1.0)
    check = judged.cross_checks[0].verdict
    assert check is not None and check.agreement == pytest.approx(1 / 3)
    # six replays per judge model, one judging call each
    assert len(model.requests) == 14


def test_an_uncalibrated_primary_is_advisory_whatever_the_cross_check_says(
    model: ScriptedModelServer,
) -> None:
    script_judge(model, "judge-primary", [0.6, 0.5, 0.9, 0.4, 0.1, 0.0])
    script_judge(model, "gemini-2.5-flash", [0.9, 0.1, 1.0, 0.0, 0.8, 0.2])
    answers(model, PRIMARY, text(verdict(0.0)))
    answers(model, GEMINI, text(verdict(1.0)))
    resources = ResourceSet(root=Path("."))
    resources.calibrations["support-bot-judge"] = Located(
        calibration([PRIMARY, GEMINI]), "cal.yaml", 1
    )
    evaluation = an_eval(
        {"model": PRIMARY, "calibration": "support-bot-judge", "crossCheck": {"models": [GEMINI]}}
    )

    result = judge_with(model, evaluation, resources)

    judged = result.assertions[0]
    assert judged.advisory is True
    assert "κ of openai/judge-primary is 0.33" in judged.message
    # a well-calibrated cross-check does not take over the gate
    assert judged.cross_checks[0].verdict is not None
    assert judged.cross_checks[0].verdict.agreement == pytest.approx(1.0)
    assert (result.status, result.score) == (Status.passed, 1.0)  # only toolCalled gates
