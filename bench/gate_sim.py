"""Simulate the gate on agents with known per-fixture pass probabilities.

For each policy: the false-block rate when nothing changed (head = base), the detection rate
of (a) a 30-point drop on every one of 10 fixtures, (b) one fixture broken outright
(0.95 -> 0.0) and (c) one fixture down 20 points (0.95 -> 0.75), and the agent runs each side
spends on an unchanged pull request. Targets for the default adaptive policy: false blocks
<= 2 %, detection of (a) >= 95 % and (b) >= 99 %, at <= 40 % of the runs reps = 5 spends.

Each trial draws pass/fail for every run a policy asks for and feeds them through evalward's
own code: fixed reps through `score_eval` (the Eval's `minRepPassRate`), `compare` and `decide`
(the Eval's `failOnRegression`); adaptive reps round by round through `adaptive.more_runs`
(what `rounds.next_round` asks for), then `settle`, `compare` and `decide`.

    python bench/gate_sim.py [--trials 1000] [--seed 7]
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evalward.resources import Eval, Located
from evalward.resources.models import Severity
from evalward.rundata.results import FixtureResult, Status, Verdict
from evalward.rundata.sides import Side
from evalward.scoring.scores import score_eval
from evalward.stages.adaptive import SequentialTests, more_runs
from evalward.stages.compare import compare
from evalward.stages.gate import GateResult, decide
from evalward.stages.settle import settle

BASE_PASS = [0.99, 0.98, 0.97, 0.96, 0.95, 0.95, 0.94, 0.93, 0.92, 0.90]
"""A good agent: every fixture usually passes."""
NAMES = [f"f{i}" for i in range(len(BASE_PASS))]
FIXED_REPS = 5


def _drop_all(points: float) -> list[float]:
    return [max(0.0, p - points) for p in BASE_PASS]


def _one(index: int, to: float) -> list[float]:
    changed = list(BASE_PASS)
    changed[index] = to
    return changed


SCENARIOS = {
    "unchanged": BASE_PASS,
    "(a) -30 pts on all 10": _drop_all(0.30),
    "(b) one 0.95 -> 0.0": _one(4, 0.0),
    "(c) one 0.95 -> 0.75": _one(4, 0.75),
}


@dataclass(frozen=True)
class Policy:
    name: str
    scoring: dict[str, Any] = field(default_factory=dict)
    execution: dict[str, Any] = field(default_factory=lambda: {"repsPerFixture": FIXED_REPS})

    def located(self) -> Located[Eval]:
        spec = {
            "targetAgent": "agent",
            "fixtures": [],
            "scoring": self.scoring,
            "execution": self.execution,
        }
        document = {"apiVersion": "evalward.dev/v1", "kind": "Eval"}
        document |= {"metadata": {"name": "sim"}, "spec": spec}
        return Located(Eval.model_validate(document), "sim.yaml", 1)


POLICIES = [
    Policy("reps 5, threshold 1.0, every rep must pass", {"minRepPassRate": 1.0}),
    Policy("reps 5, threshold 1.0, majority (0.6)", {"minRepPassRate": 0.6}),
    Policy("reps 5, threshold 0.9, majority (0.6)", {"passThreshold": 0.9}),
    Policy("reps 5, threshold 0.8, majority (0.6)", {"passThreshold": 0.8}),
    Policy(
        "reps 5, threshold 0 + failOnRegression significant",
        {"passThreshold": 0.0, "gate": {"failOnRegression": "significant"}},
    ),
    Policy(
        "reps 5, threshold 0 + failOnRegression any",
        {"passThreshold": 0.0, "gate": {"failOnRegression": "any"}},
    ),
    Policy("adaptive 2-8 (the default scoring.gate)", {}, {"reps": {"min": 2, "max": 8}}),
    Policy("adaptive 2-6", {}, {"reps": {"min": 2, "max": 6}}),
    Policy("adaptive 3-8", {}, {"reps": {"min": 3, "max": 8}}),
    Policy(
        "adaptive 2-8, falseBlockRate 0.05",
        {"gate": {"falseBlockRate": 0.05}},
        {"reps": {"min": 2, "max": 8}},
    ),
]


def result(side: Side, fixture: str, rep: int, passed: bool) -> FixtureResult:
    return FixtureResult(
        eval="sim",
        fixture=fixture,
        side=side.value,
        rep=rep,
        status=Status.passed if passed else Status.failed,
        score=1.0 if passed else 0.0,
        verdict=Verdict.passed if passed else Verdict.failed,
        severity=Severity.medium,
    )


def trial(
    policy: Located[Eval], head_pass: Sequence[float], rng: random.Random
) -> tuple[bool, int, int]:
    """Whether the gate blocked, and the runs spent on head and on base."""
    chance = {
        Side.head: dict(zip(NAMES, head_pass, strict=True)),
        Side.base: dict(zip(NAMES, BASE_PASS, strict=True)),
    }
    spec = policy.resource.spec
    runs: dict[Side, dict[str, list[bool]]] = {Side.head: {n: [] for n in NAMES}, Side.base: {}}
    if spec.execution.reps is None:
        for side in (Side.head, Side.base):
            for name in NAMES:
                runs[side][name] = [
                    rng.random() < chance[side][name]
                    for _ in range(spec.execution.reps_per_fixture)
                ]
    else:
        tests = SequentialTests.of(spec.scoring.gate, spec.execution.reps, len(NAMES))
        while asked := more_runs(tests, runs[Side.head], runs[Side.base], base_can_run=NAMES):
            for side, name in asked:
                runs[side].setdefault(name, []).append(rng.random() < chance[side][name])
    results = {
        side: [
            result(side, name, rep, passed)
            for name, outcomes in runs[side].items()
            for rep, passed in enumerate(outcomes)
        ]
        for side in (Side.head, Side.base)
    }
    evals = [score_eval(policy, "head", results[Side.head])]
    if results[Side.base]:
        evals.append(score_eval(policy, "base", results[Side.base]))
    evals = settle(evals, {Side.head: {"sim": policy}, Side.base: {"sim": policy}})
    blocked = decide(compare(evals), None).result is GateResult.failed
    return blocked, len(results[Side.head]), len(results[Side.base])


def measure(policy: Policy, trials: int, rng: random.Random) -> list[tuple[float, float, float]]:
    """Per scenario: the block rate and the mean runs on head and on base."""
    located = policy.located()
    rows = []
    for head_pass in SCENARIOS.values():
        blocks = head = base = 0
        for _ in range(trials):
            blocked, on_head, on_base = trial(located, head_pass, rng)
            blocks += blocked
            head += on_head
            base += on_base
        rows.append((blocks / trials, head / trials, base / trials))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    fixed = FIXED_REPS * len(NAMES)
    print(f"gate simulation: {len(NAMES)} fixtures, base pass probabilities {BASE_PASS}")
    print(f"{args.trials} trials per cell; runs are agent runs per side on an unchanged PR\n")
    print(
        f"| policy | false block | (a) -30 pts all | (b) one broken | (c) one -20 pts "
        f"| runs head / base (unchanged) | of reps = 5 ({2 * fixed}) | (a) runs head / base |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for policy in POLICIES:
        rows = measure(policy, args.trials, rng)
        (false_block, head, base), (a, a_head, a_base), (b, _, _), (c, _, _) = rows
        share = (head + base) / (2 * fixed)
        meets = false_block <= 0.02 and a >= 0.95 and b >= 0.99 and share <= 0.40
        print(
            f"| {policy.name} | {false_block:.1%} | {a:.1%} | {b:.1%} | {c:.1%} "
            f"| {head:.1f} / {base:.1f} | {share:.0%} | {a_head:.1f} / {a_base:.1f} "
            f"| {'✓' if meets else '✗'}"
        )


if __name__ == "__main__":
    main()
