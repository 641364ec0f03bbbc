"""What the comment and report.html say of a fixture over its reps, of an Eval's seed 001
numbers and of an advisory Eval, and that a failing suite of any size names its failures.
Results are scored by the scoring stage (`score_eval`), as a run scores them."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from evalward.report.html import Page, html_chunks
from evalward.report.junit import junit_chunks
from evalward.report.markdown import (
    MAX_COMMENT_CHARS,
    ReportContext,
    RunReason,
    marker_for,
    render_comment,
)
from evalward.report.view import REASONS_BUDGET
from evalward.resources import Eval, Located
from evalward.resources.models import Severity
from evalward.rundata.results import AssertionResult, EvalResult, FixtureResult, Status, Verdict
from evalward.scoring.reps import wilson_interval
from evalward.scoring.scores import score_eval
from evalward.verdict.compare import compare
from evalward.verdict.gate import decide

pytestmark = pytest.mark.unit

MARKER = marker_for("evals/gate")


def run(
    eval_name: str,
    fixture: str,
    side: str,
    passed: bool,
    rep: int = 0,
    axes: dict[str, float] | None = None,
) -> FixtureResult:
    """One run with one `contains` assertion, as the scoring stage leaves it."""
    check = AssertionResult(
        type="contains",
        status=Status.passed if passed else Status.failed,
        score=1.0 if passed else 0.0,
        weight=1.0,
        severity=Severity.medium,
        message="" if passed else "'answer:' not found",
    )
    return FixtureResult(
        eval=eval_name,
        fixture=fixture,
        side=side,
        rep=rep,
        status=check.status,
        score=check.score,
        verdict=Verdict.of(check.score),
        severity=Severity.medium,
        message=check.message and f"contains: {check.message}",
        output=f"{fixture} on {side}",
        assertions=[check],
        axes=axes or {},
        file=f"evals/{fixture}.yaml",
        line=1,
    )


def scored(
    name: str, side: str, runs: list[FixtureResult], *, rule: float = 0.6, reps: int = 1
) -> EvalResult:
    spec = {
        "targetAgent": "bot",
        "scoring": {"passThreshold": 0.9, "minRepPassRate": rule},
        "execution": {"repsPerFixture": reps},
    }
    defined = Eval.model_validate(
        {"apiVersion": "pai.io/v1", "kind": "Eval", "metadata": {"name": name}, "spec": spec}
    )
    return score_eval(Located(defined, f"evals/{name}.yaml", 1), side, runs)


def comment(results: list[EvalResult], **extra: object) -> str:
    comparisons = compare(results)
    context = ReportContext(
        comparisons=comparisons,
        decision=decide(comparisons, None),
        marker=MARKER,
        head_sha="a" * 40,
        **extra,  # type: ignore[arg-type]
    )
    return render_comment(context)


def report(results: list[EvalResult]) -> str:
    return "".join(
        html_chunks(
            Page(
                result="fail",
                reason="",
                evals=results,
                fixtures=[f for r in results for f in r.fixtures],
                private=set(),
            )
        )
    )


def reps_eval(side: str, flaky_passes: int, rule: float = 0.6) -> EvalResult:
    """Eight reps of three fixtures: `flaky` passes `flaky_passes` of them (rep 0 first),
    `majority` 5 of 8, `steady` all."""
    runs = []
    for rep in range(8):
        runs.append(run("support", "flaky", side, rep % 2 == 0 or rep < flaky_passes, rep))
        runs.append(run("support", "majority", side, rep < 5, rep))
        runs.append(run("support", "steady", side, True, rep))
    if flaky_passes == 8:
        runs = [r.model_copy(update={"status": Status.passed, "score": 1.0}) for r in runs]
    return scored("support", side, runs, rule=rule, reps=8)


def test_a_fixture_over_reps_shows_its_rule_interval_and_flakiness_not_one_reps_score() -> None:
    head = reps_eval("head", flaky_passes=0)  # reps 0, 2, 4, 6 pass: 4 of 8
    flaky = next(o for o in head.fixture_results if o.name == "flaky")
    assert (flaky.passes, flaky.reps, flaky.result, flaky.flaky) == (4, 8, Status.failed, True)
    body = comment([reps_eval("base", flaky_passes=8), head])

    low, high = wilson_interval(4, 8).low * 100, wilson_interval(4, 8).high * 100
    outcome = f"4/8 reps pass (rule ≥ 60 %), 95 % CI {low:.0f}–{high:.0f} %"
    assert outcome == "4/8 reps pass (rule ≥ 60 %), 95 % CI 22–78 %"
    outcome += "; pass^8 0.00"  # not all 8 reps passed
    # evidence first (the assertion that failed), then the statistics: the rule's outcome
    regression = next(line for line in body.splitlines() if "**support / flaky**" in line)
    assert regression == (
        f"1. 🔻 **medium** · **support / flaky** — contains: 'answer:' not found · {outcome}"
        " · ⚠️ flaky"
    )
    summary = next(line for line in body.splitlines() if "<summary>🔻 support / flaky" in line)
    assert f"— fail: {outcome} (medium)" in summary
    assert "score 0.00" not in summary
    detail = body[body.index(summary) :]
    assert "_Mean score over the reps 0.50. Shown below: rep 1, the first that did not pass" in (
        detail
    )
    # 5 of 8 passes the default rule: a pass, however its first failing rep looks; a passing
    # fixture gets a line among the flaky ones, no block of its own
    assert "- support / majority — pass: 5/8 reps pass" in body
    assert "<summary>✅" not in body
    assert "· 2 flaky" in body  # in the counts line

    html = report([reps_eval("base", flaky_passes=8), head])
    static = re.search(r"support / flaky</strong>.*?</li>", html, re.S)
    assert static is not None and f"head fail 0.50, {outcome} · flaky" in static[0]

    stricter = comment([scored("support", "head", head.fixtures, rule=0.75, reps=8)])
    assert "❌ **medium** · **support / majority** — contains: 'answer:' not found · 5/8 reps" in (
        stricter
    )
    assert "5/8 reps pass (rule ≥ 75 %)" in stricter


def test_the_seed_001_run_score_verdict_and_axes_in_the_comment_and_the_report() -> None:
    def side(name: str, label: str, accuracy: list[float]) -> EvalResult:
        runs = [
            run(name, f"case-{i}", label, score == 1.0, axes={"accuracy": score, "tone": 1.0})
            for i, score in enumerate(accuracy)
        ]
        return scored(name, label, runs)

    base = side("graded", "base", [1.0, 1.0, 1.0, 1.0])
    head = side("graded", "head", [1.0, 1.0, 1.0, 0.0])
    plain = scored("plain", "head", [run("plain", "only", "head", True)])
    assert (head.run_score, head.axes) == (0.75, {"accuracy": 0.75, "tone": 1.0})
    body = comment([base, head, plain])
    line = next(line for line in body.splitlines() if ": run score" in line)
    assert line == (
        "_graded: run score 1.00 → **0.75** (partial), the mean of its fixture "
        "scores · axes: accuracy 1.00 → 0.75, tone 1.00 → 1.00._"
    )
    assert body.count(": run score") == 1  # an Eval without axes has none

    html = report([base, head, plain])
    table = re.search(r'<table class="run-scores">.*?</table>', html, re.S)
    assert table is not None
    cells = re.findall(r"<td[^>]*>(.*?)</td>", table[0], re.S)
    assert cells == [
        "graded",
        "1.00",
        "<strong>0.75</strong>",
        '<span class="verdict partial">partial</span>',
        "accuracy 1.00 → 0.75, tone 1.00 → 1.00",
    ]


def test_a_large_failing_suite_keeps_a_reason_for_its_worst_failures_and_counts_the_rest() -> None:
    """Thousands of failing fixtures in Evals new to the pull request: the first ones keep
    their reasons, worst first, the rest are counted and left to report.html, and each is
    listed once."""
    results = [
        scored(name, "head", [run(name, f"case-{i:05d}", "head", i % 10 == 0) for i in range(2000)])
        for name in ("alpha", "beta", "gamma")
    ]
    body = comment(results, run_url="https://github.example/r/1")
    assert len(body) <= MAX_COMMENT_CHARS and "cut here" not in body
    lines = re.findall(r"^\d+\. ❌ \*\*medium\*\* · .*$", body, re.M)
    assert lines[0] == (
        "1. ❌ **medium** · [alpha / case-00001](https://github.example/r/1#artifacts) — "
        "contains: 'answer:' not found · score 0.00"
    )
    assert len(lines) > 50 and sum(len(line) for line in lines) < REASONS_BUDGET
    assert f"… and {5400 - len(lines):,} more in report.html" in body
    assert "5400 failing" in body  # the counts line counts every one
    listed = re.findall(r"(?:alpha|beta|gamma) / case-\d{5}", body)
    assert len(set(listed)) == len(lines)  # no fixture is listed twice (its detail aside)

    # the worst first: a critical fixture before medium ones, a larger drop before a smaller
    base = scored("alpha", "base", [run("alpha", f"case_{i}*", "base", True) for i in range(300)])
    heads = [run("alpha", f"case_{i}*", "head", i > 2) for i in range(300)]
    heads[2] = heads[2].model_copy(update={"severity": Severity.critical})
    regressed = comment([base, scored("alpha", "head", heads)])
    order = re.findall(r"^\d+\. 🔻 \*\*(\w+)\*\* · \*\*alpha / (\S+)\*\*", regressed, re.M)
    assert order == [
        ("critical", "case\\_2\\*"),
        ("medium", "case\\_0\\*"),
        ("medium", "case\\_1\\*"),
    ]
    assert "3 regressions (1 critical)" in regressed
    assert "Blocked: alpha 0.985 &lt; 0.90" not in regressed  # 0.985 passes: no contradiction

    # so many failing Evals that the table is capped: the worst first, the rest counted
    many = [scored(f"e{i:03d}", "head", [run(f"e{i:03d}", "x", "head", False)]) for i in range(600)]
    crowded = comment(many)
    assert len(crowded) <= MAX_COMMENT_CHARS and "cut here" not in crowded
    assert "… and 560 more Evals in report.html." in crowded
    assert crowded.count("| ❌ Fail |") == 40


def test_an_advisory_eval_is_shown_as_such_and_the_gate_skipped() -> None:
    check = AssertionResult(
        type="latency",
        status=Status.passed,
        score=1.0,
        weight=1.0,
        severity=Severity.medium,
        advisory=True,
        message="run took 12 ms (reported only: no maxMs, so it does not gate)",
    )
    only = run("timing", "slow", "head", True).model_copy(
        update={"status": Status.skipped, "score": 0.0, "assertions": [check], "message": "x"}
    )
    result = scored("timing", "head", [only])
    body = comment([result])
    assert body.splitlines()[1].startswith("## ⏭️ evalward: nothing gates this change: timing")
    assert "| timing | bot | — | — | 0.90 | — | ⚪ Advisory |" in body
    assert (
        "> ⚪ **timing is advisory** — every assertion only reports (e.g. a \\`latency\\` "
        "without \\`maxMs\\`): its verdicts are shown, and it neither passes nor fails the gate."
    ) in body.split("\n\n", 2)[1]  # among the first lines
    assert "no fixture gates · 0 regressions · 0 failing · 1 advisory (not gating)" in body
    assert "**Failing fixtures**" not in body
    html = report([result])
    assert '<span class="verdict advisory"' in html and "does not gate: every assertion" in html
    assert 'data-filter="advisory"' in html  # the list's filter, shown when a fixture is advisory
    skipped = ET.fromstring("".join(junit_chunks([result], set()))).find(
        ".//testcase[@name='slow']/skipped"
    )
    assert skipped is not None and skipped.get("message") == "x"


def test_a_run_without_a_base_says_what_ran_and_why() -> None:
    result = scored("nightly", "head", [run("nightly", "a", "head", True)])
    ran = RunReason(
        "Scheduled run", "every Eval with this schedule", cron="0 6 * * 1`<b>", evals=("nightly",)
    )
    body = comment([result], ran=ran)
    assert "**Scheduled run** (cron `0 6 * * 1b`): every Eval with this schedule — nightly." in body
    assert "Changed agents" not in body


def test_fixtures_of_one_severity_are_listed_in_natural_order() -> None:
    """case-2 before case-10, and case-10 before case-10a, in the comment's reasons."""
    names = ["case-10", "case-2", "case-1", "case-10a", "case-9"]
    results = [scored("alpha", "head", [run("alpha", name, "head", False) for name in names])]
    body = comment(results)
    listed = re.findall(r"^\d+\. ❌ \*\*medium\*\* · \*\*alpha / (\S+)\*\*", body, re.M)
    assert listed == ["case-1", "case-2", "case-9", "case-10", "case-10a"]
