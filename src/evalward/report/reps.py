"""How the comment and report.html word a fixture's reps and an Eval's seed 001 numbers, so the
two say the same thing the same way ("4/8 reps pass (rule ≥ 60 %), 95 % CI 22–78 %")."""

from __future__ import annotations

from evalward.rundata.results import EvalResult, FixtureOutcome


def percent(value: float) -> str:
    """0.6 -> "60 %", 0.625 -> "62.5 %": whole percents unless that would round a rule."""
    scaled = round(value * 100, 1)
    return f"{scaled:.0f} %" if scaled == int(scaled) else f"{scaled:.1f} %"


def rep_rule(result: EvalResult) -> float | None:
    """The Eval's `minRepPassRate`, where it decides a fixture: with fixed reps. With adaptive
    reps (`sequential`) no rule is read, so none is named."""
    return None if result.sequential is not None else result.min_rep_pass_rate


def reps_text(outcome: FixtureOutcome | None, rule: float | None) -> str:
    """The outcome over reps as the Eval's `minRepPassRate` rule judges it (`rule` None: no
    rule decides, adaptive reps); "" for one rep, or no outcome.

    Reps with nothing evaluated are outside the rate and said apart; timed-out and error reps
    count as not passing, and are named."""
    if outcome is None or outcome.reps < 2:
        return ""
    counted = outcome.reps - outcome.skipped
    interval = outcome.pass_rate_interval
    ruled = f" (rule ≥ {percent(rule)})" if rule is not None else ""
    text = (
        f"{outcome.passes}/{counted} reps pass{ruled}, "
        f"95 % CI {interval.low * 100:.0f}–{interval.high * 100:.0f} %"
    )
    notes = []
    if outcome.errors:
        notes.append(f"{outcome.errors} errored")
    if outcome.timed_out:
        notes.append(f"{outcome.timed_out} timed out")
    if outcome.skipped:
        notes.append(f"{outcome.skipped} with nothing evaluated, not counted")
    every = outcome.pass_hat_k.get(counted)  # pass^k for k = the reps: all of them passed
    all_passed = f"; pass^{counted} {every:.2f}" if every is not None else ""
    return text + (f" ({', '.join(notes)})" if notes else "") + all_passed


def has_run_numbers(result: EvalResult | None) -> bool:
    """Whether to show seed 001's run score: the Eval scores axes and something was scored
    (on a base, every run judged)."""
    return (
        result is not None
        and bool(result.axes)
        and result.run_score is not None
        and not result.not_judged
    )


def axes_text(head: EvalResult, base: EvalResult | None = None) -> str:
    """Each axis on head, after its base value if any: "accuracy 0.90 → 0.75, tone 1.00"."""
    before = base.axes if base is not None and not base.not_judged else {}
    return ", ".join(
        f"{axis} {before[axis]:.2f} → {score:.2f}" if axis in before else f"{axis} {score:.2f}"
        for axis, score in head.axes.items()
    )
