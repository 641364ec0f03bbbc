"""An adaptive Eval's verdict, from its scored runs: the sequential tests of `adaptive` applied
to the head's and the base's results, kept on the head's EvalResult (`sequential`), whose
`passed` becomes the tests' verdict. Its fixtures' outcomes say what their tests settled
(`result` pass when settled working, fail when settled broken, skipped when not settled, and
`verdict` the word) and its counts count them so, as every report does; its threshold, its
`minRepPassRate` and its pass^k floor are not read, and its score (on both sides) is the
severity-weighted mean of its fixtures' pass rates. A judge that cannot decide leaves it
inconclusive unless the tests block. Fixed-rep Evals are left as scored, with the rule that
an Eval that cannot be decided is never a pass (verdict/undecided.py) applied to every result."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from evalward.resources import Located
from evalward.resources.models import Eval
from evalward.rundata.results import EvalResult, FixtureResult, Status
from evalward.rundata.sequential_record import SequentialRecord
from evalward.rundata.sides import Side
from evalward.scoring.judges.pairwise_panel import Judged
from evalward.verdict.adaptive import Outcomes, SequentialTests, judge, record
from evalward.verdict.pairwise_verdict import settle_pairwise
from evalward.verdict.preference import pass_rate_share
from evalward.verdict.undecided import tested, unsettled_by_outage, withheld

Definitions = Mapping[Side, Mapping[str, Located[Eval]]]


def settle(
    results: list[EvalResult],
    definitions: Definitions,
    flaky: Mapping[str, Mapping[str, float]] | None = None,
    pairs: Mapping[str, Judged] | None = None,
) -> list[EvalResult]:
    """Each head EvalResult of an Eval with `execution.reps`, decided by its sequential tests
    (its definition read from the side that gates), and of an Eval judged pairwise, by its
    preference tests (`pairs`); every other result as scored, inconclusive where a judge
    cannot decide it (`undecided.withheld`)."""
    settled = _settle(results, definitions, flaky, pairs or {})
    gating = definitions.get(Side.head, {})
    settled = [
        settle_pairwise(r, gating[r.eval], pairs[r.eval])
        if pairs and r.side == Side.head.value and r.eval in pairs and r.eval in gating
        else r
        for r in settled
    ]
    return refused_baseline(settled)


def refused_baseline(results: list[EvalResult]) -> list[EvalResult]:
    """Each head result that passes where the job's budget refused a model call of a base run
    of its Eval, incomplete: such a run failed by what was left of the budget, not by what its
    agent did, and read as the base failing it would hide the head's regression of that
    fixture. A pull request chooses what the budget leaves (an Eval of its own, set aside
    ahead), so this is never a pass, whatever `allow-incomplete` says."""
    refused: dict[str, int] = {}
    for result in results:
        if result.side == Side.base.value:
            refused[result.eval] = sum(f.budget_refused for f in result.fixtures)
    out = []
    for result in results:
        count = refused.get(result.eval, 0)
        if result.side != Side.head.value or not result.passed or not count:
            out.append(result)
            continue
        reason = (
            f"the job's budget refused a model call of {count} of its base runs, which are "
            "therefore no baseline: a regression of their fixtures could not be seen; raise "
            "max-cost-usd (or max-model-calls), or give the base's agent's calls an output "
            "limit (max_tokens) so each fits what the plan's estimate leaves"
        )
        out.append(result.model_copy(update={"passed": False, "incomplete_reason": reason}))
    return out


def _settle(
    results: list[EvalResult],
    definitions: Definitions,
    flaky: Mapping[str, Mapping[str, float]] | None,
    pairs: Mapping[str, Judged],
) -> list[EvalResult]:
    gating = definitions.get(Side.head, {})
    adaptive = {name for name, e in gating.items() if e.resource.spec.execution.reps is not None}
    results = [withheld(r) for r in results]
    results = [pass_rate_scored(r) if r.eval in adaptive else r for r in results]
    base = {r.eval: r for r in results if r.side == Side.base.value}
    settled = []
    for result in results:
        located = gating.get(result.eval)
        reps = located.resource.spec.execution.reps if located is not None else None
        if result.side != Side.head.value or located is None:
            settled.append(result)
            continue
        policy = located.resource.spec.scoring.gate
        result = result.model_copy(update={"fail_on_regression": policy.fail_on_regression})
        if reps is None:
            settled.append(result)
            continue
        # a fixture whose every run was an outage is still a fixture: not enough data
        unheard: dict[str, Sequence[bool]] = {o.name: [] for o in result.fixture_results}
        head_runs = unheard | dict(outcomes(result.fixtures))
        base_result = base.get(result.eval)
        base_runs = outcomes(base_result.fixtures) if base_result is not None else {}
        gates = [name for name in head_runs if name not in result.pending]
        share = pass_rate_share(located.resource.spec, result.eval in pairs)
        call = judge(
            SequentialTests.of(policy, reps, len(gates), share),
            head_runs,
            base_runs,
            gating=gates,
            flaky=(flaky or {}).get(result.eval),
            policy=policy,
        )
        # the threshold read no verdict here: the sequential tests are the other evidence
        result = tested(result, blocks=call.blocks)
        unjudged = base_result.fixtures if base_result is not None else []
        sequential = _with_unjudged(record(call), unjudged)
        result = unsettled_by_outage(result, sequential, blocks=call.blocks)
        undecided = (
            result.incomplete_reason
            or result.advisory
            or result.provider_unavailable
            or result.inconclusive_reason
        )
        settled.append(_as_settled(result, not call.blocks and not undecided, sequential))
    return settled


def _with_unjudged(sequential: SequentialRecord, base: list[FixtureResult]) -> SequentialRecord:
    """The record with each fixture's base runs whose judge was not asked (`base_judging`)."""
    counts = Counter(run.fixture for run in base if run.not_judged)
    if not counts:
        return sequential
    fixtures = [
        f.model_copy(update={"base_not_judged": counts[f.fixture]}) if f.fixture in counts else f
        for f in sequential.fixtures
    ]
    return sequential.model_copy(update={"fixtures": fixtures})


def _as_settled(result: EvalResult, passed: bool, sequential: SequentialRecord) -> EvalResult:
    """The head result with its verdict, its fixtures' outcomes and its counts as the
    sequential tests settled them."""
    outcomes = []
    for outcome in result.fixture_results:
        call = sequential.of(outcome.name)
        if call is None:
            outcomes.append(outcome)
            continue
        status = Status.skipped
        if call.working:
            status = Status.passed
        elif call.broken:
            status = Status.error if outcome.result is Status.error else Status.failed
        outcomes.append(outcome.model_copy(update={"result": status, "verdict": call.verdict}))
    gating = [o for o in outcomes if o.gates]
    passing = sum(o.result is Status.passed for o in gating)
    failing = sum(o.result in (Status.failed, Status.error) for o in gating)
    return result.model_copy(
        update={
            "passed": passed,
            "sequential": sequential,
            "fixture_results": outcomes,
            "passing": passing,
            "failing": failing,
            "errors": sum(o.result is Status.error for o in gating),
            "skipped": len(gating) - passing - failing,
        }
    )


def pass_rate_scored(result: EvalResult) -> EvalResult:
    """An adaptive Eval's score, which decides nothing and reads no `minRepPassRate`: the
    severity-weighted mean of its fixtures' pass rates over their reps."""
    counted = [o for o in result.fixture_results if o.gates and o.counted]
    weights = result.severity_weights
    total = sum(weights.get(o.severity, 1.0) for o in counted)
    rate = sum(weights.get(o.severity, 1.0) * o.pass_rate for o in counted)
    return result.model_copy(update={"score": rate / total if total > 0 else 0.0})


def outcomes(results: list[FixtureResult]) -> Outcomes:
    """Per fixture, whether each rep passed, in rep order; an outage's runs say nothing, nor
    do base runs whose judge was not asked (`base_judging`: no verdict reads them)."""
    runs: dict[str, list[tuple[int, bool]]] = {}
    for result in results:
        if not result.provider_unavailable and not result.not_judged:
            runs.setdefault(result.fixture, []).append((result.rep, result.passed))
    return {name: [passed for _, passed in sorted(reps)] for name, reps in runs.items()}
