"""Which judge an Eval uses, and whether that judge may gate.

An Eval's judge gates only when it is configured (`spec.judge.model`) and, if the Eval names a
`judge.calibration`, when that judge model's κ on it reaches `judge.calibrationFloor`. Below
the floor the judge still grades, but its assertions are advisory: shown, never gating. A
calibration is replayed once per run and side, for the Eval's own judge model only.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace

from evalward.providers.base import RunLabels
from evalward.providers.registry import Providers
from evalward.resources import Eval, Located, ResourceSet
from evalward.resources.assertions import JudgeAssertion
from evalward.results import CalibrationResult, JudgeVerdict, Status
from evalward.scoring.calibration import at_least, calibrate
from evalward.scoring.judge import (
    JUDGE_TIMEOUT_SECONDS,
    JudgeCase,
    JudgeError,
    JudgeSettings,
    ask_judge,
    check_evidence,
)


@dataclass(frozen=True)
class JudgeOutcome:
    status: Status
    score: float
    message: str
    verdict: JudgeVerdict | None = None
    advisory: bool = False
    reply: str = ""
    """The judge's unusable last reply, when it gave no verdict."""
    unavailable: bool = False
    """The judge's provider kept failing through its retries."""


@dataclass(frozen=True)
class EvalJudge:
    """The judge of one Eval. `model=None` means judge assertions are skipped."""

    eval: str
    providers: Providers | None = None
    model: str | None = None
    temperature: float = 0.0
    timeout_seconds: float = JUDGE_TIMEOUT_SECONDS
    advisory_reason: str = ""
    agreement: float | None = None

    async def grade(
        self, assertion: JudgeAssertion, case: JudgeCase, labels: RunLabels
    ) -> JudgeOutcome:
        if self.model is None or self.providers is None:
            return JudgeOutcome(
                Status.skipped,
                0.0,
                f"skipped: Eval {self.eval!r} sets no spec.judge.model, so no judge ran",
            )
        settings = JudgeSettings(
            providers=self.providers,
            model=self.model,
            temperature=self.temperature,
            timeout_seconds=self.timeout_seconds,
            labels=labels,
        )
        advisory = bool(self.advisory_reason)
        try:
            raw, model = await ask_judge(case, settings)
        except JudgeError as exc:
            return JudgeOutcome(
                Status.error,
                0.0,
                str(exc),
                advisory=advisory,
                reply=exc.reply,
                unavailable=exc.unavailable,
            )
        verdict = check_evidence(raw, case.trace, model=model, min_score=assertion.min_score)
        verdict = verdict.model_copy(
            update={
                "advisory": advisory,
                "advisory_reason": self.advisory_reason,
                "agreement": self.agreement,
            }
        )
        passed = verdict.score >= assertion.min_score
        message = (
            f"judge score {verdict.score:.2f} ≥ {assertion.min_score:.2f}"
            if passed
            else f"judge score {verdict.score:.2f} < {assertion.min_score:.2f}"
            + (f": {verdict.summary}" if verdict.summary else "")
        )
        if verdict.all_violations_unsupported:
            message += " (every violation the judge cited is unsupported by the trace)"
        if advisory:
            message = f"advisory ({self.advisory_reason}): {message}"
        return JudgeOutcome(
            Status.passed if passed else Status.failed,
            verdict.score,
            message,
            verdict,
            advisory,
        )


@dataclass
class JudgePanel:
    """Builds each Eval's judge for one run, replaying each calibration at most once."""

    providers: Providers
    timeout_seconds: float = JUDGE_TIMEOUT_SECONDS
    _replays: dict[tuple[str, str, str], asyncio.Task[CalibrationResult]] = field(
        default_factory=dict
    )

    async def for_eval(
        self, eval_def: Located[Eval], resources: ResourceSet, side: str
    ) -> EvalJudge:
        name = eval_def.resource.metadata.name
        config = eval_def.resource.spec.judge
        base = EvalJudge(
            eval=name,
            providers=self.providers,
            model=config.model,
            temperature=config.temperature,
            timeout_seconds=self.timeout_seconds,
        )
        if config.model is None or config.calibration is None:
            return base
        located = resources.calibrations.get(config.calibration)
        if located is None:
            return _advisory(base, f"JudgeCalibration {config.calibration!r} is not defined")
        if config.model not in located.resource.spec.judge_models:
            return _advisory(
                base,
                f"judge model {config.model} is not among the judgeModels of JudgeCalibration "
                f"{config.calibration!r}, so its agreement is unknown",
            )
        key = (side, config.calibration, config.model)
        if key not in self._replays:
            self._replays[key] = asyncio.ensure_future(
                calibrate(
                    config.calibration,
                    located.resource,
                    self.providers,
                    models=[config.model],
                    timeout_seconds=self.timeout_seconds,
                )
            )
        result = await self._replays[key]
        kappa = result.kappa_of(config.model)
        base = replace(base, agreement=kappa)
        if at_least(kappa, config.calibration_floor):
            return base
        shown = "undefined" if kappa is None else f"{kappa:.2f}"
        return _advisory(
            base,
            f"judge calibration {config.calibration!r}: κ of {config.model} is {shown}, "
            f"below the floor {config.calibration_floor:.2f}",
        )


def _advisory(judge: EvalJudge, reason: str) -> EvalJudge:
    return replace(judge, advisory_reason=reason)
