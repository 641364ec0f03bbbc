"""pass^k over an Eval: the share of its fixtures whose every rep passed (tau-bench's
measure of reliability), and the gate an Eval can put on it (`scoring.minPassHatK`).

With k reps a fixture's pass rate says how often the agent gets it right; pass^k says
whether it gets it right every time, which is what a customer holding the same conversation
k times sees. A fixture with no counted rep is left out, as it is of the score.
"""

from __future__ import annotations

from evalward.rundata.results import FixtureOutcome, Status

TOLERANCE = 1e-9


def all_reps_passed(outcome: FixtureOutcome) -> bool:
    counted = outcome.reps - outcome.skipped
    return counted > 0 and outcome.passes == counted


def eval_pass_hat_k(decided: list[FixtureOutcome]) -> float | None:
    """The share of the decided fixtures whose every counted rep passed (None: none)."""
    if not decided:
        return None
    return sum(all_reps_passed(o) for o in decided) / len(decided)


def meets_pass_hat_k(value: float | None, floor: float | None) -> bool:
    """Whether an Eval's pass^k reaches its `scoring.minPassHatK` (always, when unset)."""
    return floor is None or (value is not None and value >= floor - TOLERANCE)


def decided_outcomes(outcomes: list[FixtureOutcome]) -> list[FixtureOutcome]:
    return [o for o in outcomes if o.gates and o.counted and o.result is not Status.skipped]
