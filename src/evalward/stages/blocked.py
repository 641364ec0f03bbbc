"""Why a gate blocks: which fixtures fail an Eval, which regression rule applies to it (its
own `failOnRegression`, tightened by an action input), and one line per block naming the test,
the fixtures that drove it and their numbers."""

from __future__ import annotations

from evalward.resources.gate_policy import RegressionPolicy
from evalward.rundata.sequential_record import bound_text
from evalward.stages.compare import SIGNIFICANCE, Change, EvalComparison, FixtureComparison


def why(
    below: list[EvalComparison], regressed_evals: list[EvalComparison], tightened: RegressionPolicy
) -> list[str]:
    """What blocks, Eval by Eval: the test, the fixtures and their numbers."""
    said: list[str] = []
    for c in below:
        if c.head.sequential is not None:
            said += [f"{c.name}: {line}" for line in c.head.sequential.why]
            continue
        fixtures = failing(c)
        named = ", ".join(f"{f.fixture} ({f.numbers()})" for f in fixtures[:5])
        more = f" and {len(fixtures) - 5} more" if len(fixtures) > 5 else ""
        said.append(
            f"{c.name}: score {c.head.score:.2f} is below its threshold "
            f"{c.head.pass_threshold:.2f} — failing {named or 'no fixture'}{more}"
        )
    for c in regressed_evals:
        said += _lines(c, policy_of(c, tightened))
    return said


def failing(comparison: EvalComparison) -> list[FixtureComparison]:
    return [
        f
        for f in comparison.fixtures
        if f.gates
        and (
            f.change is Change.regression
            or (f.change not in (Change.removed, Change.advisory) and not f.head_passed)
        )
    ]


def failing_fixtures(comparison: EvalComparison) -> list[str]:
    names = [f.fixture for f in failing(comparison)]
    record = comparison.head.sequential
    if record is not None and record.pooled in ("regression", "still failing"):
        names += [
            f.fixture
            for f in record.fixtures
            if f.head_passes < f.head_runs and f.fixture not in names
        ]
    return names


def policy_of(comparison: EvalComparison, tightened: RegressionPolicy) -> RegressionPolicy:
    """The Eval's own `failOnRegression`, tightened (never loosened) by an action input."""
    if comparison.head.sequential is not None:
        return RegressionPolicy.none  # its sequential tests already decided
    return comparison.head.fail_on_regression.tightest(tightened)


def _lines(comparison: EvalComparison, policy: RegressionPolicy) -> list[str]:
    if policy is RegressionPolicy.significant:
        lines = []
        for f in comparison.significant_fixtures():
            test = f.mcnemar()
            lines.append(
                f"{comparison.name} / {f.fixture}: significant regression (McNemar's exact "
                f"test per fixture: {test.worse} worse / {test.better} better over paired "
                f"reps, p = {bound_text(test.p_value)} < {SIGNIFICANCE}; {f.numbers()})"
            )
        return lines
    return [
        f"{comparison.name} / {f.fixture}: regression, passed on base and fails on head "
        f"({f.numbers()}; `failOnRegression: any` blocks every one)"
        for f in comparison.of(Change.regression)
        if f.gates
    ]


def regressed(comparison: EvalComparison, policy: RegressionPolicy) -> bool:
    if policy is RegressionPolicy.any:
        return bool(comparison.of(Change.regression))
    if policy is RegressionPolicy.significant:
        return comparison.significant_regression
    return False


def regresses(comparison: EvalComparison, tightened: RegressionPolicy) -> bool:
    """Whether the Eval's regressions block it under its own rule, tightened."""
    return regressed(comparison, policy_of(comparison, tightened))
