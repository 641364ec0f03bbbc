"""The rounds of a run (`flows.rounds`): the plan runs, then the runs the sequential tests still
ask for, until every adaptive Eval is settled; a round the budget cannot pay for is not run
and the note says so; the base runs a head-only decision held back run only where the head
did not pass. Real runs of a declarative agent against the scripted model server, whose
reply depends on the side's prompt (`HEAD` answers wrong, `BASE` right unless told)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from evalward.definitions.loader import load_resources
from evalward.execute.execute import Execution
from evalward.execute.rounds import Rounds, run_rounds
from evalward.git import Git
from evalward.plan.plan import Checkout, MoreRuns, Plan, PlannedRun
from evalward.plan.run_context import RunContext
from evalward.plan.run_setup import Revisions, RunOptions, RunSetup
from evalward.providers.registry import build_providers
from evalward.rundata.results import FixtureResult
from evalward.rundata.sides import Side
from evalward.rundata.spending import Budget, Estimate
from fakes.model_server import ScriptedModelServer, text

pytestmark = pytest.mark.integration

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: bot }
spec:
  models: [openai/gpt-4.1-mini]
  system: You are the bot, prompt version %s.
"""
EVAL = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: bot-eval }
spec:
  targetAgent: bot
  fixtures: [a, b]
  execution: %s
"""
FIXTURE = """\
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: %s }
spec:
  targetAgent: bot
  input: { type: prompt, payload: { prompt: "question %s" } }
  assertions:
    - { type: contains, value: "right" }
"""
ADAPTIVE = "{ reps: { min: 1, max: 8 } }"
FIXED_HEAD_ONLY = "{ repsPerFixture: 1 }\n  scoring: { gate: { failOnRegression: none } }"

Ran = list[tuple[str, str, int, bool]]


def checkouts(tmp_path: Path, execution: str) -> dict[Side, Checkout]:
    """Each side's tree: the same Eval and fixtures, the agent's prompt naming its side."""
    found = {}
    for side in (Side.head, Side.base):
        root = tmp_path / side.value
        root.mkdir()
        (root / "agent.yaml").write_text(AGENT % side.value.upper())
        (root / "eval.yaml").write_text(EVAL % execution)
        (root / "fixtures.yaml").write_text(FIXTURE % ("a", "a") + FIXTURE % ("b", "b"))
        found[side] = Checkout(side, root, load_resources(root))
    return found


def rounds_of(
    plan: Plan,
    sides: dict[Side, Checkout],
    env: dict[str, str],
    rounds: Rounds,
    budget: Budget | None = None,
) -> tuple[list[FixtureResult], list[str], list[PlannedRun]]:
    providers = build_providers(env)
    options = RunOptions(parallel=2, budget=budget or Budget())
    context = RunContext.of(
        plan, sides, RunSetup(Git(sides[Side.head].root), Revisions(None), providers, {}, options)
    )

    async def go() -> tuple[list[FixtureResult], list[str], list[PlannedRun]]:
        try:
            return await run_rounds(context, Execution(), rounds)
        finally:
            await providers.aclose()

    return asyncio.run(go())


def ran(results: list[FixtureResult]) -> Ran:
    return [(r.side, r.fixture, r.rep, r.passed) for r in results]


def adaptive_plan(*fixtures: str) -> Plan:
    runs = [PlannedRun(Side.head, "bot-eval", name, 0) for name in fixtures]
    return Plan(runs=runs, evals=["bot-eval"], adaptive={"bot-eval": list(fixtures)})


def test_a_fixture_the_head_passes_costs_one_run_and_no_base(
    model: ScriptedModelServer, env: dict[str, str], tmp_path: Path
) -> None:
    model.script("HEAD", text("right"))
    grown: list[MoreRuns] = []
    plan = adaptive_plan("a")
    results, notes, skipped = rounds_of(
        plan, checkouts(tmp_path, ADAPTIVE), env, Rounds(on_more=lambda _, n: grown.append(n))
    )
    assert ran(results) == [("head", "a", 0, True)]
    assert (notes, skipped, grown) == ([], [], [])
    assert plan.runs == [PlannedRun(Side.head, "bot-eval", "a", 0)]


def test_a_failing_head_gets_reps_until_settled_and_its_base_is_read(
    model: ScriptedModelServer, env: dict[str, str], tmp_path: Path
) -> None:
    """Each round adds what the tests ask for, with rep indexes continuing the fixture's, and
    stops once the regression is settled, well before the maximum of 8."""
    model.script("HEAD", text("wrong"))
    model.script("BASE", text("right"))
    grown: list[MoreRuns] = []
    plan = adaptive_plan("a")
    results, notes, skipped = rounds_of(
        plan, checkouts(tmp_path, ADAPTIVE), env, Rounds(on_more=lambda _, n: grown.append(n))
    )
    head = [(rep, passed) for side, _, rep, passed in ran(results) if side == "head"]
    base = [(rep, passed) for side, _, rep, passed in ran(results) if side == "base"]
    assert head == [(rep, False) for rep in range(len(head))]
    assert 2 <= len(head) < 8
    assert base and base == [(rep, True) for rep in range(len(base))]
    assert [(r.side, r.eval, r.fixture, r.rep) for r in plan.runs] == [
        (Side(r.side), r.eval, r.fixture, r.rep) for r in results
    ]  # every result, in the grown plan's order
    assert sum(more.runs for more in grown) == len(results) - 1 and (notes, skipped) == ([], [])
    # Each round says what asked for its runs: the sequential tests, no cache to answer any.
    assert all(more.adaptive == more.runs and not more.reused for more in grown)
    assert len(model.requests_mentioning("question a")) == len(results)


def test_a_round_the_budget_cannot_pay_for_is_not_run_and_the_note_says_so(
    model: ScriptedModelServer, env: dict[str, str], tmp_path: Path
) -> None:
    model.script("HEAD", text("wrong"))
    plan = adaptive_plan("a")
    rounds = Rounds(estimate=Estimate(calls=1, cost_usd=None))
    budget = Budget(max_model_calls=1)
    results, notes, skipped = rounds_of(plan, checkouts(tmp_path, ADAPTIVE), env, rounds, budget)
    assert ran(results) == [("head", "a", 0, False)]
    assert len(skipped) == 1 and all(run.rep >= 1 or run.side is Side.base for run in skipped)
    assert notes == [
        "adaptive reps stopped early: 1 more run would exceed "
        "max-model-calls (1); the verdicts say how sure they are with what ran"
    ]
    assert len(model.requests_mentioning("question a")) == 1


def test_held_back_base_runs_run_only_where_the_head_did_not_pass(
    model: ScriptedModelServer, env: dict[str, str], tmp_path: Path
) -> None:
    """A fixed-rep Eval whose decision reads the head only: its base runs wait for the head's,
    and only the fixture the head failed (`b`) is run on the base."""
    model.script(lambda body: "HEAD" in str(body) and "question a" in str(body), text("right"))
    model.script("HEAD", text("wrong"))
    model.script("BASE", text("right"))
    held = [PlannedRun(Side.base, "bot-eval", name, 0) for name in ("a", "b")]
    plan = Plan(
        runs=[PlannedRun(Side.head, "bot-eval", name, 0) for name in ("a", "b")],
        evals=["bot-eval"],
        base_when_failing={"bot-eval": held},
    )
    results, notes, skipped = rounds_of(plan, checkouts(tmp_path, FIXED_HEAD_ONLY), env, Rounds())
    assert ran(results) == [
        ("head", "a", 0, True),
        ("head", "b", 0, False),
        ("base", "b", 0, True),
    ]
    assert skipped == []
    assert notes == [
        "bot-eval: its decision reads the head only (`failOnRegression: none`), so the base "
        "ran 1 of 2 fixtures, those the head did not pass"
    ]
