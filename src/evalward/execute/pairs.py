"""The pairwise judging of a run: each fixture's base and head runs of one rep, judged once both
are in, between the rounds; and, under adaptive reps, the runs its open preference tests ask
for next.

Which fixtures are judged, the rubric, the model and the margin come from the definitions that
gate (the base branch's under `gate-config: base`): the head checkout's Evals and fixtures. A
pair is made of runs that reached their agent: a run lost to an outage says nothing, so it
makes no pair. A pair's swapped order is asked only to confirm its first order's preference
(`judge_pair`): a first order that ties settles the pair. The judge's calls go through the
providers, so the response cache answers a pair already judged on the same two runs, and the
run's meter counts them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field

from evalward.plan.plan import Checkout, Plan, PlannedRun
from evalward.plan.run_context import RunContext
from evalward.providers.base import RunLabels
from evalward.resources import ResourceSet
from evalward.rundata.pairwise_record import WORSE, PairRecord
from evalward.rundata.results import FixtureResult
from evalward.rundata.sides import Side
from evalward.rundata.spool import TraceSpool
from evalward.rundata.trace import Trace
from evalward.scoring.judges.judge import JudgeSettings
from evalward.scoring.judges.pairwise_judge import PairCase, judge_pair
from evalward.scoring.judges.pairwise_panel import (
    FixturePairing,
    Judged,
    PairwiseJudge,
    PairwisePanel,
    pairing_of,
    pairwise_model,
)
from evalward.verdict.preference import (
    PreferenceTests,
    as_judged,
    by_fixture,
    leans_worse,
    more_pairs,
    preference_share,
)

PARALLEL_PAIRS = 4


def pairwise_fixtures(
    plan: Plan, checkouts: Mapping[Side, Checkout]
) -> dict[str, dict[str, FixturePairing]]:
    """Per planned Eval that judges pairwise, its fixtures' settings (from the definitions
    that gate). Refuses, before anything runs, an Eval that asks for it with no rubric or no
    model."""
    head = checkouts[Side.head].resources
    found: dict[str, dict[str, FixturePairing]] = {}
    for name in plan.evals:
        judged = judged_fixtures(plan, head, name)
        if judged:
            pairwise_model(head.evals[name])
            found[name] = judged
    return found


def judged_fixtures(plan: Plan, head: ResourceSet, name: str) -> dict[str, FixturePairing]:
    """The fixtures of Eval `name` its pairwise judge judges, with their settings: those the
    plan runs on the head and those adaptive reps may add, that ask for the judge (`head`:
    the definitions that gate). A fixture the pull request adds to a base Eval (pending) is
    not one: it has no base run to pair with, and an Eval judged in pairs gives its pass-rate
    tests a quarter of their false-block rate (`pass_rate_share`), which a fixture of the pull
    request's must not choose."""
    located = head.evals.get(name)
    if located is None:
        return {}
    fixtures = {
        r.fixture for r in plan.runs if r.eval == name and r.side is Side.head and plan.gates(r)
    }
    fixtures |= set(plan.adaptive.get(name, ()))
    return {
        f: pairing
        for f in sorted(fixtures)
        if f in head.fixtures
        and (pairing := pairing_of(located, head.fixtures[f].resource.spec)) is not None
    }


@dataclass
class PairJudging:
    """The run's pairs: judged as both runs of a rep are in, kept until the Evals settle."""

    context: RunContext
    traces: TraceSpool | None = None
    fixtures: dict[str, dict[str, FixturePairing]] = field(init=False)
    panel: PairwisePanel = field(init=False)
    judges: dict[str, PairwiseJudge] = field(default_factory=dict)
    pairs: dict[tuple[str, str, int], PairRecord] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.fixtures = pairwise_fixtures(self.context.plan, self.context.checkouts)
        options = self.context.options
        self.panel = PairwisePanel(
            self.context.providers, store=options.cache, replayed=options.replays
        )

    @property
    def head(self) -> ResourceSet:
        """The definitions that gate: the pairs' rubrics, models and margins are theirs."""
        return self.context.checkouts[Side.head].resources

    @property
    def active(self) -> bool:
        return bool(self.fixtures)

    async def judge(self, results: list[FixtureResult]) -> None:
        """Judge every pair whose two runs are in and that is not judged yet. A fixture's
        n-th head run that reached its agent is paired with its n-th such base run, so a run
        lost to an outage leaves no run unpaired."""
        if not self.fixtures or not self.context.options.judge_pairs:
            return
        runs: dict[tuple[str, str], dict[str, list[FixtureResult]]] = {}
        for result in sorted(results, key=lambda r: r.rep):
            paired = result.fixture in self.fixtures.get(result.eval, {})
            if paired and not result.provider_unavailable:
                sides = runs.setdefault((result.eval, result.fixture), {})
                sides.setdefault(result.side, []).append(result)
        waiting = [
            (name, fixture, index, head, base)
            for (name, fixture), sides in sorted(runs.items())
            for index, (head, base) in enumerate(
                zip(sides.get(Side.head.value, []), sides.get(Side.base.value, []), strict=False)
            )
            if (name, fixture, index) not in self.pairs
        ]
        limit = asyncio.Semaphore(PARALLEL_PAIRS)

        async def one(
            name: str, fixture: str, index: int, head: FixtureResult, base: FixtureResult
        ) -> None:
            judge = await self._judge_of(name)
            if judge.unscored_reason or judge.left_out_reason:
                return  # no verdict to give, or none it may give: no pair is asked
            async with limit:
                pair = await self._pair(judge, head, base)
            self.pairs[(name, fixture, index)] = pair.model_copy(update={"rep": index})

        await asyncio.gather(*(one(*key) for key in waiting))

    async def _judge_of(self, name: str) -> PairwiseJudge:
        if name not in self.judges:
            self.judges[name] = await self.panel.for_eval(self.head.evals[name], self.head)
        return self.judges[name]

    async def _pair(
        self, judge: PairwiseJudge, head: FixtureResult, base: FixtureResult
    ) -> PairRecord:
        resources = self.head
        spec = resources.fixtures[head.fixture].resource.spec
        pairing = self.fixtures[head.eval][head.fixture]
        case = PairCase(
            rubric=pairing.rubric,
            input=spec.input.model_dump(mode="json") if spec.input is not None else None,
            base=self._trace(base),
            head=self._trace(head),
            view=pairing.view,
            length_controlled=pairing.length_controlled,
            length_tolerance=pairing.length_tolerance,
            reference=spec.reference,
        )
        target = resources.evals[head.eval].resource.spec.target_agent
        labels = RunLabels(
            agent=target, fixture=head.fixture, eval=head.eval, rep=head.rep, purpose="pairwise"
        )
        settings = JudgeSettings(self.context.providers, judge.model, labels=labels)
        pair = await judge_pair(
            case, settings, fixture=head.fixture, rep=head.rep, swap_when_tied=False
        )
        private = spec.visibility == "private" or (
            resources.evals[head.eval].resource.spec.visibility == "private"
        )
        if not private:
            return pair
        return pair.model_copy(update={"private": True, "head_final": "", "base_final": ""})

    def _trace(self, result: FixtureResult) -> Trace:
        if self.traces is not None:
            return self.traces.trace_of(result)
        return result.trace if result.trace is not None else Trace()

    async def warm(self) -> None:
        """On the action's run with no base (a push to the default branch: `warm_pairs`),
        replay each pairwise judge's calibration into a result cache that keeps it: no pair
        needs it here (the Eval is settled as without it), but a pull request whose cache is
        restored from this branch's then reads it and asks none of its pairs
        (`PairwisePanel`)."""
        options = self.context.options
        if Side.base in self.context.checkouts or options.cache is None or not options.cache.writes:
            return
        if not options.judge_pairs or not options.warm_pairs:
            return
        for name in self.fixtures:  # what it finds decides nothing here: no pair was made
            await self.panel.for_eval(self.head.evals[name], self.head)

    def judged(self) -> dict[str, Judged]:
        """Per Eval judged pairwise, its judge and its pairs (none when nothing was paired:
        then its settings alone, no calibration replayed for nothing)."""
        out: dict[str, Judged] = {}
        for name in self.fixtures:
            judge = self.judges.get(name) or PairwiseJudge.as_defined(self.head.evals[name])
            pairs = [p for (e, _, _), p in sorted(self.pairs.items()) if e == name]
            out[name] = Judged(judge, pairs, sorted(self.fixtures[name]))
        return out

    def worse(self, *, so_far: bool = False) -> set[tuple[str, str]]:
        """The (Eval, fixture) whose pairs find the head worse by its own test, as the verdict
        will (`preference.decide`); `so_far` (between rounds), also those with no pair yet or
        whose first pair went to the base, while their test is open."""
        found: set[tuple[str, str]] = set()
        for name, fixtures in self.fixtures.items():
            tests = self._tests(name)
            grouped = by_fixture(as_judged([p for (e, _, _), p in self.pairs.items() if e == name]))
            tilted = sum(leans_worse(pairs) for f, pairs in grouped.items() if f in fixtures)
            for fixture in fixtures:
                pairs = grouped.get(fixture, [])
                still_open = so_far and (not pairs or leans_worse(pairs))
                if still_open or (pairs and tests.fixture_verdict(pairs, tilted)[0] == WORSE):
                    found.add((name, fixture))
        return found

    def _tests(self, name: str) -> PreferenceTests:
        """Eval `name`'s preference tests, at its judge's margin (as its definition sets it
        until the judge is made)."""
        located = self.head.evals[name]
        margin = (self.judges.get(name) or PairwiseJudge.as_defined(located)).margin
        spec = located.resource.spec
        return PreferenceTests.of(spec.scoring.gate, margin, preference_share(spec))

    def next_round(self, results: list[FixtureResult]) -> list[PlannedRun]:
        """The runs the adaptive Evals' open preference tests ask for next."""
        if not self.context.options.judge_pairs:
            return []
        plan = self.context.plan
        planned = plan.next_reps()
        extra: list[PlannedRun] = []
        for name, fixtures in self.fixtures.items():
            located = self.head.evals[name]
            spec = located.resource.spec
            judge = self.judges.get(name)
            left_out = judge is not None and (judge.unscored_reason or judge.left_out_reason)
            if spec.execution.reps is None or left_out:
                continue
            paired = [f for f in fixtures if f in plan.adaptive.get(name, ())]
            runs: dict[Side, dict[str, int]] = {Side.head: {}, Side.base: {}}
            for result in results:
                if result.eval == name and not result.provider_unavailable:
                    count = runs[Side(result.side)]
                    count[result.fixture] = count.get(result.fixture, 0) + 1
            pairs = as_judged([p for (e, _, _), p in self.pairs.items() if e == name])
            tests = self._tests(name)
            for side, fixture in more_pairs(tests, pairs, runs, spec.execution.reps, paired):
                key = (side, name, fixture)
                rep = planned.get(key, 0)
                if rep >= spec.execution.reps.max:
                    continue
                planned[key] = rep + 1
                extra.append(PlannedRun(side, name, fixture, rep))
        return extra
