"""What an Eval's pairwise judge refers to resolves, at load: a model to judge with, a rubric
for every fixture it judges, and a JudgeCalibration with labelled pairs.

Each is a mistake a run would otherwise meet only once it had called models (no rubric, no
model), or never (a misspelled calibration leaves the judge uncalibrated, so it would judge
without gating), so `evalward validate` and every run refuse it at its line.
"""

from __future__ import annotations

from typing import Any

from evalward.resources.models import Eval, EvalFixture
from evalward.resources.resource_set import Located, ProblemReporter, ResourceSet
from evalward.resources.yamlsource import PathKey

SHOWN = 3
"""Fixtures named in one message at most; the rest are counted."""


def check_pairwise_references(
    name: str,
    located: Located[Eval],
    selected: list[Located[EvalFixture]],
    result: ResourceSet,
    report: ProblemReporter,
) -> None:
    """The references of Eval `name`'s pairwise judge, over the fixtures it `selected`."""
    judge = located.resource.spec.judge
    config = judge.pairwise
    judged = [f for f in selected if config is not None or f.resource.spec.pairwise is not None]
    if not judged:
        return
    at: PathKey = ("spec", "judge", "pairwise")
    if config is None:
        _fixture_rubrics(name, located, judged, report)
    elif not config.rubric:
        _eval_rubric(name, located, judged, report)
    if (config is None or config.model is None) and judge.model is None:
        report(
            located,
            at if config is not None else ("spec",),
            f"Eval {name!r} judges fixtures pairwise, and names no model to judge them; set "
            "`judge.pairwise.model` or `judge.model` (a `provider/model` id)",
        )
    if config is not None and config.calibration is not None:
        _calibration(name, located, config.calibration, result, report)


def _lacks_rubric(fixture: Located[EvalFixture]) -> bool:
    own = fixture.resource.spec.pairwise
    return own is None or not own.rubric


def _eval_rubric(
    name: str, located: Located[Eval], judged: list[Located[EvalFixture]], report: ProblemReporter
) -> None:
    """Under `judge.pairwise` without a rubric, every fixture judged gives its own."""
    lacking = [f for f in judged if _lacks_rubric(f)]
    if not lacking:
        return
    shown = ", ".join(f"{f.resource.metadata.name!r} ({f.file}:{f.line})" for f in lacking[:SHOWN])
    more = f" and {len(lacking) - SHOWN} more" if len(lacking) > SHOWN else ""
    report(
        located,
        ("spec", "judge", "pairwise"),
        f"Eval {name!r} judges fixtures pairwise, and no rubric says what makes one run better "
        f"for {shown}{more}; set `judge.pairwise.rubric`, or the fixture's `pairwise.rubric`",
    )


def _fixture_rubrics(
    name: str, located: Located[Eval], judged: list[Located[EvalFixture]], report: ProblemReporter
) -> None:
    """Without `judge.pairwise`, a fixture that asks for the judge gives its own rubric."""
    for fixture in judged:
        if _lacks_rubric(fixture):
            report(
                fixture,
                ("spec", "pairwise"),
                f"fixture {fixture.resource.metadata.name!r} asks Eval {name!r} for its pairwise "
                "judge, and no rubric says what makes one run better; set the fixture's "
                f"`pairwise.rubric`, or `judge.pairwise.rubric` in Eval {name!r} "
                f"({located.file}:{located.line})",
            )


def _calibration(
    name: str, located: Located[Any], calibration: str, result: ResourceSet, report: ProblemReporter
) -> None:
    """The calibration is defined and has labelled pairs: without them the judge could only
    advise, which a typo must not decide."""
    at: PathKey = ("spec", "judge", "pairwise", "calibration")
    said = f"Eval {name!r} names JudgeCalibration {calibration!r} for its pairwise judge"
    found = result.calibrations.get(calibration)
    if found is None:
        end, follows = result.unresolved("JudgeCalibration", calibration, result.calibrations)
        report(located, at, f"{said}{end}", consequence=follows)
        return
    if not found.resource.spec.pairs:
        report(
            located,
            at,
            f"{said}, which has no labelled `pairs` ({found.file}:{found.line}): the pairwise "
            "judge is calibrated on pairs; add `pairs` (input, outputA, outputB, "
            "humanPreference) to it, or name a JudgeCalibration that has them",
        )
