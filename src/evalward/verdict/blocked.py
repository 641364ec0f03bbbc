"""Why a gate blocks: which fixtures fail an Eval, which regression rule applies to it (its
own `failOnRegression`, tightened by an action input; none with adaptive reps, whose
sequential tests decide), and one line per block naming the rule that decided (the threshold,
`failOnRegression`, the per-fixture or the pooled sequential test), the fixtures that drove it
and their numbers."""

from __future__ import annotations

from dataclasses import dataclass

from evalward.resources.gate_policy import RegressionPolicy
from evalward.text.numbers import bound_text, score_text, threshold_text
from evalward.verdict.compare import SIGNIFICANCE, Change, EvalComparison, FixtureComparison


def why(
    below: list[EvalComparison], regressed_evals: list[EvalComparison], tightened: RegressionPolicy
) -> list[str]:
    """What blocks, Eval by Eval: the test, the fixtures and their numbers."""
    said: list[str] = []
    for c in below:
        if c.head.pairwise is not None and c.head.pairwise.blocks:
            said += [f"{c.name}: {line}" for line in c.head.pairwise.why]
        if c.head.sequential is not None:
            said += [f"{c.name}: {line}" for line in c.head.sequential.why]
            continue
        if pairwise_only(c):
            continue
        fixtures = failing(c)
        named = ", ".join(f"{f.fixture} ({f.numbers()})" for f in fixtures[:5])
        more = f" and {len(fixtures) - 5} more" if len(fixtures) > 5 else ""
        said.append(f"{c.name}: {_shortfall(c)} — failing {named or 'no fixture'}{more}")
    for c in regressed_evals:
        said += _lines(c, policy_of(c, tightened))
    return said


def falls_short(comparison: EvalComparison) -> tuple[bool, str, str]:
    """The fixed-reps rule a failing Eval falls short of, as text: (True, its pass^k, its
    minPassHatK) when it meets its threshold, else (False, its score, its threshold); the
    score is never written at or above the threshold it misses."""
    head = comparison.head
    floor, reached = head.min_pass_hat_k, head.pass_hat_k
    if head.score >= head.pass_threshold and floor is not None and reached is not None:
        return True, f"{reached:.2f}", f"{floor:.2f}"
    score = score_text(head.score, head.pass_threshold, False)
    return False, score, threshold_text(head.pass_threshold)


def _shortfall(comparison: EvalComparison) -> str:
    pass_k, reached, line = falls_short(comparison)
    if pass_k:
        return f"pass^k {reached} is below its minPassHatK {line}"
    return f"score {reached} is below its threshold {line}"


def pairwise_only(comparison: EvalComparison) -> bool:
    """Blocked by its pairwise judge alone: its own rules (threshold, pass^k; or its
    sequential tests) pass."""
    head = comparison.head
    if head.pairwise is None or not head.pairwise.blocks:
        return False
    if head.sequential is not None:
        return not head.sequential.blocks
    floor, reached = head.min_pass_hat_k, head.pass_hat_k
    return head.score >= head.pass_threshold and (
        floor is None or reached is None or reached >= floor
    )


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
    """The fixtures that make the Eval fail: with adaptive reps, those whose own test blocks,
    then (when the pooled test blocks) those that failed a head rep and so drove it."""
    pairwise = comparison.head.pairwise
    worse = [f.fixture for f in pairwise.fixtures if f.blocks] if pairwise is not None else []
    if pairwise is not None and pairwise.blocks and pairwise.pooled == "worse":
        worse += [f.fixture for f in pairwise.fixtures if f.counts.base > f.counts.head]
    worse = list(dict.fromkeys(worse))
    if pairwise_only(comparison):
        return worse
    record = comparison.head.sequential
    if record is None:
        names = [f.fixture for f in failing(comparison)]
    else:
        names = [f.fixture for f in record.fixtures if f.blocks]
        if record.pooled_blocks:
            names += [
                f.fixture
                for f in record.fixtures
                if f.head_passes < f.head_runs and f.fixture not in names
            ]
    return names + [f for f in worse if f not in names]


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
            p = bound_text(test.p_value, beside=SIGNIFICANCE)  # 0.046, never "0.05 < 0.05"
            lines.append(
                f"{comparison.name} / {f.fixture}: significant regression (McNemar's exact "
                f"test per fixture: {test.worse} worse / {test.better} better over paired "
                f"reps, p = {p} < {SIGNIFICANCE}; {f.numbers()})"
            )
        return lines
    return [
        f"{comparison.name} / {f.fixture}: regression, passed on base and fails on head "
        f"({f.numbers()}; `failOnRegression: any` blocks every one)"
        for f in comparison.of(Change.regression)
        if f.gates
    ]


def regresses(comparison: EvalComparison, tightened: RegressionPolicy) -> bool:
    """Whether the Eval's regressions block it under its own rule, tightened."""
    policy = policy_of(comparison, tightened)
    if policy is RegressionPolicy.any:
        return bool(comparison.of(Change.regression))
    if policy is RegressionPolicy.significant:
        return comparison.significant_regression
    return False


@dataclass
class Verdicts:
    """The affected Evals by what they say of the gate."""

    advisory: list[EvalComparison]
    """Nothing in them may gate."""
    gating: list[EvalComparison]
    unscored: list[EvalComparison]
    """Their judge could not score: no verdict."""
    inconclusive: list[EvalComparison]
    """Their own rules pass, and a judge that cannot decide leaves them without a verdict."""
    down: list[EvalComparison]
    """Every head run's provider was unavailable: no verdict."""
    below: list[EvalComparison]
    """Failing on their own verdict: below the threshold, or blocked by sequential tests."""
    regressed: list[EvalComparison]
    """Passing their threshold, and blocked by `failOnRegression`."""
    unrun: list[EvalComparison]
    """The budget skipped every head run of them: no score to fail by, and their skipped
    runs decide (incomplete, or an excused pass)."""

    @classmethod
    def of(
        cls,
        comparisons: list[EvalComparison],
        regressions: RegressionPolicy,
        skipped: frozenset[str] = frozenset(),
    ) -> Verdicts:
        """`skipped`: the Evals some of whose head runs the budget skipped. One that ran
        none at all is not below its threshold (it has no score): the skipped runs make the
        gate incomplete, or an excused pass, as they would with one run that did."""
        # the base branch's own Evals first, in their order: what blocks is said of them
        # before the Evals the pull request adds (`EvalComparison.added`)
        gating = sorted((c for c in comparisons if not c.head.advisory), key=lambda c: c.added)
        unscored = [c for c in gating if c.head.incomplete_reason]
        undecided = [c for c in gating if c.head.inconclusive_reason and c not in unscored]
        unrun = [c for c in gating if c.name in skipped and c.head.total == 0]
        failed = [
            c
            for c in gating
            if not c.head.passed and c not in unscored and c not in undecided and c not in unrun
        ]
        # an inconclusive Eval passed its own rules: a regression rule still reads it
        regressed = [
            c for c in gating if (c.head.passed or c in undecided) and regresses(c, regressions)
        ]
        return cls(
            advisory=[c for c in comparisons if c.head.advisory],
            gating=gating,
            unscored=unscored,
            inconclusive=[c for c in undecided if c not in regressed],
            down=[c for c in failed if c.head.provider_unavailable],
            below=[c for c in failed if not c.head.provider_unavailable],
            regressed=regressed,
            unrun=unrun,
        )

    @property
    def failing(self) -> list[EvalComparison]:
        return self.below + self.regressed


def unread(comparisons: list[EvalComparison], regressions: RegressionPolicy) -> list[str]:
    """The run's `failOnRegression` tightening (the action's input), where an Eval does not
    read it: said, never ignored in silence."""
    adaptive = [c.name for c in comparisons if c.head.sequential is not None]
    if regressions is RegressionPolicy.none or not adaptive:
        return []
    return [
        f"fail-on-regression: {regressions.value} does not apply to {', '.join(adaptive)}: "
        "with adaptive reps (`execution.reps`) the sequential tests decide, and a settled "
        "regression always blocks"
    ]
