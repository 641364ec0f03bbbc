"""The base's absolute judge under adaptive reps with a pairwise judge: asked only where the
verdict reads it.

Each pair already holds a base run beside a head run, and the pairwise judge says which is
better; the base's own judge verdicts decide nothing of the gate there. Under adaptive reps
they only word a fixture the head fails ("regression" or "still failing", both block; "likely
regression" or "unreliable baseline", neither does), and the pooled test's verdict when it
leans broken. So a base run of such a fixture is scored first without its judge assertions
(each `deferred`, the run `skipped`: nothing reads its pass or score), and they are asked
between the rounds once the head has failed the fixture, and at the end for every base run of
an Eval whose pooled test leans broken; each is asked before any verdict reads it.

Fixed reps keep the base's judge: they compare scores across the sides. A fixture whose judge
reads the run through code (a transform, a scoring function) is judged at once
(`scores.judged_later`), as is every run of an Eval without a judge model.

A base run stored in the result cache unjudged is served only to a run that defers its judge
(`execute`); once judged, it replaces what its key held.

Attribution's variants of a regression found in pairs (`RunOptions.judge_head_after_pairs`)
read a fixture as regressed while its pairs find it worse, whatever its judge says: there a
head run's judge is left for later too, and asked once the fixture's pairs do not lean worse
(right after its first pair, most often) or, at the end, where they did not settle worse. A
variant that behaves like the head then costs its pairs and its agent's calls, not a judge
call per run besides.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from evalward.execute.pairs import PairJudging
from evalward.plan.plan import PlannedRun
from evalward.plan.run_context import RunContext
from evalward.providers.base import RunLabels
from evalward.rundata.results import FixtureResult
from evalward.rundata.sides import Side
from evalward.rundata.spool import TraceSource
from evalward.scoring.judges.panel import JudgePanel
from evalward.scoring.scores import judge_deferred, judged_later
from evalward.verdict.adaptive import SequentialTests, SequentialVerdict, judge
from evalward.verdict.preference import pass_rate_share
from evalward.verdict.settle import outcomes

POOLED_READS_BASE = (SequentialVerdict.failing, SequentialVerdict.likely_regression)
"""The pooled test's verdicts, head alone, that its base would word: it leans broken."""


@dataclass
class BaseJudging:
    """Which runs leave their judge for later (the base's, and a variant's head runs in
    pairs), and asking it where the verdict reads it."""

    context: RunContext
    pairs: PairJudging
    """The run's pairs: which fixtures are judged in pairs, and what their pairs say."""
    trace_of: TraceSource
    panel: JudgePanel = field(init=False)
    asked: int = 0
    """Base runs judged later, in this run."""

    def __post_init__(self) -> None:
        self.panel = JudgePanel(self.context.providers)

    def defers(self, run: PlannedRun) -> bool:
        """Whether `run` is scored first without its judge assertions: a base run of an
        adaptive Eval's fixture judged in pairs (or, in a variant of a regression found in
        pairs, a head run of one), with a judge model, whose judge assertions read the run
        as it is."""
        checkouts = self.context.checkouts
        if run.side is Side.head:
            later = self.context.options.judge_head_after_pairs and Side.base in checkouts
        else:
            later = run.eval in self.context.plan.adaptive
        checkout = checkouts.get(run.side)
        if not later or checkout is None:
            return False
        if run.fixture not in self.pairs.fixtures.get(run.eval, ()):
            return False
        located = checkout.resources.evals.get(run.eval)
        fixture = checkout.resources.fixtures.get(run.fixture)
        if located is None or fixture is None or located.resource.spec.judge.model is None:
            return False
        return judged_later(fixture.resource.spec)

    async def ask(
        self,
        results: list[FixtureResult],
        *,
        final: bool = False,
        flaky: Mapping[str, Mapping[str, float]] | None = None,
    ) -> None:
        """Judge, in place in `results`, the unjudged runs the verdict reads now: a head run
        whose fixture's pairs do not lean worse (or, once the rounds are over, `final`, did
        not settle worse; one with no pair is judged then); then a base run of a fixture the
        head did not pass every time, and (`final`) every one of an Eval whose pooled test
        leans broken."""
        heads = [i for i, r in enumerate(results) if r.side == Side.head.value and r.not_judged]
        worse = self.pairs.worse(so_far=not final) if heads else set()
        for index in heads:
            if (results[index].eval, results[index].fixture) not in worse:
                results[index] = await self._judged(results[index])
        waiting = [i for i, r in enumerate(results) if r.side == Side.base.value and r.not_judged]
        if not waiting:
            return
        failed = {
            (r.eval, r.fixture)
            for r in results
            if r.side == Side.head.value and not r.passed and not r.not_judged
        }
        pooled = self._pooled_reads_base(results, flaky or {}) if final else set()
        for index in waiting:
            result = results[index]
            if (result.eval, result.fixture) in failed or result.eval in pooled:
                results[index] = await self._judged(result)

    async def _judged(self, result: FixtureResult) -> FixtureResult:
        side = Side(result.side)
        checkout = self.context.checkouts[side]
        located = checkout.resources.evals[result.eval]
        judge_of = await self.panel.for_eval(located, checkout.resources, side.value)
        trace = self.trace_of(result)
        judged = await judge_deferred(
            checkout.resources.fixtures[result.fixture],
            result,
            trace,
            located.resource.spec.scoring,
            judge_of,
            run=RunLabels(eval=result.eval, rep=result.rep, side=result.side, sha=checkout.sha),
        )
        if side is Side.base:
            self.asked += 1
        cache = self.context.options.cache
        if cache is not None:
            run = PlannedRun(side, result.eval, result.fixture, result.rep)
            cache.replace(self.context.keys.of(run), judged.model_copy(update={"trace": trace}))
        return judged

    def _pooled_reads_base(
        self, results: list[FixtureResult], flaky: Mapping[str, Mapping[str, float]]
    ) -> set[str]:
        """The adaptive Evals whose pooled test, on the head's runs, leans broken: its verdict
        then reads the base's runs of every fixture it pools."""
        plan, gating = self.context.plan, self.context.checkouts[Side.head].resources.evals
        found: set[str] = set()
        for name in plan.adaptive:
            located = gating.get(name)
            reps = located.resource.spec.execution.reps if located is not None else None
            if located is None or reps is None:
                continue
            spec = located.resource.spec
            mine = [r for r in results if r.eval == name and r.side == Side.head.value]
            head: dict[str, list[bool]] = {
                r.fixture: [] for r in plan.runs if r.eval == name and r.side is Side.head
            }
            head |= {k: list(v) for k, v in outcomes(mine).items()}
            gates = [f for f in head if f not in plan.pending.get(name, ())]
            share = pass_rate_share(spec, name in self.pairs.fixtures)
            tests = SequentialTests.of(spec.scoring.gate, reps, len(gates), share)
            call = judge(
                tests, head, {}, gating=gates, flaky=flaky.get(name), policy=spec.scoring.gate
            )
            if call.pooled in POOLED_READS_BASE:
                found.add(name)
        return found
