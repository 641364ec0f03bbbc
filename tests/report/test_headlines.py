"""Every decision path has a headline that names the Eval and what decided, and a counts line
that adds up and never reads as a pass when the gate blocks: generated outcomes for each path
(threshold, regression, per-fixture sequential test, pooled test, pairwise judge, inconclusive,
bypass) go through the run's own stages (`score_eval`, `settle`, `compare`, `decide`,
`summarize`) and out through every surface — the comment, the job summary, results.json and
the terminal (`evalward run`'s own output).

A new kind of outcome is one more entry in `PATHS`: a strategy that lands on it, and the
predicate that says it did; the properties below then hold of it too."""

from __future__ import annotations

import html
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from evalward.cli._emit import Output, emit
from evalward.plan.changes import ChangeSet
from evalward.plan.plan import Plan
from evalward.record.evaluation import Evaluation
from evalward.record.summary import RunSummary, fixtures_decided, summarize
from evalward.report.markdown import ReportContext, marker_for, render_comment
from evalward.report.story import counts_phrases
from evalward.resources import Eval, Located
from evalward.rundata.results import AssertionResult, FixtureResult, Status
from evalward.rundata.sides import Side
from evalward.scoring.judges.pairwise_panel import Judged, PairwiseJudge
from evalward.scoring.scores import score_eval
from evalward.security import Redactor
from evalward.verdict.compare import EvalComparison, compare
from evalward.verdict.gate import Bypass, GateDecision, GateResult, decide
from evalward.verdict.settle import settle
from report.test_counts_add_up import pair_of, runs_of

pytestmark = pytest.mark.unit

EVAL = "bot-eval"
SUMMARY_LIMIT = 1_000_000
"""The job summary's limit (action/publish/outputs.py): the comment, rendered whole."""
RULES = ("<", "pass^k", "sequential test", "pairwise judge", "failOnRegression")
"""The words of the rules that decide: every blocked Eval's headline names one."""


@dataclass
class Case:
    """A generated outcome: each fixture's head and base runs, the Eval's spec, the pairwise
    judge's pairs (if it has one), and whether the bypass label is applied."""

    spec: dict[str, Any]
    head: dict[str, str]
    base: dict[str, str]
    pairs: dict[str, str] | None = None
    """Per fixture, its pairs' outcomes (`pair_of`), when a pairwise judge judges."""
    unscored: str = ""
    """The pairwise judge's calibration could not be computed (why)."""
    inconclusive: str = ""
    """Why the pairwise judge may not decide (uncalibrated, below a floor)."""
    cannot_decide: str = ""
    """Why the absolute judge of every head run cannot decide (below its calibration floor)."""
    bypass: bool = False


@dataclass
class Outcome:
    comparisons: list[EvalComparison]
    decision: GateDecision
    summary: RunSummary
    evaluation: Evaluation


def evaluated(case: Case) -> Outcome:
    document = {"apiVersion": "evalward.dev/v1", "kind": "Eval"}
    document |= {"metadata": {"name": EVAL}, "spec": case.spec}
    located = Located(Eval.model_validate(document), f"evals/{EVAL}.yaml", 1)
    results = []
    for side, table in ((Side.head, case.head), (Side.base, case.base)):
        runs = [r for name, o in table.items() for r in runs_of(side.value, name, o)]
        if side is Side.head and case.cannot_decide:
            runs = [with_undecided_judge(r, case.cannot_decide) for r in runs]
        if runs:
            results.append(score_eval(located, side.value, runs))
    judged = None
    if case.pairs is not None:
        judge = PairwiseJudge(
            eval=EVAL,
            model="openai/judge-1",
            margin=0.3,
            consistency_floor=0.0,
            unscored_reason=case.unscored,
            inconclusive_reason=case.inconclusive,
        )
        pairs = [pair_of(f, rep, o) for f, said in case.pairs.items() for rep, o in enumerate(said)]
        judged = {EVAL: Judged(judge, pairs, sorted(case.head))}
    settled = settle(results, {Side.head: {EVAL: located}, Side.base: {}}, None, judged)
    comparisons = compare(settled)
    bypass = Bypass(label="force-eval-bypass", applied_by="octocat") if case.bypass else None
    decision = decide(comparisons, bypass)
    fixtures = [f for r in settled for f in r.fixtures]
    evaluation = Evaluation(
        changes=ChangeSet(),
        plan=Plan(evals=[EVAL]),
        fixtures=fixtures,
        evals=settled,
        comparisons=comparisons,
    )
    return Outcome(comparisons, decision, summarize(comparisons, decision, fixtures), evaluation)


def with_undecided_judge(run: FixtureResult, why: str) -> FixtureResult:
    """The run with a judge assertion whose judge cannot decide: shown as advisory, with why,
    its status read from the others alone (as the judge leaves it)."""
    judged = AssertionResult(
        type="judge",
        status=Status.failed,
        score=0.0,
        weight=1.0,
        severity=run.severity,
        message=f"advisory ({why}): judge score 0.00 < 0.80",
        advisory=True,
        cannot_decide=f"its judge openai/judge-m cannot decide: {why}",
    )
    return run.model_copy(update={"assertions": [*run.assertions, judged]})


# --- the paths --------------------------------------------------------------------------------

NAMES = [f"f{i}" for i in range(8)]


def fixed(threshold: float, policy: str, reps: int) -> dict[str, Any]:
    return {
        "targetAgent": "bot",
        "execution": {"repsPerFixture": reps},
        "scoring": {"passThreshold": threshold, "gate": {"failOnRegression": policy}},
    }


ADAPTIVE = {"targetAgent": "bot", "execution": {"reps": {"min": 1, "max": 8}}}


def runs(alphabet: str, size: int) -> st.SearchStrategy[str]:
    return st.text(st.sampled_from(alphabet), min_size=size, max_size=size)


@st.composite
def threshold_cases(draw: st.DrawFn) -> Case:
    """Fixed reps, some head runs failing: below the threshold."""
    names = NAMES[: draw(st.integers(1, 5))]
    reps = draw(st.integers(1, 3))
    head = {n: draw(runs("PPFFE", reps)) for n in names}
    base = {n: draw(runs("PPPF", reps)) for n in names}
    spec = fixed(draw(st.sampled_from([0.8, 1.0])), "none", reps) | {"fixtures": names}
    return Case(spec, head, base)


@st.composite
def regression_cases(draw: st.DrawFn) -> Case:
    """Fixed reps over a low threshold, a fixture that passed on base failing on head."""
    names = NAMES[: draw(st.integers(2, 6))]
    reps = draw(st.integers(1, 6))
    head = {n: draw(runs("PPPPF", reps)) for n in names}
    head[names[0]] = "F" * reps
    base = {n: "P" * reps for n in names}
    policy = draw(st.sampled_from(["any", "significant"]))
    return Case(fixed(0.0, policy, reps) | {"fixtures": names}, head, base)


@st.composite
def sequential_cases(draw: st.DrawFn) -> Case:
    """Adaptive reps, one fixture broken on head in every rep."""
    names = NAMES[: draw(st.integers(1, 4))]
    head = {n: draw(runs("PPPPPPPF", 8)) for n in names}
    head[names[0]] = "F" * 8
    base = {n: "P" * 8 for n in names}
    return Case(ADAPTIVE | {"fixtures": names}, head, base)


@st.composite
def pooled_cases(draw: st.DrawFn) -> Case:
    """Adaptive reps, a few failing reps in every fixture: none settles broken on its own,
    the pooled test blocks."""
    names = NAMES[: draw(st.integers(5, 8))]
    head = {n: draw(runs("PPF", 8)) for n in names}
    base = {n: "P" * 8 for n in names}
    return Case(ADAPTIVE | {"fixtures": names}, head, base)


@st.composite
def pairwise_cases(draw: st.DrawFn, said: str = "") -> Case:
    """Every assertion passes; the pairwise judge prefers the base's runs (or, `said`,
    answers only from those outcomes: `HTI` blocks nothing)."""
    names = NAMES[: draw(st.integers(1, 4))]
    adaptive = draw(st.booleans())
    reps = 8 if adaptive else draw(st.integers(2, 4))
    spec = (ADAPTIVE if adaptive else fixed(draw(st.sampled_from([0.0, 1.0])), "none", reps)) | {
        "fixtures": names,
        "judge": {"pairwise": {"rubric": "Which is better?", "margin": 0.3}},
    }
    head = {n: "P" * reps for n in names}
    pairs = {n: draw(said_only(said) if said else base_leaning()) for n in names}
    return Case(spec, head, dict(head), pairs)


def said_only(outcomes: str) -> st.SearchStrategy[str]:
    return st.text(st.sampled_from(outcomes), min_size=1, max_size=8)


def base_leaning() -> st.SearchStrategy[str]:
    """A fixture's pairs, nearly all preferring the base: eight to twelve that do and up to
    two others (head, tie, inconsistent, unanswered), in any order. Drawn freely from all
    five, about one case in fifty blocked, and a seed could draw none that did."""
    said = st.tuples(st.integers(8, 12), st.text(st.sampled_from("HTIU"), max_size=2))
    return said.flatmap(lambda s: st.permutations("B" * s[0] + s[1])).map("".join)


@st.composite
def inconclusive_cases(draw: st.DrawFn) -> Case:
    """A pairwise judge whose calibration could not be computed: no verdict."""
    case = draw(pairwise_cases())
    case.unscored = "the pairwise judge's calibration 'pairs' could not be computed: HTTP 500"
    return case


@st.composite
def judge_cannot_decide_cases(draw: st.DrawFn) -> Case:
    """A pairwise judge that may not decide (uncalibrated) over an Eval its rules pass, and
    pairs that do not block."""
    case = draw(pairwise_cases("HTI"))
    case.inconclusive = (
        "uncalibrated: `judge.pairwise.calibration` names no JudgeCalibration, so its "
        "agreement with people is unknown"
    )
    return case


@st.composite
def settled_but_judge_cannot_decide_cases(draw: st.DrawFn) -> Case:
    """Adaptive reps whose own tests settle every fixture, and a pairwise judge that cannot
    decide (swayed in the run, uncalibrated) over pairs that do not block."""
    names = NAMES[: draw(st.integers(1, 8))]
    spec = ADAPTIVE | {
        "fixtures": names,
        "judge": {"pairwise": {"rubric": "Which is better?", "margin": 0.3}},
    }
    head = {n: draw(at_most_one_failure()) for n in names}
    pairs = {n: draw(said_only("HTI")) for n in names}
    why = draw(
        st.sampled_from(
            [
                "uncalibrated: `judge.pairwise.calibration` names no JudgeCalibration, so its "
                "agreement with people is unknown",
                "position sway in this run: 0 of its 8 pairs asked in both orders judged alike "
                "(at most 31 % at 95 % confidence), below the consistency floor 0.80",
            ]
        )
    )
    return Case(spec, head, {n: "P" * 8 for n in names}, pairs, inconclusive=why)


def at_most_one_failure() -> st.SearchStrategy[str]:
    """Eight reps, at most one of them failing: each fixture's own test settles it (drawn
    freely, a case of several fixtures seldom had every one settled)."""
    return st.sampled_from(["P" * 8] + ["P" * i + "F" + "P" * (7 - i) for i in range(8)])


def fixtures_settled_yet_inconclusive(outcome: Outcome) -> bool:
    record = outcome.comparisons[0].head.pairwise
    sequential = outcome.comparisons[0].head.sequential
    return (
        outcome.decision.result is GateResult.inconclusive
        and record is not None
        and record.withholds
        and sequential is not None
        and len(sequential.settled) == len(sequential.fixtures)
    )


@st.composite
def absolute_judge_cannot_decide_cases(draw: st.DrawFn) -> Case:
    """An absolute judge below its calibration floor over an Eval nothing else fails, with
    fixed or adaptive reps."""
    names = NAMES[: draw(st.integers(1, 5))]
    reps = draw(st.integers(1, 3))
    head = {n: "P" * reps for n in names}
    spec = draw(st.sampled_from([fixed(1.0, "none", reps), ADAPTIVE])) | {"fixtures": names}
    why = "judge calibration 'cal': κ of openai/judge-m is 0.33, below the floor 0.60"
    return Case(spec, head, dict(head), cannot_decide=why)


@st.composite
def bypass_cases(draw: st.DrawFn) -> Case:
    """Any blocked outcome, with the bypass label applied."""
    case = draw(
        st.one_of(
            threshold_cases(),
            regression_cases(),
            sequential_cases(),
            pooled_cases(),
            pairwise_cases(),
            absolute_judge_cannot_decide_cases(),
        )
    )
    case.bypass = True
    return case


def blocked_by_rules(outcome: Outcome) -> bool:
    return outcome.decision.result is GateResult.failed


def pooled_blocks(outcome: Outcome) -> bool:
    sequential = outcome.comparisons[0].head.sequential
    return (
        blocked_by_rules(outcome)
        and sequential is not None
        and sequential.pooled_blocks
        and not any(f.blocks for f in sequential.fixtures)
    )


def fixture_test_blocks(outcome: Outcome) -> bool:
    sequential = outcome.comparisons[0].head.sequential
    return blocked_by_rules(outcome) and sequential is not None and sequential.blocks


def pairwise_blocks(outcome: Outcome) -> bool:
    record = outcome.comparisons[0].head.pairwise
    return blocked_by_rules(outcome) and record is not None and record.blocks


def regression_blocks(outcome: Outcome) -> bool:
    return blocked_by_rules(outcome) and outcome.comparisons[0].head.passed


PATHS: dict[str, tuple[Callable[[], st.SearchStrategy[Case]], Callable[[Outcome], bool]]] = {
    "threshold": (threshold_cases, blocked_by_rules),
    "regression": (regression_cases, regression_blocks),
    "sequential": (sequential_cases, fixture_test_blocks),
    "pooled": (pooled_cases, pooled_blocks),
    "pairwise": (pairwise_cases, pairwise_blocks),
    "incomplete": (
        inconclusive_cases,
        lambda o: o.decision.result in (GateResult.incomplete, GateResult.unavailable),
    ),
    "inconclusive": (
        judge_cannot_decide_cases,
        lambda o: o.decision.result is GateResult.inconclusive,
    ),
    "inconclusive pairwise, fixtures settled": (
        settled_but_judge_cannot_decide_cases,
        fixtures_settled_yet_inconclusive,
    ),
    "absolute judge inconclusive": (
        absolute_judge_cannot_decide_cases,
        lambda o: o.decision.result is GateResult.inconclusive,
    ),
    "bypass": (bypass_cases, lambda o: o.decision.result is GateResult.bypassed),
}
"""Each decision path: a strategy that lands on it, and how to tell it did."""


# --- the properties ---------------------------------------------------------------------------


def surfaces(outcome: Outcome) -> dict[str, tuple[str, str]]:
    """Each surface's headline and counts line, as it shows them."""
    context = ReportContext(
        comparisons=outcome.comparisons,
        decision=outcome.decision,
        marker=marker_for("evals/gate"),
        summary=outcome.summary,
    )
    shown = {}
    for name, body in (
        ("comment", render_comment(context)),
        ("job summary", render_comment(context, limit=SUMMARY_LIMIT)),
    ):
        lines = html.unescape(body).replace("\\", "").splitlines()
        shown[name] = (lines[1], next(line for line in lines if "fixtures pass on head" in line))
    terminal, as_json = io.StringIO(), io.StringIO()
    for out, as_json_flag in ((terminal, False), (as_json, True)):
        emit(
            Output(out=out, redact=Redactor([]), as_json=as_json_flag),
            outcome.evaluation,
            outcome.decision,
            base=True,
        )
    lines = terminal.getvalue().splitlines()
    shown["terminal"] = (lines[1], next(line for line in lines if "fixtures pass on head" in line))
    document = json.loads(as_json.getvalue())
    summary = RunSummary.model_validate(document["summary"])
    shown["results.json"] = (document["summary"]["headline"], " · ".join(counts_phrases(summary)))
    return shown


def check_headline(outcome: Outcome) -> None:
    headline, result = outcome.summary.headline, outcome.decision.result
    assert headline.strip() and not re.search(r":\s*($|[,;—])", headline), headline
    for low, high in re.findall(r"(\d+\.\d+) < (\d+\.\d+)", headline):
        assert float(low) < float(high), headline  # never "1.00 < 1.00"
    if result in (GateResult.failed, GateResult.bypassed):
        prefix = "Blocked: " if result is GateResult.failed else "Bypassed: "
        assert headline.startswith(prefix + EVAL), headline
        decided = headline.removeprefix(prefix + EVAL)
        assert decided.startswith((": ", " ")) and decided.strip(" :"), headline
        undecided = ("is incomplete: ", "is inconclusive: ")
        assert any(rule in decided for rule in (*RULES, *undecided)), headline
    elif result in (GateResult.incomplete, GateResult.unavailable):
        assert EVAL in headline or "provider unavailable" in headline, headline
    elif result is GateResult.inconclusive:
        pairwise = headline.startswith(f"{EVAL} is inconclusive: its pairwise judge")
        absolute = f"{EVAL} is inconclusive: its judge openai/judge-m cannot decide: "
        assert pairwise or headline.startswith(absolute), headline
        assert any(
            why in headline for why in ("uncalibrated", "below the floor", "position sway")
        ), headline
    record = outcome.comparisons[0].head.pairwise
    if record is not None and record.blocks:
        assert "pairwise judge" in headline and "head preferred less than base" in headline
    sequential = outcome.comparisons[0].head.sequential
    if result is GateResult.failed and sequential is not None and sequential.pooled_blocks:
        assert "pooled sequential test" in headline, headline


def check_counts(outcome: Outcome, line: str) -> None:
    counts, result = outcome.summary.counts, outcome.decision.result
    assert counts.passing + counts.failing + counts.not_settled == counts.fixtures
    found = re.search(r"(\d+)/(\d+) fixtures pass on head", line)
    assert found is not None and (int(found[1]), int(found[2])) == (
        counts.passing,
        counts.fixtures,
    )
    failing = re.search(r" · (\d+) failing", line)
    assert failing is not None and int(failing[1]) == counts.failing, line
    blocks = result in (GateResult.failed, GateResult.bypassed)
    if blocks and not (counts.failing or counts.regressions or counts.not_settled):
        # every fixture passes on its own: what blocked comes first, named
        assert line.startswith(f"{EVAL} blocked by its "), line
        assert "fixtures pass on head on their own" in line, line
    if not blocks:
        assert "blocked by" not in line, line
    record = outcome.comparisons[0].head.pairwise
    if record is not None and record.withholds:  # what has no verdict is said first
        assert line.startswith(EVAL) and "pairwise judge" in line.split(" · ")[0], line
        assert "fixtures pass on head on their own" in line, line
    sequential = outcome.comparisons[0].head.sequential
    if sequential is not None and fixtures_decided(outcome.comparisons[0].head):
        # the details' summary counts the settled fixtures the counts line counts
        settled = f"{len(sequential.settled)} of {len(sequential.fixtures)} fixtures settled"
        context = ReportContext(
            comparisons=outcome.comparisons, decision=outcome.decision, marker=marker_for("g")
        )
        assert settled in render_comment(context)
        assert len(sequential.settled) == counts.passing + counts.failing, line
    for base, head, ties, pairs in re.findall(
        r"base preferred (\d+) · head (\d+) · ties (\d+) of (\d+) pairs", line
    ):
        assert int(base) + int(head) + int(ties) <= int(pairs), line


@pytest.mark.parametrize("path", list(PATHS))
def test_every_decision_path_names_the_eval_and_what_decided_on_every_surface(
    path: str,
) -> None:
    strategy, landed = PATHS[path]

    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
    )
    @given(strategy())
    def check(case: Case) -> None:
        outcome = evaluated(case)
        assume(landed(outcome))
        check_headline(outcome)
        for surface, (headline, line) in surfaces(outcome).items():
            assert headline.endswith(outcome.summary.headline), (surface, headline)
            check_counts(outcome, line)

    check()
