"""The pull-request comment at any size: a run with N failing fixtures (every one a regression:
head calls `issue_refund` where base called `open_ticket`, and the judge cites the step), of
mixed severities, over 3 Evals, plus as many passing fixtures. Prints, per N: the comment's
length against GitHub's 65,536-character limit, how many failing fixtures keep their reason
(evidence, assertion, statistics) and how many are left to report.html, whether the
per-fixture detail was folded, whether any fixture is listed twice, and the time to render.

    python bench/comment_size.py [--failing 20 2000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import re
import statistics
import time

from evalward.plan.changes import ChangeSet
from evalward.plan.plan import Plan
from evalward.record.evaluation import Evaluation
from evalward.record.schema import RunInfo, SpentInfo
from evalward.report.markdown import MAX_COMMENT_CHARS, marker_for, render_comment, report_context
from evalward.resources import Eval, Located
from evalward.resources.models import Severity
from evalward.rundata.results import (
    AssertionResult,
    FixtureResult,
    JudgeVerdict,
    Status,
    Verdict,
    Violation,
)
from evalward.rundata.spending import Spent
from evalward.rundata.spool import TraceSpool
from evalward.rundata.trace import StepType, Trace
from evalward.scoring.scores import score_eval
from evalward.verdict.compare import compare
from evalward.verdict.gate import decide

EVALS = ("shop-assistant-eval", "refund-eval", "returns-eval")


def severity(index: int) -> Severity:
    if index % 50 == 0:
        return Severity.critical
    if index % 10 == 0:
        return Severity.high
    return Severity.medium if index % 3 else Severity.low


def trace(tool: str, answer: str) -> Trace:
    steps = Trace()
    steps.add(StepType.input, content="I want my money back for order 4411.")
    steps.add(StepType.tool_call, tool=tool, arguments={"order_id": "4411"})
    steps.add(StepType.tool_result, tool=tool, output='{"ok": true}', source="mock")
    steps.add(StepType.final, content=answer)
    return steps


def run(eval_name: str, name: str, side: str, passed: bool, weight: Severity) -> FixtureResult:
    tool = "open_ticket" if passed else "issue_refund"
    answer = "I opened ticket T-1 for you." if passed else "Refund issued, no questions asked."
    checks = [
        AssertionResult(
            type="toolOrder",
            status=Status.passed if passed else Status.failed,
            score=1.0 if passed else 0.0,
            weight=1.0,
            severity=weight,
            message="open_ticket before issue_refund"
            if passed
            else "issue_refund was called before open_ticket",
        ),
        AssertionResult(
            type="judge",
            status=Status.passed if passed else Status.failed,
            score=1.0 if passed else 0.2,
            weight=1.0,
            severity=weight,
            message="judge score 1.00 ≥ 0.80" if passed else "judge score 0.20 < 0.80",
            judge=JudgeVerdict(
                score=1.0 if passed else 0.2,
                model="openai/judge",
                violations=[]
                if passed
                else [
                    Violation(
                        rule="never refund without a ticket",
                        severity="critical",
                        evidence_step=2,
                        quote="issue_refund",
                    )
                ],
            ),
        ),
    ]
    score = 1.0 if passed else 0.1
    return FixtureResult(
        eval=eval_name,
        fixture=name,
        side=side,
        status=Status.passed if passed else Status.failed,
        score=score,
        verdict=Verdict.of(score),
        severity=weight,
        message="" if passed else "toolOrder: issue_refund was called before open_ticket",
        output=answer,
        assertions=checks,
        trace=trace(tool, answer),
        duration_ms=900.0,
    )


def evaluation(failing: int) -> Evaluation:
    """`failing` regressions and as many passing fixtures, over three Evals."""
    fixtures = []
    for index in range(failing * 2):
        eval_name = EVALS[index % len(EVALS)]
        name = f"refund-case-{index:05d}"
        fails = index % 2 == 0
        for side in ("base", "head"):
            fixtures.append(
                run(eval_name, name, side, side == "base" or not fails, severity(index // 2))
            )
    results = []
    for eval_name in EVALS:
        spec = {"targetAgent": "shop-assistant", "scoring": {"passThreshold": 0.85}}
        defined = Eval.model_validate(
            {
                "apiVersion": "pai.io/v1",
                "kind": "Eval",
                "metadata": {"name": eval_name},
                "spec": spec,
            }
        )
        for side in ("base", "head"):
            runs = [f for f in fixtures if f.eval == eval_name and f.side == side]
            results.append(score_eval(Located(defined, "evals/e.yaml", 1), side, runs))
    spool = TraceSpool()
    kept = [spool.keep(f) for f in fixtures]
    return Evaluation(ChangeSet(), Plan(), kept, results, compare(results), traces=spool)


def measure(failing: int, repeat: int) -> dict[str, object]:
    built = evaluation(failing)
    decision = decide(built.comparisons, None)
    spent = Spent(calls=failing * 6, tokens=failing * 2_400, cost_usd=failing * 0.0031)
    run_info = RunInfo(
        wall_time_s=42.0,
        spent=SpentInfo.of(spent),
        run_url="https://github.com/acme/shop/actions/runs/1",
    )
    times = []
    body = ""
    for _ in range(repeat):
        start = time.perf_counter()
        context = report_context(
            built,
            decision,
            marker=marker_for("evals/gate"),
            run=run_info,
        )
        body = render_comment(context)
        times.append(time.perf_counter() - start)
    reasons = re.findall(r"^\d+\. (?:🔻|❌|💥|⏱️) \*\*\w+\*\* · .*$", body, re.M)
    with_evidence = [r for r in reasons if "step 2: base `open_ticket` → head `issue_refund`" in r]
    more = re.search(r"^… and ([\d,]+) more in report\.html", body, re.M)
    listed = re.findall(r"\[(\S+ / refund-case-\d{5})\]", body)
    return {
        "failing": failing,
        "chars": len(body),
        "under limit": len(body) <= MAX_COMMENT_CHARS,
        "reasons": len(reasons),
        "with evidence": len(with_evidence),
        "more in report.html": int(more[1].replace(",", "")) if more else 0,
        "detail folded": "<details>" not in body,
        "listed twice": len(listed) - len(set(listed)),
        "headline": body.splitlines()[1],
        "first": reasons[0] if reasons else "",
        "render s (median)": round(statistics.median(times), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--failing", type=int, nargs="+", default=[20, 2000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for failing in args.failing:
        figures = measure(failing, args.repeat)
        shown = {k: v for k, v in figures.items() if k not in ("first", "headline")}
        print(" · ".join(f"{k}: {v}" for k, v in shown.items()))
        print(f"  {figures['headline']}")
        print(f"  first line: {figures['first']}")


if __name__ == "__main__":
    main()
