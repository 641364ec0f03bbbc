"""An adaptive Eval's verdict, from its scored runs: the sequential tests of `adaptive` applied
to the head's and the base's results, kept on the head's EvalResult (`sequential`), whose
`passed` becomes the tests' verdict. Fixed-rep Evals are left as scored."""

from __future__ import annotations

from collections.abc import Mapping

from evalward.resources import Located
from evalward.resources.models import Eval
from evalward.rundata.results import EvalResult, FixtureResult
from evalward.rundata.sides import Side
from evalward.stages.adaptive import Outcomes, SequentialTests, judge, record

Definitions = Mapping[Side, Mapping[str, Located[Eval]]]


def settle(
    results: list[EvalResult],
    definitions: Definitions,
    flaky: Mapping[str, Mapping[str, float]] | None = None,
) -> list[EvalResult]:
    """Each head EvalResult of an Eval with `execution.reps`, decided by its sequential tests
    (its definition read from the side that gates); every other result as it was."""
    gating = definitions.get(Side.head, {})
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
        head_runs = outcomes(result.fixtures)
        base_result = base.get(result.eval)
        base_runs = outcomes(base_result.fixtures) if base_result is not None else {}
        gates = [name for name in head_runs if name not in result.pending]
        tests = SequentialTests.of(policy, reps, len(gates))
        call = judge(
            tests,
            head_runs,
            base_runs,
            gating=gates,
            flaky=(flaky or {}).get(result.eval),
            policy=policy,
        )
        verdict = not call.blocks and not (result.incomplete_reason or result.advisory)
        verdict = verdict and not result.provider_unavailable
        settled.append(
            result.model_copy(update={"passed": verdict, "sequential": record(call, tests)})
        )
    return settled


def outcomes(results: list[FixtureResult]) -> Outcomes:
    """Per fixture, whether each rep passed, in rep order; an outage's runs say nothing."""
    runs: dict[str, list[tuple[int, bool]]] = {}
    for result in results:
        if not result.provider_unavailable:
            runs.setdefault(result.fixture, []).append((result.rep, result.passed))
    return {name: [passed for _, passed in sorted(reps)] for name, reps in runs.items()}
