"""Every surface counts the same fixtures the same way, whatever the runs: generated outcome
tables (fixtures × reps × sides, each run passing, failing, erroring or lost to an outage;
fixed reps and adaptive reps) go through the run's own stages (`score_eval`, `settle`,
`compare`, `decide`, `summarize`) and renderers (the comment, the terminal, report.html), and
every count they show is checked against the others and against the verdicts."""

from __future__ import annotations

import dataclasses
import html
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalward.record.summary import (
    RunSummary,
    count,
    facts_of_fixture,
    fixtures_decided,
    summarize,
)
from evalward.report.html import Page, html_chunks
from evalward.report.markdown import ReportContext, marker_for, render_comment
from evalward.report.story import counts_phrases
from evalward.resources import Eval, Located
from evalward.resources.models import Severity
from evalward.rundata.pairwise_record import OrderRecord, PairRecord, Preference
from evalward.rundata.results import AssertionResult, FixtureResult, Status, Verdict
from evalward.rundata.sequential_record import BLOCKING_VERDICTS, WORKING_VERDICTS
from evalward.rundata.sides import Side
from evalward.scoring.judges.pairwise_panel import Judged, PairwiseJudge
from evalward.scoring.scores import score_eval
from evalward.text import escaping
from evalward.verdict.compare import EvalComparison, compare
from evalward.verdict.gate import GateDecision, GateResult, decide
from evalward.verdict.settle import settle

pytestmark = pytest.mark.unit

MARKER = marker_for("evals/gate")
RUN = st.sampled_from("PPPFFEO")
"""A run: passed, failed, errored, or lost to an outage (no verdict on the agent)."""


def runs_of(side: str, fixture: str, outcomes: str) -> list[FixtureResult]:
    results = []
    for rep, outcome in enumerate(outcomes):
        status = {"P": Status.passed, "F": Status.failed}.get(outcome, Status.error)
        check = AssertionResult(
            type="contains",
            status=status,
            score=1.0 if status is Status.passed else 0.0,
            weight=1.0,
            severity=Severity.medium,
            message="" if status is Status.passed else "'answer' not found",
        )
        results.append(
            FixtureResult(
                eval="bot-eval",
                fixture=fixture,
                side=side,
                rep=rep,
                status=status,
                score=check.score,
                verdict=Verdict.of(check.score),
                severity=Severity.medium,
                message=check.message,
                output=f"{fixture} {side} {rep}",
                assertions=[check],
                provider_unavailable=outcome == "O",
            )
        )
    return results


@st.composite
def tables(draw: st.DrawFn) -> dict[str, Any]:
    """An Eval's runs: per fixture its head reps and (maybe) its base reps, fixed or adaptive."""
    adaptive = draw(st.booleans())
    names = [f"f{i}" for i in range(draw(st.integers(1, 5)))]
    reps = draw(st.integers(1, 4))
    head, base = {}, {}
    for name in names:
        count = draw(st.integers(1, 8)) if adaptive else reps
        head[name] = draw(st.text(RUN, min_size=count, max_size=count))
        if draw(st.booleans()) or not adaptive:
            count = draw(st.integers(1, 8)) if adaptive else reps
            base[name] = draw(st.text(RUN, min_size=count, max_size=count))
    spec: dict[str, Any] = {"targetAgent": "bot", "fixtures": names}
    if adaptive:
        spec["execution"] = {"reps": {"min": 1, "max": 8}}
    else:
        threshold = draw(st.sampled_from([0.5, 0.8, 1.0]))
        policy = draw(st.sampled_from(["none", "any", "significant"]))
        spec["execution"] = {"repsPerFixture": reps}
        spec["scoring"] = {"passThreshold": threshold, "gate": {"failOnRegression": policy}}
    return {"adaptive": adaptive, "head": head, "base": base, "spec": spec}


def evaluated(
    table: dict[str, Any], pairs: dict[str, Judged] | None = None
) -> tuple[list[EvalComparison], GateDecision, RunSummary]:
    document = {"apiVersion": "evalward.dev/v1", "kind": "Eval"}
    document |= {"metadata": {"name": "bot-eval"}, "spec": table["spec"]}
    located = Located(Eval.model_validate(document), "evals/bot-eval.yaml", 1)
    results = []
    for side in (Side.head, Side.base):
        runs = [r for name, o in table[side.value].items() for r in runs_of(side.value, name, o)]
        if runs:
            results.append(score_eval(located, side.value, runs))
    settled = settle(results, {Side.head: {"bot-eval": located}, Side.base: {}}, None, pairs)
    comparisons = compare(settled)
    decision = decide(comparisons, None)
    fixtures = [f for r in settled for f in r.fixtures]
    return comparisons, decision, summarize(comparisons, decision, fixtures)


def counts_in(line: str) -> tuple[int, int, int, int]:
    """Passing, fixtures, failing and not settled, as a counts line says them."""
    found = re.search(r"(\d+)/(\d+) fixtures pass on head", line)
    assert found is not None, line
    failing = re.search(r" · (\d+) failing", line)
    unsettled = re.search(r" · (\d+) not settled", line)
    assert failing is not None, line
    return (
        int(found[1]),
        int(found[2]),
        int(failing[1]),
        int(unsettled[1]) if unsettled else 0,
    )


@settings(max_examples=120, deadline=None)
@given(tables())
def test_every_surface_counts_alike_and_the_counts_add_up(table: dict[str, Any]) -> None:
    surfaces_agree(table, *evaluated(table))


def surfaces_agree(
    table: dict[str, Any],
    comparisons: list[EvalComparison],
    decision: GateDecision,
    summary: RunSummary,
) -> None:
    """The counts add up and every surface says them alike: the counts line, the details'
    summary of an adaptive Eval, the table, report.html and results.json's summary."""
    (comparison,) = comparisons
    counts, head = summary.counts, comparison.head

    # they add up, and they are the verdicts
    assert counts.passing + counts.failing + counts.not_settled == counts.fixtures
    assert counts.fixtures == len(table["head"])
    if table["adaptive"]:
        assert head.sequential is not None
        verdicts = [f.verdict for f in head.sequential.fixtures]
        working = sum(v in WORKING_VERDICTS for v in verdicts)
        broken = sum(v in BLOCKING_VERDICTS for v in verdicts)
        # an outage-only Eval has no verdict: nothing in it is settled
        if not head.provider_unavailable:
            assert (counts.passing, counts.failing) == (working, broken)
        assert (head.passing, head.failing) == (working, broken)
        assert head.passing + head.failing + head.skipped == head.total
        if fixtures_decided(head):  # the details' summary counts what the counts line does
            settled = f"{counts.passing + counts.failing} of {counts.fixtures} fixtures settled"
            context = ReportContext(comparisons=comparisons, decision=decision, marker=MARKER)
            assert settled in render_comment(context, sink=escaping.GITHUB)
    elif not (head.provider_unavailable or head.incomplete_reason):
        # fixed reps: passing by the rule, failing unless only an outage kept it from passing
        outcomes = {o.name: o for o in head.fixture_results}
        lost = {
            name
            for name, runs in table["head"].items()
            if not outcomes[name].passed and all(r == "O" for r in runs if r != "P")
        }
        assert counts.passing == sum(o.passed for o in outcomes.values())
        assert counts.failing == sum(not o.passed for o in outcomes.values()) - len(lost)
        assert counts.not_settled == len(lost)
    line = " · ".join(counts_phrases(summary))
    assert counts_in(line) == (
        counts.passing,
        counts.fixtures,
        counts.failing,
        counts.not_settled,
    )
    if counts.not_settled and decision.result in (GateResult.passed, GateResult.failed):
        assert f"{counts.not_settled} of {counts.fixtures} fixtures not settled" in (
            summary.headline
        )

    context = ReportContext(comparisons=comparisons, decision=decision, marker=MARKER)
    for sink in (escaping.GITHUB, escaping.TERMINAL):
        body = render_comment(context, sink=sink)
        said = html.unescape(body.splitlines()[1])
        assert said.endswith(summary.headline)
        assert line in body
        row = next(r for r in body.splitlines() if r.startswith("| bot-eval |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        fixtures_cell, result_cell = cells[5], cells[6]
        assert fixtures_cell.startswith(f"{counts.passing}/{counts.fixtures}")
        # ✅ never above what blocks, ❌ never where nothing blocks
        blocks = "bot-eval" in decision.failing_evals
        assert ("✅" in result_cell) == (not blocks and head.passed)
        if "❌" in result_cell:
            assert blocks
        if decision.result is GateResult.passed:
            assert "❌" not in result_cell
        if table["adaptive"]:
            assert "(rule ≥" not in body and "McNemar" not in body
            assert cells[4] == "—"  # no threshold is read

    page = "".join(
        html_chunks(
            Page(
                result=decision.result.value,
                reason=decision.reason,
                evals=[comparison.head] + ([comparison.base] if comparison.base else []),
                fixtures=[f for f in comparison.head.fixtures]
                + ([f for f in comparison.base.fixtures] if comparison.base else []),
                private=set(),
                comparisons=comparisons,
                summary=summary,
            )
        )
    )
    shown = re.search(r'<p class="counts">(.*?)</p>', page, re.S)
    assert shown is not None and html.unescape(shown[1]).strip() == line
    cell = re.search(r'data-label="Fixtures">(\d+)/(\d+)', page)
    assert cell is not None and (int(cell[1]), int(cell[2])) == (counts.passing, counts.fixtures)
    # the fixtures bar: its segments are the fixtures that gate, none drawn backwards
    (bar,) = re.findall(r'<svg[^>]*class="chart outcomes".*?</svg>', page, re.S)
    widths = [
        float(w) for w in re.findall(r'<rect class="\w+" x="[\d.]+" y="2" width="(-?[\d.]+)"', bar)
    ]
    assert all(width > 0 for width in widths), bar
    drawn = sum(int(n) for n in re.findall(r"<title>(\d+) \w+</title>", bar))
    assert drawn == counts.fixtures, bar


# --- pairwise outcomes ------------------------------------------------------------------------

PAIR = st.sampled_from("HBTIU")
"""A pair: head preferred in both orders, base in both, a tie in both, orders that disagree
(a tie), or unavailable (an order got no usable answer)."""


def pair_of(fixture: str, rep: int, outcome: str) -> PairRecord:
    said: dict[str, tuple[Preference, Preference]] = {
        "H": ("head", "head"),
        "B": ("base", "base"),
        "T": ("tie", "tie"),
        "I": ("head", "base"),
        "U": ("unavailable", "base"),
    }
    first, second = said[outcome]
    orders = [
        OrderRecord(
            shown_first="base", preferred=first, error="HTTP 503" if outcome == "U" else ""
        ),
        OrderRecord(shown_first="head", preferred=second),
    ]
    preferred: Preference = {"H": "head", "B": "base", "U": "unavailable"}.get(outcome, "tie")  # type: ignore[assignment]
    return PairRecord(
        fixture=fixture, rep=rep, preferred=preferred, orders=orders, head_chars=9, base_chars=9
    )


@settings(max_examples=80, deadline=None)
@given(tables(), st.data())
def test_pairwise_counts_add_up_on_every_surface(
    table: dict[str, Any], data: st.DataObject
) -> None:
    pairs = []
    for name in table["head"]:
        outcomes = data.draw(st.text(PAIR, min_size=0, max_size=10))
        pairs += [pair_of(name, rep, o) for rep, o in enumerate(outcomes)]
    uncalibrated = data.draw(st.booleans())
    judge = PairwiseJudge(
        eval="bot-eval",
        model="openai/judge-1",
        margin=0.3,
        inconclusive_reason="uncalibrated" if uncalibrated else "",
        consistency_floor=0.0,
    )
    table["spec"]["judge"] = {"pairwise": {"rubric": "Which is better?", "margin": 0.3}}
    judged = {"bot-eval": Judged(judge, pairs, sorted(table["head"]))}
    comparisons, decision, summary = evaluated(table, judged)
    (comparison,) = comparisons
    record = comparison.head.pairwise
    assert record is not None
    surfaces_agree(table, comparisons, decision, summary)

    # they add up, per fixture and over the Eval, and the fixtures add up to the Eval
    for verdict in record.fixtures:
        c = verdict.counts
        assert (
            c.head + c.base + c.ties + c.unavailable
            == c.pairs
            == len(record.pairs_of(verdict.fixture))
        )
        assert c.inconsistent <= c.ties
    pooled = record.pooled_counts
    assert pooled.head + pooled.base + pooled.ties + pooled.unavailable == pooled.pairs
    assert pooled.pairs == len(pairs)
    for key in ("head", "base", "ties", "unavailable", "inconsistent"):
        assert getattr(pooled, key) == sum(getattr(v.counts, key) for v in record.fixtures)
    assert pooled.head == sum(p.preferred == "head" for p in pairs)

    # a pairwise judge's significant evidence blocks whatever its calibration, and then the
    # gate fails and says why; a judge that cannot decide never leaves the Eval passing
    if record.blocks:
        assert not comparison.head.passed and "bot-eval" in decision.failing_evals
        assert any("by the pairwise judge" in line for line in decision.why)
        for verdict in record.fixtures:
            if verdict.blocks:
                assert any(verdict.counts.text() in line for line in decision.why)
    if uncalibrated:
        assert record.inconclusive_reason == "uncalibrated"
        assert not comparison.head.passed
        assert decision.result is not GateResult.passed

    # the comment, the terminal and report.html say the same counts (with no pair, that
    # there was nothing to count)
    line = record.pooled_counts.text() if pairs else "no fixture ran on both the base and the head"
    context = ReportContext(comparisons=comparisons, decision=decision, marker=MARKER)
    for sink in (escaping.GITHUB, escaping.TERMINAL):
        body = html.unescape(render_comment(context, sink=sink))
        assert line in body.replace("\\", "")
    page = html.unescape(
        "".join(
            html_chunks(
                Page(
                    result=decision.result.value,
                    reason=decision.reason,
                    evals=[comparison.head] + ([comparison.base] if comparison.base else []),
                    fixtures=list(comparison.head.fixtures)
                    + (list(comparison.base.fixtures) if comparison.base else []),
                    private=set(),
                    comparisons=comparisons,
                )
            )
        )
    )
    assert line in page
    for verdict in record.fixtures:
        c = verdict.counts
        numbers = (c.head, c.base, c.ties, c.unavailable, c.pairs)
        cells = "\n".join(f'<td class="num">{n}</td>' for n in numbers)
        assert cells in page


def test_a_fixtures_facts_are_classified_again_when_what_they_are_read_from_changes() -> None:
    """Every surface reads a fixture's facts from one classification kept in its comparison:
    it is kept only while the runs, the outcome and the Eval's results are the same ones."""
    table = {"adaptive": False, "head": {"f0": "F"}, "base": {"f0": "P"}}
    table["spec"] = {"targetAgent": "bot", "fixtures": ["f0"], "execution": {"repsPerFixture": 1}}
    comparisons, _, summary = evaluated(table)
    (comparison,) = comparisons
    assert (summary.counts.failing, summary.counts.regressions) == (1, 1)
    assert facts_of_fixture(comparison, comparison.fixtures[0]).failing

    # the head's results replaced by ones with no verdict (an outage): nothing is failing
    comparison.head = comparison.head.model_copy(update={"provider_unavailable": True})
    facts = facts_of_fixture(comparison, comparison.fixtures[0])
    assert (facts.failing, facts.not_settled, facts.regressed) == (False, True, True)
    assert count(comparisons).failing == 0

    # the fixture itself replaced: classified from the new one
    fixture = dataclasses.replace(comparison.fixtures[0], gates=False)
    comparison.fixtures[0] = fixture
    assert facts_of_fixture(comparison, fixture).pending
    assert count(comparisons).pending == 1


def test_an_eval_its_pairwise_judge_alone_leaves_inconclusive_counts_its_settled_fixtures() -> None:
    """The Eval's own tests settle every fixture working and its pairwise judge cannot decide:
    the Eval is inconclusive, and the counts line, the details, the table and results.json all
    count the fixtures as passing on their own, after saying why the Eval has no verdict."""
    names = [f"f{i}" for i in range(10)]
    table: dict[str, Any] = {
        "adaptive": True,
        "head": dict.fromkeys(names, "PPPPPPPP"),
        "base": dict.fromkeys(names, "PPPPPPPP"),
        "spec": {
            "targetAgent": "bot",
            "fixtures": names,
            "execution": {"reps": {"min": 1, "max": 8}},
            "judge": {"pairwise": {"rubric": "Which is better?"}},
        },
    }
    judge = PairwiseJudge(
        eval="bot-eval", model="openai/judge-1", inconclusive_reason="swayed", consistency_floor=0
    )
    pairs = [pair_of(name, rep, "T") for name in names for rep in range(8)]
    comparisons, decision, summary = evaluated(table, {"bot-eval": Judged(judge, pairs, names)})
    (comparison,) = comparisons
    assert decision.result is GateResult.inconclusive
    assert comparison.head.inconclusive_reason.startswith("its pairwise judge openai/judge-1")
    assert summary.counts.passing == summary.counts.fixtures == 10
    assert summary.counts.not_settled == 0
    line = " · ".join(counts_phrases(summary))
    assert line.startswith(
        "bot-eval inconclusive: its pairwise judge cannot decide · "
        "10/10 fixtures pass on head on their own · 0 regressions · 0 failing"
    )
    body = render_comment(ReportContext(comparisons=comparisons, decision=decision, marker=MARKER))
    assert "bot-eval is inconclusive: its pairwise judge" in body.splitlines()[1]
    assert line in body and "10 of 10 fixtures settled" in body
    assert "not settled" not in line
    surfaces_agree(table, comparisons, decision, summary)
