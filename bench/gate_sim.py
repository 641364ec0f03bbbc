"""Simulate the gate on agents with known per-fixture pass probabilities.

For each policy, with reps = 5: the false-block rate when nothing changed (head = base) and
the detection rate of a true 30-point drop spread over 10 fixtures (every fixture's pass
probability 30 points lower on head). Targets: <= 5 % and >= 90 %.

Each trial draws pass/fail for every (fixture, rep, side) and feeds them through evalward's
own scoring (`score_eval` with the Eval's `minRepPassRate`), comparison (`compare`, McNemar's
exact test) and gate (`decide` with the `fail-on-regression` policy).

    python bench/gate_sim.py [--trials 2000] [--seed 7]
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass

from evalward.compare import compare
from evalward.gate import GateResult, RegressionPolicy, decide
from evalward.resources import Eval, Located
from evalward.resources.models import Severity
from evalward.results import FixtureResult, Status, Verdict
from evalward.scoring.scores import score_eval

BASE_PASS = [0.99, 0.98, 0.97, 0.96, 0.95, 0.95, 0.94, 0.93, 0.92, 0.90]
"""A good agent: every fixture usually passes; the Eval's threshold is met on average."""
DROP = 0.30
REPS = 5


@dataclass(frozen=True)
class Policy:
    name: str
    threshold: float
    min_rep_pass_rate: float
    regressions: RegressionPolicy


def evaluation(policy: Policy) -> Located[Eval]:
    return Located(
        Eval.model_validate(
            {
                "apiVersion": "evalward.dev/v1",
                "kind": "Eval",
                "metadata": {"name": "sim"},
                "spec": {
                    "targetAgent": "agent",
                    "fixtures": [],
                    "scoring": {
                        "passThreshold": policy.threshold,
                        "minRepPassRate": policy.min_rep_pass_rate,
                    },
                    "execution": {"repsPerFixture": REPS},
                },
            }
        ),
        "sim.yaml",
        1,
    )


def draw(side: str, probabilities: list[float], rng: random.Random) -> list[FixtureResult]:
    runs = []
    for index, p in enumerate(probabilities):
        for rep in range(REPS):
            passed = rng.random() < p
            runs.append(
                FixtureResult(
                    eval="sim",
                    fixture=f"f{index}",
                    side=side,
                    rep=rep,
                    status=Status.passed if passed else Status.failed,
                    score=1.0 if passed else 0.0,
                    verdict=Verdict.passed if passed else Verdict.failed,
                    severity=Severity.medium,
                )
            )
    return runs


def block_rate(policy: Policy, head_pass: list[float], trials: int, rng: random.Random) -> float:
    located = evaluation(policy)
    blocks = 0
    for _ in range(trials):
        base = score_eval(located, "base", draw("base", BASE_PASS, rng))
        head = score_eval(located, "head", draw("head", head_pass, rng))
        decision = decide(compare([head, base]), None, regressions=policy.regressions)
        blocks += decision.result is GateResult.failed
    return blocks / trials


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    dropped = [max(0.0, p - DROP) for p in BASE_PASS]
    policies = [
        Policy("threshold 1.0, every rep must pass", 1.0, 1.0, RegressionPolicy.none),
        Policy("threshold 1.0, majority of reps (0.6)", 1.0, 0.6, RegressionPolicy.none),
        Policy("threshold 0.9, every rep must pass", 0.9, 1.0, RegressionPolicy.none),
        Policy("threshold 0.9, majority of reps (0.6)", 0.9, 0.6, RegressionPolicy.none),
        Policy("threshold 0.8, majority of reps (0.6)", 0.8, 0.6, RegressionPolicy.none),
        Policy(
            "threshold 0 + fail-on-regression significant", 0.0, 0.6, RegressionPolicy.significant
        ),
        Policy("threshold 0 + fail-on-regression any", 0.0, 0.6, RegressionPolicy.any),
    ]
    print(f"gate simulation: 10 fixtures, reps = {REPS}, base pass probabilities {BASE_PASS}")
    print(f"{args.trials} trials per cell; drop = {DROP:.0%} on every fixture\n")
    print(f"{'policy':48} {'false block':>12} {'detection':>10}")
    for policy in policies:
        false_block = block_rate(policy, BASE_PASS, args.trials, rng)
        detection = block_rate(policy, dropped, args.trials, rng)
        ok = "✓" if false_block <= 0.05 and detection >= 0.90 else "✗"
        print(f"{policy.name:48} {false_block:>11.1%} {detection:>10.1%}  {ok}")


if __name__ == "__main__":
    main()
