"""JudgeCalibration replay: how well each judge model agrees with human labels (Cohen's κ).

Scores are binarised at 0.5 (a score ≥ 0.5 is a pass) on both sides. κ is undefined when the
chance agreement is 1, which happens only when the human labels and the judge's verdicts all
fall in one and the same class: such a set cannot tell a judge that reads the rubric from one
that always says the same thing, so it certifies nothing (κ = None, never Calibrated).
"""

from __future__ import annotations

import asyncio
import difflib
import json
from collections.abc import Sequence
from typing import TypeVar

from evalward.errors import ConfigError, JudgeError
from evalward.providers.base import RunLabels
from evalward.providers.registry import Providers
from evalward.resources import ResourceSet
from evalward.resources.calibration import CalibrationExample, JudgeCalibration
from evalward.rundata.results import (
    CalibrationPhase,
    CalibrationResult,
    ExampleResult,
    ModelAgreement,
)
from evalward.rundata.trace import StepType, Trace
from evalward.scoring.judges.judge import JUDGE_TIMEOUT_SECONDS, JudgeCase, JudgeSettings, ask_judge
from evalward.scoring.reps import at_least

CALIBRATED_KAPPA = 0.6
"""Seed 003: Calibrated when κ ≥ 0.6."""
BINARY_THRESHOLD = 0.5
Label = TypeVar("Label", bool, str)


def cohen_kappa(first: Sequence[Label], second: Sequence[Label]) -> float | None:
    """κ = (p_o − p_e) / (1 − p_e) for two raters' labels of the same items (pass or fail
    here; A, B or tie for the pairwise judge); None when undefined."""
    if len(first) != len(second):
        raise ValueError("both raters must label the same items")
    if not first:
        return None
    observed = sum(a == b for a, b in zip(first, second, strict=True)) / len(first)
    expected = chance_agreement(first, second)
    if expected >= 1:
        return None
    return (observed - expected) / (1 - expected)


def chance_agreement(first: Sequence[Label], second: Sequence[Label]) -> float:
    """The agreement two raters of these shares of the classes reach by chance (κ's p_e)."""
    n = len(first)
    classes = sorted(set(first) | set(second))
    return sum((first.count(c) / n) * (second.count(c) / n) for c in classes)


def answered(text: str, output: str) -> Trace:
    """A labelled example's run as the two-step trace a judge sees: the input, then the
    answer."""
    trace = Trace()
    trace.add(StepType.input, content=text)
    trace.add(StepType.final, content=output)
    return trace


async def calibrate(
    name: str,
    calibration: JudgeCalibration,
    providers: Providers,
    *,
    models: Sequence[str] | None = None,
    parallel: int = 4,
    timeout_seconds: float = JUDGE_TIMEOUT_SECONDS,
) -> CalibrationResult:
    """Replay every example with every model (or just `models`) and compute κ per model.

    A model's examples go out at most `parallel` at a time, and never more at once than its
    provider's `maxConcurrency`: a call waiting for the provider's turn would spend its
    timeout waiting."""
    spec = calibration.spec
    chosen = list(models) if models is not None else list(spec.judge_models)

    async def one(
        model: str, index: int, example: CalibrationExample, limit: asyncio.Semaphore
    ) -> ExampleResult:
        settings = JudgeSettings(
            providers=providers,
            model=model,
            timeout_seconds=timeout_seconds,
            labels=RunLabels(eval=name, fixture=f"example-{index + 1}", purpose="judge"),
        )
        text = example.input if isinstance(example.input, str) else json.dumps(example.input)
        case = JudgeCase(spec.rubric, example.input, answered(text, example.candidate_output))
        result = ExampleResult(index=index + 1, human_score=example.human_score)
        async with limit:
            try:
                verdict = await ask_judge(case, settings)
            except JudgeError as exc:
                return result.model_copy(
                    update={"reason": str(exc), "unavailable": exc.unavailable}
                )
        return result.model_copy(update={"score": verdict.score})

    per_model: list[ModelAgreement] = []
    for model in chosen:
        limit = asyncio.Semaphore(max(1, min(parallel, providers.concurrency_of(model))))
        answers = await asyncio.gather(
            *(one(model, i, example, limit) for i, example in enumerate(spec.examples))
        )
        per_model.append(_agreement(model, answers))
    return summarise(name, per_model)


def _agreement(model: str, answers: Sequence[ExampleResult]) -> ModelAgreement:
    human = [a.human_score >= BINARY_THRESHOLD for a in answers if a.score is not None]
    judge = [a.score >= BINARY_THRESHOLD for a in answers if a.score is not None]
    kappa = cohen_kappa(human, judge)
    failed = [a for a in answers if a.score is None]
    note = ""
    if not human:
        note = "no example could be scored"
        if failed and all(a.unavailable for a in failed):
            note += " (provider unavailable)"
    elif kappa is None:
        note = "κ is undefined: every label and verdict is in one class; add examples of both"
    return ModelAgreement(
        model=model,
        kappa=kappa,
        scored=len(human),
        errors=len(failed),
        agreed=sum(h == j for h, j in zip(human, judge, strict=True)),
        note=note,
        unavailable=sum(a.unavailable for a in failed),
        examples=list(answers),
    )


def summarise(name: str, per_model: Sequence[ModelAgreement]) -> CalibrationResult:
    """Seed 003's status: best κ to 2 dp, phase Calibrated / Stale / Failed."""
    kappas = [m.kappa for m in per_model if m.kappa is not None]
    best = max(kappas) if kappas else None
    if not any(m.scored for m in per_model):
        phase = CalibrationPhase.failed
    elif at_least(best, CALIBRATED_KAPPA):
        phase = CalibrationPhase.calibrated
    else:
        phase = CalibrationPhase.stale
    return CalibrationResult(
        name=name,
        phase=phase,
        agreement=None if best is None else f"{best:.2f}",
        agreement_by_model={m.model: m.kappa for m in per_model},
        judges_evaluated=[m.model for m in per_model if m.scored],
        models=list(per_model),
    )


async def calibrate_named(
    name: str,
    resources: ResourceSet,
    providers: Providers,
    *,
    parallel: int = 4,
    timeout: float = JUDGE_TIMEOUT_SECONDS,
) -> CalibrationResult:
    """`evalward calibrate NAME`: replay one JudgeCalibration with all of its judgeModels."""
    located = resources.calibrations.get(name)
    if located is None:
        known = ", ".join(sorted(resources.calibrations)) or "none"
        close = difflib.get_close_matches(name, list(resources.calibrations), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(
            f"no JudgeCalibration named {name!r} under {resources.root}{hint}; defined: {known}"
        )
    return await calibrate(
        name, located.resource, providers, parallel=parallel, timeout_seconds=timeout
    )


def render_calibration(result: CalibrationResult) -> str:
    """A plain-text table: one line per judge model, each example the judge gave no verdict
    on with the reason, then the agreement and phase."""
    lines = [f"JudgeCalibration {result.name}", "", f"{'model':40} {'kappa':>6}  scored  errors"]
    for m in result.models:
        kappa = "—" if m.kappa is None else f"{m.kappa:.2f}"
        line = f"{m.model:40} {kappa:>6}  {m.scored:>6}  {m.errors:>6}"
        lines.append(line + (f"  {m.note}" if m.note else ""))
        lines += [f"  example {e.index}: {e.reason}" for e in m.examples if e.score is None]
    lines += ["", f"agreement: {result.agreement or '—'}  phase: {result.phase.value}"]
    if result.outage:
        lines.append(
            "provider unavailable — not a verdict on the judge: every call failed through its "
            "retries; rerun once the provider is back"
        )
    elif any(m.errors for m in result.models):
        lines.append(
            "some examples got no verdict: a κ over the others is no calibration, and an Eval "
            "with this judge scores nothing until every example is scored"
        )
    return "\n".join(lines)
