"""`execute.pairs` and `execute.base_judging` on a planned change whose Eval judges pairwise
under adaptive reps: which fixtures are judged in pairs (with the gating definitions'
rubric), the judge as its definition sets it before any pair is asked, and which base runs
leave their absolute judge for later. Nothing here calls a model."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator

import pytest

from evalward.execute.base_judging import BaseJudging
from evalward.execute.pairs import PairJudging, judged_fixtures, pairwise_fixtures
from evalward.plan.plan import PlannedRun
from evalward.plan.planned import Planned
from evalward.rundata.pairwise_record import PairRecord
from evalward.rundata.sides import Side
from evalward.rundata.spool import TraceSpool
from support.documents import by_label, documents, eval_for
from support.gitrepo import GitRepo
from support.planning import planned

pytestmark = pytest.mark.integration

RUBRIC = "Which reply answers the question?"
EVAL = "helper-eval"


def fixture(name: str, *lines: str) -> str:
    more = "".join(f"  {line}\n" for line in lines)
    return f"""\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {name}, labels: {{ agent: helper }} }}
spec:
  targetAgent: helper
  input: {{ type: prompt, payload: {{ prompt: "{name}?" }} }}
{more}  assertions:
    - {{ type: judge, rubric: Is it answered?, minScore: 0.5 }}
"""


def suite(system: str, judge: str) -> str:
    agent = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: helper }}
spec:
  models: [openai/gpt-test]
  system: {system}
"""
    return documents(
        agent,
        fixture("judged-later"),
        fixture("thresholded", "passThreshold: 0.5"),
        eval_for("helper", by_label("helper"), judge, "execution: { reps: { min: 1, max: 4 } }"),
    )


PAIRWISE = f"judge: {{ model: openai/gpt-test, pairwise: {{ rubric: {RUBRIC} }} }}"


@pytest.fixture
def ready(repo: GitRepo, env: dict[str, str]) -> Iterator[Planned]:
    base = repo.commit("helper", {"helper.yaml": suite("Reply.", PAIRWISE)})
    repo.write({"helper.yaml": suite("Reply well.", PAIRWISE)})
    with planned(repo, base, env) as change:
        yield change


def test_every_fixture_asking_for_the_judge_is_judged_in_pairs_with_the_eval_s_rubric(
    ready: Planned,
) -> None:
    plan, checkouts = ready.context.plan, ready.context.checkouts

    found = pairwise_fixtures(plan, checkouts)

    assert list(found) == [EVAL]
    assert sorted(found[EVAL]) == ["judged-later", "thresholded"]
    assert {p.rubric for p in found[EVAL].values()} == {RUBRIC}
    assert judged_fixtures(plan, checkouts[Side.head].resources, "no-such-eval") == {}


def test_before_any_pair_the_judge_is_as_its_definition_sets_it(ready: Planned) -> None:
    pairs = PairJudging(ready.context)

    asyncio.run(pairs.judge([]))
    judged = pairs.judged()

    assert pairs.active and pairs.pairs == {}
    assert judged[EVAL].judge.model == "openai/gpt-test"
    assert judged[EVAL].judge.eval == EVAL
    assert judged[EVAL].pairs == []


def test_only_a_base_run_whose_judge_reads_the_run_as_it_is_is_judged_later(
    ready: Planned,
) -> None:
    pairs = PairJudging(ready.context)
    later = BaseJudging(ready.context, pairs, TraceSpool().trace_of)

    assert later.defers(PlannedRun(Side.base, EVAL, "judged-later"))
    assert not later.defers(PlannedRun(Side.head, EVAL, "judged-later"))
    assert not later.defers(PlannedRun(Side.base, EVAL, "thresholded"))
    assert not later.defers(PlannedRun(Side.base, "no-such-eval", "judged-later"))
    asyncio.run(later.ask([], final=True))
    assert later.asked == 0


def test_a_variant_s_head_run_leaves_its_judge_until_its_pairs_do_not_lean_worse(
    ready: Planned,
) -> None:
    """Attribution's variant of a regression found in pairs reads a fixture worse in pairs as
    regressed whatever its judge says: a head run's judge waits while the fixture has no
    pair or its first went to the base, and is asked once they do not lean worse, or at the
    end unless they settled worse. On the gate (the option off) no head run waits."""
    options = dataclasses.replace(ready.context.options, judge_head_after_pairs=True)
    context = dataclasses.replace(
        ready.context, setup=dataclasses.replace(ready.context.setup, options=options)
    )
    pairs = PairJudging(context)
    later = BaseJudging(context, pairs, TraceSpool().trace_of)

    assert later.defers(PlannedRun(Side.head, EVAL, "judged-later"))
    assert not later.defers(PlannedRun(Side.head, EVAL, "thresholded"))
    assert not BaseJudging(ready.context, pairs, TraceSpool().trace_of).defers(
        PlannedRun(Side.head, EVAL, "judged-later")
    )
    # no pair yet: open between the rounds, and not worse once they are over
    assert pairs.worse(so_far=True) == {(EVAL, "judged-later"), (EVAL, "thresholded")}
    assert pairs.worse() == set()
    pairs.pairs[(EVAL, "judged-later", 0)] = PairRecord(
        fixture="judged-later", rep=0, preferred="base"
    )
    pairs.pairs[(EVAL, "thresholded", 0)] = PairRecord(
        fixture="thresholded", rep=0, preferred="tie"
    )
    assert pairs.worse(so_far=True) == {(EVAL, "judged-later")}
    assert pairs.worse() == set()  # one pair the base won settles nothing
    for rep in range(1, 8):  # eight do, as on the gate at init's rates
        pairs.pairs[(EVAL, "judged-later", rep)] = PairRecord(
            fixture="judged-later", rep=rep, preferred="base"
        )
    assert pairs.worse() == {(EVAL, "judged-later")}
