"""Simulate the gate on a small quality drop: a 0-1 rubric judge against the pairwise judge.

An agent's run on fixture f has a latent quality q = mu_f + e (mu_f in [0.60, 0.90], the
fixture's difficulty; e ~ N(0, RUN_NOISE)). A change that makes replies slightly worse lowers
every mu_f by DROP. Two scripted judges whose noise is known read the runs:

- the absolute judge scores a run q + N(0, JUDGE_NOISE), clipped to [0, 1]; its `judge`
  assertion passes at `minScore` MIN_SCORE. That run's pass or fail goes through evalward's own
  `score_eval`, `settle`, `compare` and `decide` at fixed reps (REPS), with the Eval's
  `failOnRegression: significant` (McNemar per fixture) as the rule that could see a drop.
- the pairwise judge reads a fixture's base and head runs of one rep in each order: it
  perceives q_head - q_base + N(0, JUDGE_NOISE) plus POSITION_BIAS toward the run shown first,
  and answers the better run beyond TIE_BAND, else a tie. The two orders are combined by
  evalward's own `combine` (disagreeing orders are a tie) and the pairs go through `settle`
  (the preference tests at the default `scoring.gate` rates and margin), `compare`, `decide`.
  Fixed reps: REPS pairs per fixture. Adaptive reps (`reps: {max: REPS}`): one pair per
  fixture, then the pairs `preference.more_pairs` asks for, round by round.

Reported, per judge: false blocks on an unchanged pull request, detection of the drop, and the
calls per pull request (agent runs on both sides, judge calls). One command regenerates the
table of docs/benchmarks.md:

    python bench/pairwise_sim.py [--trials 400] [--seed 11]
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass

from evalward.resources import Eval, Located
from evalward.resources.models import Severity
from evalward.rundata.pairwise_record import OrderRecord, PairRecord, Preference
from evalward.rundata.results import AssertionResult, FixtureResult, Status, Verdict
from evalward.rundata.sides import Side
from evalward.scoring.judges.pairwise_judge import combine
from evalward.scoring.judges.pairwise_panel import Judged, PairwiseJudge
from evalward.scoring.scores import score_eval
from evalward.verdict.compare import compare
from evalward.verdict.gate import GateResult, decide
from evalward.verdict.preference import PreferenceTests, more_pairs, preference_share
from evalward.verdict.settle import settle

FIXTURES = 10
REPS = 8
RUN_NOISE = 0.10
JUDGE_NOISE = 0.15
POSITION_BIAS = 0.03
TIE_BAND = 0.05
MIN_SCORE = 0.7
DROP = 0.08
"""Small: eight points of latent quality, about half of one judge reading's noise."""


@dataclass
class Tally:
    blocked: int = 0
    trials: int = 0
    runs: int = 0
    judge_calls: int = 0

    def add(self, blocked: bool, runs: int, calls: int) -> None:
        self.blocked += blocked
        self.trials += 1
        self.runs += runs
        self.judge_calls += calls

    def rate(self) -> str:
        return f"{100 * self.blocked / max(self.trials, 1):.1f} %"

    def per_pr(self) -> str:
        n = max(self.trials, 1)
        return f"{self.runs / n:.0f} runs + {self.judge_calls / n:.0f} judge calls"


def eval_of(spec: dict[str, object]) -> Located[Eval]:
    document = {"apiVersion": "evalward.dev/v1", "kind": "Eval", "metadata": {"name": "e"}}
    document["spec"] = {"targetAgent": "bot", "fixtures": names(), **spec}
    return Located(Eval.model_validate(document), "e.yaml", 1)


def names() -> list[str]:
    return [f"f{i}" for i in range(FIXTURES)]


def run_result(side: Side, fixture: str, rep: int, passed: bool) -> FixtureResult:
    status = Status.passed if passed else Status.failed
    check = AssertionResult(
        type="judge",
        status=status,
        score=1.0 if passed else 0.0,
        weight=1.0,
        severity=Severity.medium,
    )
    return FixtureResult(
        eval="e",
        fixture=fixture,
        side=side.value,
        rep=rep,
        status=status,
        score=check.score,
        verdict=Verdict.of(check.score),
        severity=Severity.medium,
        assertions=[check],
    )


def blocks(
    located: Located[Eval], results: list[FixtureResult], pairs: dict[str, Judged] | None
) -> bool:
    scored = [
        score_eval(located, side.value, [r for r in results if r.side == side.value])
        for side in (Side.head, Side.base)
    ]
    settled = settle(scored, {Side.head: {"e": located}, Side.base: {"e": located}}, None, pairs)
    return decide(compare(settled), None).result is GateResult.failed


def absolute_trial(rng: random.Random, mus: list[float], drop: float) -> tuple[bool, int, int]:
    located = eval_of(
        {
            "execution": {"repsPerFixture": REPS},
            "scoring": {"passThreshold": 0.0, "gate": {"failOnRegression": "significant"}},
        }
    )
    results = []
    for index, name in enumerate(names()):
        for side, mu in ((Side.base, mus[index]), (Side.head, mus[index] - drop)):
            for rep in range(REPS):
                quality = mu + rng.gauss(0, RUN_NOISE)
                score = min(1.0, max(0.0, quality + rng.gauss(0, JUDGE_NOISE)))
                results.append(run_result(side, name, rep, score >= MIN_SCORE))
    return blocks(located, results, None), 2 * FIXTURES * REPS, 2 * FIXTURES * REPS


def pairwise_answer(rng: random.Random, first: float, second: float) -> str:
    """The scripted judge's answer with `first` shown as A."""
    perceived = first - second + POSITION_BIAS + rng.gauss(0, JUDGE_NOISE)
    return "A" if perceived > TIE_BAND else "B" if perceived < -TIE_BAND else "tie"


def pair(rng: random.Random, fixture: str, rep: int, base: float, head: float) -> PairRecord:
    orders = []
    for shown_first, first, second in (("base", base, head), ("head", head, base)):
        said = pairwise_answer(rng, first, second)
        other = "head" if shown_first == "base" else "base"
        preferred: Preference = (
            "tie" if said == "tie" else shown_first if said == "A" else other  # type: ignore[assignment]
        )
        orders.append(OrderRecord(shown_first=shown_first, preferred=preferred))  # type: ignore[arg-type]
    return PairRecord(fixture=fixture, rep=rep, preferred=combine(orders), orders=orders)


def pairwise_trial(
    rng: random.Random, mus: list[float], drop: float, adaptive: bool
) -> tuple[bool, int, int]:
    execution = {"reps": {"min": 1, "max": REPS}} if adaptive else {"repsPerFixture": REPS}
    located = eval_of(
        {
            "execution": execution,
            "scoring": {"passThreshold": 0.0},
            "judge": {"pairwise": {"rubric": "Which reply is better?"}},
        }
    )
    spec = located.resource.spec
    judge = PairwiseJudge(eval="e", model="judge", consistency_floor=0.0)
    tests = PreferenceTests.of(spec.scoring.gate, judge.margin, preference_share(spec))
    counts = {name: 0 for name in names()}
    pairs: list[PairRecord] = []
    wanted = dict.fromkeys(names(), 1 if adaptive else REPS)
    while True:
        for index, name in enumerate(names()):
            while counts[name] < wanted[name]:
                base = mus[index] + rng.gauss(0, RUN_NOISE)
                head = mus[index] - drop + rng.gauss(0, RUN_NOISE)
                pairs.append(pair(rng, name, counts[name], base, head))
                counts[name] += 1
        if not adaptive:
            break
        runs = {Side.head: dict(counts), Side.base: dict(counts)}
        asked = more_pairs(tests, pairs, runs, spec.execution.reps or _never(), names())
        if not asked:
            break
        for side, name in asked:
            if side is Side.head:
                wanted[name] = counts[name] + 1
    # the runs themselves all pass: only the pairwise judge can see the drop
    results = [
        run_result(side, p.fixture, p.rep, True) for p in pairs for side in (Side.head, Side.base)
    ]
    blocked = blocks(located, results, {"e": Judged(judge, pairs, names())})
    return blocked, 2 * len(pairs), 2 * len(pairs)


def _never() -> object:
    raise AssertionError("adaptive Evals have reps")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    rows: dict[str, tuple[Tally, Tally]] = {}
    policies = {
        f"0-1 rubric judge, reps {REPS}, failOnRegression: significant": lambda m, d: (
            absolute_trial(rng, m, d)
        ),
        f"pairwise judge, reps {REPS}": lambda m, d: pairwise_trial(rng, m, d, False),
        f"pairwise judge, adaptive reps 1-{REPS}": lambda m, d: pairwise_trial(rng, m, d, True),
    }
    for name, trial in policies.items():
        unchanged, dropped = Tally(), Tally()
        for _ in range(args.trials):
            mus = [rng.uniform(0.6, 0.9) for _ in range(FIXTURES)]
            unchanged.add(*trial(mus, 0.0))
            dropped.add(*trial(mus, DROP))
        rows[name] = (unchanged, dropped)
    print(
        f"{FIXTURES} fixtures; run noise {RUN_NOISE}, judge noise {JUDGE_NOISE}, position bias "
        f"{POSITION_BIAS}, tie band {TIE_BAND}; drop {DROP}; {args.trials} trials, seed "
        f"{args.seed}\n"
    )
    print("| policy | false blocks (unchanged) | detects the drop | calls per unchanged PR |")
    print("|---|---|---|---|")
    for name, (unchanged, dropped) in rows.items():
        print(f"| {name} | {unchanged.rate()} | {dropped.rate()} | {unchanged.per_pr()} |")


if __name__ == "__main__":
    main()
