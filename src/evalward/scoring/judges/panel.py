"""Which judges an Eval uses, and whether they may gate.

An Eval's judge gates only when it is configured (`spec.judge.model`) and, if the Eval names a
`judge.calibration`, when that judge model's κ on it reaches `judge.calibrationFloor`. Below
the floor (or not calibrated as the Eval requires: a calibration not defined, or one that
does not list the model) the judge cannot decide: it still grades, and its verdicts are shown
as advisory, but each carries why (`cannot_decide`), and its Eval is inconclusive unless other
evidence fails it (`scoring.scores`): a judge that cannot decide never turns a gate green. A
calibration is replayed once per run, side and judge model, for the Eval's own models only,
and before any agent runs (`JudgePanel.replay`): the pull request's programs share the
provider's limits, and must not spend them before the judge is measured.

A calibration that could not be computed — any of its examples got no verdict (errors,
timeouts, an outage) — says nothing of the judge: a κ over the examples that did answer could
be steered by which ones failed. Such a judge scores nothing: its assertions are errors that
say why (`NOT_SCORED`), and the Eval is incomplete, or unavailable when it was an outage.

`judge.crossCheck` adds judges that grade every judge assertion beside the primary one, which
alone gates (docs/assertions.md, "A second judge: `crossCheck`").
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from evalward.errors import JudgeError
from evalward.providers.base import RunLabels
from evalward.providers.registry import Providers
from evalward.resources import Eval, Located, ResourceSet
from evalward.resources.checks.assertions import JudgeAssertion
from evalward.resources.models import DEFAULT_CROSS_CHECK_MARGIN, JudgeCalibration, JudgeConfig
from evalward.rundata.results import CalibrationResult, CrossCheck, JudgeVerdict, Status
from evalward.scoring.judges.calibration import calibrate
from evalward.scoring.judges.judge import (
    JUDGE_TIMEOUT_SECONDS,
    JudgeCase,
    JudgeSettings,
    ask_judge,
    check_evidence,
)
from evalward.scoring.reps import TOLERANCE, at_least
from evalward.text.numbers import score_text, threshold_text

NOT_SCORED = "not scored: "
"""How a judge assertion's message starts when its judge could not be calibrated."""
NOT_JUDGED = (
    "not judged: the pairwise judge settled it (the base's judge is asked only where the "
    "verdict reads the base)"
)
"""A base run's judge assertion left unasked under adaptive reps with a pairwise judge."""
CROSS_CHECK_REASON = "a cross-check judge: shown beside the primary, never gating"


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
    refused: bool = False
    """The job's budget refused the judge's call: it said nothing of the run."""
    cross_checks: tuple[CrossCheck, ...] = ()
    uncalibrated: bool = False
    """No verdict was asked for: the judge's calibration could not be computed."""
    deferred: bool = False
    """Not asked yet: a base run's judge, asked later only where the verdict reads it."""
    cannot_decide: str = ""
    """Why this judge (or a judge of a group's member) cannot decide: its Eval is inconclusive."""


@dataclass(frozen=True)
class CrossJudge:
    """One cross-check judge model, with its κ on the Eval's calibration when known."""

    model: str
    agreement: float | None = None


@dataclass(frozen=True)
class EvalJudge:
    """The judges of one Eval. `model=None` means judge assertions are skipped."""

    eval: str
    providers: Providers | None = None
    model: str | None = None
    temperature: float = 0.0
    timeout_seconds: float = JUDGE_TIMEOUT_SECONDS
    advisory_reason: str = ""
    """Why this judge cannot decide (below its floor, not calibrated as required): "" when it
    may."""
    agreement: float | None = None
    cross_checks: tuple[CrossJudge, ...] = ()
    margin: float = DEFAULT_CROSS_CHECK_MARGIN
    unscored_reason: str = ""
    """Why this judge scores nothing: its calibration could not be computed."""
    unscored_outage: bool = False
    """That calibration failed only because the judge's provider was unavailable."""
    deferred: bool = False
    """Ask nothing now: a base run's judge assertions are left `deferred` (`NOT_JUDGED`), and
    asked once the verdict reads the base (`flows.base_judging`)."""

    async def grade(
        self, assertion: JudgeAssertion, case: JudgeCase, labels: RunLabels
    ) -> JudgeOutcome:
        if self.deferred:
            return JudgeOutcome(Status.skipped, 0.0, NOT_JUDGED, deferred=True)
        if self.model is None or self.providers is None:
            return JudgeOutcome(
                Status.skipped,
                0.0,
                f"skipped: Eval {self.eval!r} sets no spec.judge.model, so no judge ran",
            )
        if self.unscored_reason:
            return JudgeOutcome(
                Status.error,
                0.0,
                NOT_SCORED + self.unscored_reason,
                unavailable=self.unscored_outage,
                uncalibrated=True,
            )
        primary_call = self._primary(self.model, assertion, case, labels)
        if not self.cross_checks:
            return await primary_call
        checks = [self._cross(judge, assertion, case, labels) for judge in self.cross_checks]
        primary, others = await asyncio.gather(primary_call, asyncio.gather(*checks))
        score = primary.verdict.score if primary.verdict is not None else None
        return replace(primary, cross_checks=tuple(self._compare(c, score) for c in others))

    async def _verdict(
        self,
        model: str,
        assertion: JudgeAssertion,
        case: JudgeCase,
        labels: RunLabels,
        reason: str,
        agreement: float | None,
    ) -> JudgeVerdict:
        """`model`'s verdict, its evidence checked, advisory for `reason` (JudgeError: none)."""
        assert self.providers is not None
        settings = JudgeSettings(
            self.providers, model, self.temperature, self.timeout_seconds, labels
        )
        raw = await ask_judge(case, settings)
        verdict = check_evidence(
            raw,
            case.trace,
            model=model,
            min_score=assertion.min_score,
            fail_on=assertion.fail_on_violation,
        )
        marks = {"advisory": bool(reason), "advisory_reason": reason, "agreement": agreement}
        return verdict.model_copy(update=marks)

    async def _primary(
        self, model: str, assertion: JudgeAssertion, case: JudgeCase, labels: RunLabels
    ) -> JudgeOutcome:
        advisory = bool(self.advisory_reason)
        undecided = f"its judge {model} cannot decide: {self.advisory_reason}" if advisory else ""
        try:
            verdict = await self._verdict(
                model, assertion, case, labels, self.advisory_reason, self.agreement
            )
        except JudgeError as exc:
            return JudgeOutcome(
                Status.error,
                0.0,
                f"advisory ({self.advisory_reason}): {exc}" if advisory else str(exc),
                advisory=advisory,
                reply=exc.reply,
                unavailable=exc.unavailable,
                refused=exc.refused,
                cannot_decide=undecided,
            )
        passed = _passes(verdict, assertion.min_score)
        message = _score_message(verdict, assertion.min_score)
        if advisory:
            message = f"advisory ({self.advisory_reason}): {message}"
        return JudgeOutcome(
            Status.passed if passed else Status.failed,
            verdict.score,
            message,
            verdict,
            advisory,
            cannot_decide=undecided,
        )

    async def _cross(
        self, judge: CrossJudge, assertion: JudgeAssertion, case: JudgeCase, labels: RunLabels
    ) -> CrossCheck:
        try:
            verdict = await self._verdict(
                judge.model, assertion, case, labels, CROSS_CHECK_REASON, judge.agreement
            )
        except JudgeError as exc:
            return CrossCheck(
                model=judge.model, status=Status.error, margin=self.margin, message=str(exc)
            )
        passed = _passes(verdict, assertion.min_score)
        return CrossCheck(
            model=judge.model,
            status=Status.passed if passed else Status.failed,
            score=verdict.score,
            margin=self.margin,
            message=_score_message(verdict, assertion.min_score),
            verdict=verdict,
        )

    def _compare(self, check: CrossCheck, primary_score: float | None) -> CrossCheck:
        if primary_score is None or check.score is None:
            return check
        delta = check.score - primary_score
        disagrees = abs(delta) > self.margin + TOLERANCE  # 0.9 − 0.6 is no more than 0.3
        update: dict[str, object] = {"delta": delta, "disagrees": disagrees}
        if disagrees:
            update["message"] = (
                f"disagrees with the primary judge: {check.score:.2f} against "
                f"{primary_score:.2f} (beyond the margin {self.margin:.2f}); {check.message}"
            )
        return check.model_copy(update=update)


def _passes(verdict: JudgeVerdict, min_score: float) -> bool:
    """A judge's verdict passes its assertion: its score reaches `min_score` and it cites no
    supported violation at the assertion's `failOnViolation` (`fails_on_violation`)."""
    return verdict.score >= min_score and not verdict.fails_on_violation


def _score_message(verdict: JudgeVerdict, min_score: float) -> str:
    passed = verdict.score >= min_score
    score, bound = score_text(verdict.score, min_score, passed), threshold_text(min_score)
    if passed:
        message = f"judge score {score} ≥ {bound}"
    else:
        message = f"judge score {score} < {bound}" + (
            f": {verdict.summary}" if verdict.summary else ""
        )
    if verdict.all_violations_unsupported:
        message += " (every violation the judge cited is unsupported by the trace)"
    if verdict.fails_on_violation:
        message += f"{', but' if passed else ';'} it cites {verdict.fails_on_violation}"
    return message


@dataclass
class JudgePanel:
    """Builds each Eval's judges for one run, replaying each calibration at most once per
    side and judge model."""

    providers: Providers
    timeout_seconds: float = JUDGE_TIMEOUT_SECONDS
    _replays: dict[tuple[str, str, str], asyncio.Task[CalibrationResult]] = field(
        default_factory=dict
    )

    async def replay(self, evals: Iterable[tuple[str, Located[Eval], ResourceSet]]) -> None:
        """Replay, one after another, the calibrations of these (side, Eval, resources): before
        the runs, so no agent's calls compete with them for the provider's limits, and none at
        once with another, so each replay's calls stay within its provider's concurrency."""
        seen: set[tuple[str, str]] = set()
        for side, eval_def, resources in evals:
            key = (side, eval_def.resource.metadata.name)
            if key in seen:
                continue
            seen.add(key)
            config = eval_def.resource.spec.judge
            located = resources.calibrations.get(config.calibration or "")
            if config.model is None or located is None:
                continue
            for model in config.models:
                if model in located.resource.spec.judge_models:
                    name = located.resource.metadata.name
                    await self._replay(side, name, located.resource, model)

    async def for_eval(
        self, eval_def: Located[Eval], resources: ResourceSet, side: str
    ) -> EvalJudge:
        config = eval_def.resource.spec.judge
        base = self._judge(eval_def.resource.metadata.name, config)
        if config.model is None or config.calibration is None:
            return base
        located = resources.calibrations.get(config.calibration)
        if located is None:
            return _advisory(base, f"JudgeCalibration {config.calibration!r} is not defined")
        listed = located.resource.spec.judge_models
        calibrated = [m for m in config.models if m in listed]
        replayed_each = await asyncio.gather(
            *(self._replay(side, config.calibration, located.resource, m) for m in calibrated)
        )
        replays = dict(zip(calibrated, replayed_each, strict=True))
        base = replace(
            base,
            cross_checks=tuple(
                replace(c, agreement=replays[c.model].kappa_of(c.model))
                if c.model in replays
                else c
                for c in base.cross_checks
            ),
        )
        if config.model not in listed:
            return _advisory(
                base,
                f"judge model {config.model} is not among the judgeModels of JudgeCalibration "
                f"{config.calibration!r}, so its agreement is unknown",
            )
        replayed = replays[config.model]
        unscored = uncomputed(replayed, config.model)
        if unscored:
            outage = all(m.unavailable == m.errors for m in replayed.models)
            return replace(base, unscored_reason=unscored, unscored_outage=outage)
        kappa = replayed.kappa_of(config.model)
        base = replace(base, agreement=kappa)
        if at_least(kappa, config.calibration_floor):
            return base
        floor = config.calibration_floor
        shown = "undefined" if kappa is None else score_text(kappa, floor, passed=False)
        return _advisory(
            base,
            f"judge calibration {config.calibration!r}: κ of {config.model} is {shown}, "
            f"below the floor {threshold_text(floor)}",
        )

    def deferred(self, eval_def: Located[Eval]) -> EvalJudge:
        """An Eval's judge that asks nothing yet, replaying no calibration: its judge
        assertions are left for later (`EvalJudge.deferred`); its providers still serve the
        run's other checks (embeddings)."""
        name = eval_def.resource.metadata.name
        return replace(self._judge(name, eval_def.resource.spec.judge), deferred=True)

    def _judge(self, name: str, config: JudgeConfig) -> EvalJudge:
        """The Eval's judge as its definition sets it, before any calibration is read."""
        cross = config.cross_check
        return EvalJudge(
            eval=name,
            providers=self.providers,
            model=config.model,
            temperature=config.temperature,
            timeout_seconds=self.timeout_seconds,
            cross_checks=tuple(CrossJudge(m) for m in cross.models) if cross else (),
            margin=cross.margin if cross else DEFAULT_CROSS_CHECK_MARGIN,
        )

    async def _replay(
        self, side: str, name: str, calibration: JudgeCalibration, model: str
    ) -> CalibrationResult:
        key = (side, name, model)
        if key not in self._replays:
            self._replays[key] = asyncio.ensure_future(
                calibrate(
                    name,
                    calibration,
                    self.providers,
                    models=[model],
                    timeout_seconds=self.timeout_seconds,
                )
            )
        return await self._replays[key]


def uncomputed(result: CalibrationResult, model: str) -> str:
    """Why `model`'s κ on the calibration could not be computed ("" when it was): an example
    the judge did not score, with the first reason."""
    agreement = next((m for m in result.models if m.model == model), None)
    if agreement is None or not agreement.errors:
        return ""
    first = next((e.reason for e in agreement.examples if e.reason), "")
    total = agreement.scored + agreement.errors
    what = "provider unavailable — " if agreement.unavailable == agreement.errors else ""
    return (
        f"{what}the judge's calibration {result.name!r} could not be computed: {model} gave no "
        f"verdict on {agreement.errors} of its {total} examples ({first}); rerun once the judge "
        "answers"
    )


def _advisory(judge: EvalJudge, reason: str) -> EvalJudge:
    return replace(judge, advisory_reason=reason)
