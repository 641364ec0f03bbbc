"""Which fixtures an Eval judges pairwise, with what, and whether that judge may gate.

A pairwise judge decides only when it is calibrated, as docs/assertions.md ("Calibrated, or
inconclusive") sets out: its κ against people's preferences read on its confidence bounds
(`kappa_bounds`), its consistency across orders on its upper one (`consistency_below`). A
judge shown below a floor cannot decide, and its Eval is *inconclusive*: shown, never passing,
unless its evidence of a worse head is significant anyway (then it blocks). A judge that
cannot decide never turns the gate green. A calibration too small to tell leaves the judge
*out of the gate*; one some of whose pairs got no answer (an error, an outage) says nothing of
the judge: it then judges nothing, and its Eval has no pairwise verdict (`unscored`), as for
the absolute judge (`scoring.panel`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from dataclasses import dataclass, field, replace
from typing import Protocol

from evalward import __version__
from evalward.errors import ConfigError
from evalward.providers.base import RunLabels
from evalward.providers.registry import Providers
from evalward.resources import Eval, Located, ResourceSet
from evalward.resources.models import EvalFixtureSpec, JudgeCalibration
from evalward.resources.pairwise import (
    DEFAULT_MARGIN,
    PairExample,
    PairwiseConfig,
    PairwiseView,
)
from evalward.rundata.pairwise_record import PairAgreement, PairRecord
from evalward.scoring.judges.calibration import answered, chance_agreement, cohen_kappa
from evalward.scoring.judges.consistency import (
    CONSISTENCY_ALPHA,
    binomial_lower_bound,
    binomial_upper_bound,
    consistency_below,
)
from evalward.scoring.judges.judge import JUDGE_TIMEOUT_SECONDS, JudgeSettings
from evalward.scoring.judges.pairwise_judge import (
    LENGTH_NOTE,
    SYSTEM_PROMPT,
    PairCase,
    judge_pair,
)
from evalward.scoring.reps import at_least
from evalward.text.numbers import score_text, threshold_text

SIDE_OF = {"A": "base", "B": "head", "tie": "tie"}
"""A calibration pair's A is shown as the base and its B as the head: the human's A, B or
tie is then the judge's base, head or tie."""

CONFIDENCE = f"{100 * (1 - CONSISTENCY_ALPHA):.0f} % confidence"
"""How a bound's confidence is said: `CONSISTENCY_ALPHA` as the share it is not."""

WHAT_TO_DO = "fix the judge's settings, recalibrate it, or bypass the gate with its label (audited)"


@dataclass(frozen=True)
class FixturePairing:
    """How one fixture's pairs are judged."""

    rubric: str
    view: PairwiseView
    length_controlled: bool
    length_tolerance: float


def pairing_of(located: Located[Eval], fixture: EvalFixtureSpec) -> FixturePairing | None:
    """The fixture's pairwise settings over its Eval's; None when neither asks for it."""
    config = located.resource.spec.judge.pairwise
    own = fixture.pairwise
    if config is None and own is None:
        return None
    base = config or PairwiseConfig()
    rubric = (own.rubric if own is not None else None) or base.rubric
    if not rubric:
        raise ConfigError(
            f"{located.file}:{located.line}: Eval {located.resource.metadata.name!r} judges "
            "fixtures pairwise but gives no rubric: set `judge.pairwise.rubric` (or the "
            "fixture's `pairwise.rubric`)"
        )
    return FixturePairing(
        rubric=rubric,
        view=(own.view if own is not None and own.view is not None else base.view),
        length_controlled=(
            own.length_controlled
            if own is not None and own.length_controlled is not None
            else base.length_controlled
        ),
        length_tolerance=base.length_tolerance,
    )


def pairwise_model(located: Located[Eval]) -> str:
    """The pairwise judge's model: `judge.pairwise.model`, else `judge.model`."""
    spec = located.resource.spec.judge
    model = (spec.pairwise.model if spec.pairwise is not None else None) or spec.model
    if model is None:
        raise ConfigError(
            f"{located.file}:{located.line}: Eval {located.resource.metadata.name!r} judges "
            "fixtures pairwise but names no judge model: set `judge.pairwise.model` or "
            "`judge.model`"
        )
    return model


@dataclass(frozen=True)
class PairwiseJudge:
    """An Eval's pairwise judge as it may be used in this run."""

    eval: str
    model: str
    margin: float = DEFAULT_MARGIN
    consistency_floor: float = 0.8
    inconclusive_reason: str = ""
    """Why this judge may not decide its Eval (uncalibrated, below a floor): "" when it may."""
    agreement: float | None = None
    consistency: float | None = None
    unscored_reason: str = ""
    unscored_outage: bool = False
    length_controlled: bool = False
    left_out_reason: str = ""
    """Why this judge is left out of the gate (its calibration is too small to tell): it
    judges no pair and decides nothing. "" when it is in."""

    @classmethod
    def as_defined(cls, located: Located[Eval]) -> PairwiseJudge:
        """An Eval's pairwise judge as its definition sets it, before any calibration is read."""
        config = located.resource.spec.judge.pairwise or PairwiseConfig()
        return cls(
            eval=located.resource.metadata.name,
            model=pairwise_model(located),
            margin=config.margin,
            consistency_floor=config.consistency_floor,
            length_controlled=config.length_controlled,
        )


@dataclass(frozen=True)
class Judged:
    """An Eval's pairwise judge, the pairs it judged and the fixtures it judges: what
    settling it reads."""

    judge: PairwiseJudge
    pairs: list[PairRecord]
    fixtures: list[str]


class AgreementStore(Protocol):
    """Where calibration replays are kept between runs (the trusted result cache)."""

    def agreement(self, key: str) -> PairAgreement | None: ...

    def keep_agreement(self, key: str, measured: PairAgreement) -> None: ...


@dataclass
class PairwisePanel:
    """Each Eval's pairwise judge, each calibration replayed at most once per judge model, and
    once across runs and pull requests where a `store` keeps the replay: its key is the
    judge (its model and where its replies come from), the calibration and the prompt."""

    providers: Providers
    timeout_seconds: float = JUDGE_TIMEOUT_SECONDS
    store: AgreementStore | None = None
    replayed: dict[str, PairAgreement] = field(default_factory=dict)
    """The replays of the job this panel judges for, by key: kept across its panels (the
    gate's and its attribution variants'), with a store or without."""
    _replays: dict[tuple[str, str], asyncio.Task[PairAgreement]] = field(default_factory=dict)

    async def for_eval(self, located: Located[Eval], resources: ResourceSet) -> PairwiseJudge:
        config = located.resource.spec.judge.pairwise or PairwiseConfig()
        judge = PairwiseJudge.as_defined(located)
        if config.calibration is None:
            return _inconclusive(
                judge,
                "uncalibrated: `judge.pairwise.calibration` names no JudgeCalibration, so its "
                "agreement with people is unknown",
            )
        calibration = resources.calibrations.get(config.calibration)
        if calibration is None:
            return _inconclusive(
                judge,
                f"`judge.pairwise.calibration` names JudgeCalibration {config.calibration!r}, "
                "which is not defined",
            )
        if not calibration.resource.spec.pairs:
            return _inconclusive(
                judge, f"JudgeCalibration {config.calibration!r} has no labelled `pairs`"
            )
        replayed = await self._replay(config.calibration, calibration.resource, judge.model)
        judge = replace(judge, agreement=replayed.kappa, consistency=replayed.consistency)
        if replayed.errors:
            outage = replayed.unavailable == replayed.errors
            what = "provider unavailable — " if outage else ""
            return replace(
                judge,
                unscored_reason=(
                    f"{what}the pairwise judge's calibration {config.calibration!r} could not "
                    f"be computed: {judge.model} gave no answer on {replayed.errors} of its "
                    f"{replayed.errors + replayed.scored} pairs ({replayed.note}); rerun once "
                    "the judge answers"
                ),
                unscored_outage=outage,
            )
        floor = config.calibration_floor
        low, high = kappa_bounds(replayed)
        if replayed.kappa is None or not at_least(high, floor):
            kappa, bound = "undefined", ""
            if replayed.kappa is not None:  # each shown below the floor, as it is
                kappa = score_text(replayed.kappa, floor, passed=False)
                bound = f" (at most {score_text(high, floor, passed=False)} at {CONFIDENCE})"
            return _inconclusive(
                judge,
                f"pairwise calibration {config.calibration!r}: κ of {judge.model} is {kappa}"
                f"{bound} on its {replayed.scored} pairs, below the floor {threshold_text(floor)}",
            )
        consistent = round((replayed.consistency or 0.0) * replayed.scored)
        if consistency_below(consistent, replayed.scored, config.consistency_floor):
            upper = binomial_upper_bound(consistent, replayed.scored, CONSISTENCY_ALPHA)
            return _inconclusive(
                judge,
                f"pairwise calibration {config.calibration!r}: {judge.model} judged "
                f"{consistent} of its {replayed.scored} pairs alike in both orders (at most "
                f"{score_text(upper, config.consistency_floor, passed=False)} at {CONFIDENCE}), "
                f"below the consistency floor {threshold_text(config.consistency_floor)}",
            )
        if not at_least(low, floor):
            needed = pairs_needed(replayed, floor)
            return replace(
                judge,
                left_out_reason=(
                    f"its calibration {config.calibration!r} has too few pairs to tell whether "
                    f"it agrees with people: κ of {judge.model} is {replayed.kappa:.2f} on "
                    f"{replayed.scored} pairs, between {max(low, -1.0):.2f} and {high:.2f} at "
                    f"{CONFIDENCE}, the floor {floor:.2f} among them; label at least "
                    f"{needed} pairs (more where the judge errs) to let it gate"
                ),
            )
        return judge

    async def _replay(self, name: str, calibration: JudgeCalibration, model: str) -> PairAgreement:
        key = (name, model)
        if key not in self._replays:
            self._replays[key] = asyncio.ensure_future(self._kept_or_replayed(calibration, model))
        return await self._replays[key]

    async def _kept_or_replayed(self, calibration: JudgeCalibration, model: str) -> PairAgreement:
        name = calibration.metadata.name
        key = replay_key(self.providers, calibration, model)
        kept = self.replayed.get(key)
        if kept is None and self.store is not None:
            kept = self.store.agreement(key)
        if kept is not None:
            self.replayed[key] = kept
            return kept
        measured = await calibrate_pairs(
            name, calibration, self.providers, model, timeout_seconds=self.timeout_seconds
        )
        if self.store is not None:
            self.store.keep_agreement(key, measured)
        self.replayed[key] = measured
        return measured


def replay_key(providers: Providers, calibration: JudgeCalibration, model: str) -> str:
    """What a calibration replay's answers depend on: evalward's version and the judge's
    prompt (how pairs are asked and checked), the model and where its replies come from, and
    the calibration's rubric and pairs."""
    material = {
        "kind": "pairwise calibration, with its chance agreement",
        "evalward": __version__,
        "prompt": hashlib.sha256((SYSTEM_PROMPT + LENGTH_NOTE).encode()).hexdigest(),
        "model": model,
        "providers": providers.identity_of([model]),
        "calibration": calibration.spec.model_dump(mode="json", by_alias=True),
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def _inconclusive(judge: PairwiseJudge, reason: str) -> PairwiseJudge:
    return replace(judge, inconclusive_reason=reason)


def kappa_bounds(measured: PairAgreement) -> tuple[float, float]:
    """κ's one-sided confidence bounds at `CONSISTENCY_ALPHA`: the Clopper–Pearson bounds of
    the share of pairs it agreed with people on, read as κ at the replay's chance agreement.
    A κ below the lower bound, or above the upper, is seen with chance at most alpha each."""
    chance = measured.chance
    if measured.kappa is None or chance is None or chance >= 1 or not measured.scored:
        return -1.0, 1.0
    low = binomial_lower_bound(measured.agreed, measured.scored, CONSISTENCY_ALPHA)
    high = binomial_upper_bound(measured.agreed, measured.scored, CONSISTENCY_ALPHA)
    return (low - chance) / (1 - chance), (high - chance) / (1 - chance)


def pairs_needed(measured: PairAgreement, floor: float) -> int:
    """The fewest pairs, labelled in the shares these are, on which a judge that agrees on
    every one shows κ at the floor: the lower bound of n agreements of n, alpha^(1/n), must
    reach the agreement that κ = floor is at that chance."""
    chance = measured.human_chance if measured.human_chance is not None else 0.5
    wanted = floor + (1 - floor) * chance
    if wanted >= 1:
        return measured.scored + 1
    return max(math.ceil(math.log(CONSISTENCY_ALPHA) / math.log(wanted)), 1)


# --- calibration ----------------------------------------------------------------------------


def pair_case(rubric: str, example: PairExample) -> PairCase:
    """A labelled pair as two two-step runs: A shown as the base, B as the head."""
    text = example.input if isinstance(example.input, str) else str(example.input)
    return PairCase(
        rubric, example.input, answered(text, example.output_a), answered(text, example.output_b)
    )


async def calibrate_pairs(
    name: str,
    calibration: JudgeCalibration,
    providers: Providers,
    model: str,
    *,
    parallel: int = 4,
    timeout_seconds: float = JUDGE_TIMEOUT_SECONDS,
) -> PairAgreement:
    """Replay every labelled pair in both orders: κ against the people's preferences and the
    share of pairs judged alike in both orders."""
    spec = calibration.spec
    limit = asyncio.Semaphore(max(1, min(parallel, providers.concurrency_of(model))))

    async def one(index: int, example: PairExample) -> PairRecord:
        labels = RunLabels(eval=name, fixture=f"pair-{index + 1}", purpose="pairwise")
        settings = JudgeSettings(providers, model, timeout_seconds=timeout_seconds, labels=labels)
        async with limit:
            return await judge_pair(
                pair_case(spec.rubric, example), settings, fixture=f"pair-{index + 1}", rep=0
            )

    judged = await asyncio.gather(*(one(i, e) for i, e in enumerate(spec.pairs)))
    return agreement(model, judged, [SIDE_OF[e.human_preference] for e in spec.pairs])


def agreement(model: str, judged: list[PairRecord], human: list[str]) -> PairAgreement:
    answered = [(p, h) for p, h in zip(judged, human, strict=True) if p.preferred != "unavailable"]
    failed = [p for p in judged if p.preferred == "unavailable"]
    reasons = [o.error for p in failed for o in p.orders if o.error]
    said: list[str] = [p.preferred for p, _ in answered]
    people = [h for _, h in answered]
    return PairAgreement(
        model=model,
        kappa=cohen_kappa(said, people),
        chance=chance_agreement(said, people) if answered else None,
        human_chance=chance_agreement(people, people) if answered else None,
        consistency=(sum(p.consistent for p, _ in answered) / len(answered) if answered else None),
        scored=len(answered),
        errors=len(failed),
        unavailable=sum(p.outage for p in failed),
        agreed=sum(p.preferred == h for p, h in answered),
        note=reasons[0] if reasons else "",
    )


def gates(measured: PairAgreement) -> bool:
    """Whether a judge measured so would gate at the default floors (κ 0.6 shown on its lower
    confidence bound, consistency 0.8 not shown below on its upper one, as in a run)."""
    consistent = round((measured.consistency or 0.0) * measured.scored)
    return (
        not measured.errors
        and measured.kappa is not None
        and at_least(kappa_bounds(measured)[0], PairwiseConfig().calibration_floor)
        and measured.consistency is not None
        and not consistency_below(consistent, measured.scored, PairwiseConfig().consistency_floor)
    )


def render_pairs(measured: list[PairAgreement]) -> str:
    """`evalward calibrate`'s lines for the labelled pairs: κ and position consistency."""
    lines = ["", "labelled pairs (pairwise judge, both orders):"]
    lines.append(f"{'model':40} {'kappa':>6}  {'consistent':>10}  scored  errors")
    for m in measured:
        kappa_text = "—" if m.kappa is None else f"{m.kappa:.2f}"
        shown = "—" if m.consistency is None else f"{100 * m.consistency:.0f} %"
        line = f"{m.model:40} {kappa_text:>6}  {shown:>10}  {m.scored:>6}  {m.errors:>6}"
        lines.append(line + (f"  {m.note}" if m.note else ""))
        lines.append(f"  {standing(m)}")
    return "\n".join(lines)


def standing(measured: PairAgreement) -> str:
    """Where a judge measured so stands at the default floors, in a run: gating, left out
    (too few pairs to tell, and how many it needs), or below a floor."""
    floor = PairwiseConfig().calibration_floor
    if measured.errors or measured.kappa is None:
        return "cannot decide: κ is not computed on every pair"
    low, high = kappa_bounds(measured)
    below = not at_least(high, floor)
    shown_high = score_text(high, floor, passed=False) if below else f"{high:.2f}"
    between = f"κ between {max(low, -1.0):.2f} and {shown_high} at {CONFIDENCE}"
    if gates(measured):
        return f"gates: {between}, at or above the floor {floor:.2f}"
    if below:
        return f"cannot decide: {between}, below the floor {floor:.2f}"
    consistent = round((measured.consistency or 0.0) * measured.scored)
    if consistency_below(consistent, measured.scored, PairwiseConfig().consistency_floor):
        return "cannot decide: shown inconsistent across orders"
    return (
        f"left out of the gate: {between}, too few pairs to tell; label at least "
        f"{pairs_needed(measured, floor)} pairs"
    )
