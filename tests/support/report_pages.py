"""What the browser tests of report.html share: the Chromium they drive, the scenario's page as
`evalward run` writes it, and a synthetic page of many fixtures."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evalward.report.files import write_chunks
from evalward.report.html import Page, html_chunks
from evalward.resources.models import Severity
from evalward.rundata.results import (
    EvalResult,
    FixtureOutcome,
    FixtureResult,
    Interval,
    Status,
    Verdict,
)
from evalward.rundata.trace import StepType, Trace
from evalward.security import Redactor
from evalward.verdict.compare import compare
from fakes.model_server import ScriptedModelServer
from support.gitrepo import GitRepo
from support.report_scenario import run_report

CHROMIUM = next(
    (p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p),
    None,
)
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium on PATH (Debian: apt-get install -y chromium)"
)


def scenario_report(root: Path) -> Path:
    """The scenario's pull request run through `evalward run --base main`, in `root`."""
    model = ScriptedModelServer()
    try:
        return run_report(GitRepo(root / "repo"), model, root / "out")
    finally:
        model.close()


def synthetic_page(path: Path, count: int) -> Path:
    """report.html for `synthetic(count)`, written as a run writes it."""
    evals, fixtures = synthetic(count)
    page = Page(
        result="fail",
        reason="r",
        evals=evals,
        fixtures=fixtures,
        private=set(),
        comparisons=compare(evals),
    )
    write_chunks(path, html_chunks(page), Redactor([]))
    return path


def synthetic(count: int) -> tuple[list[EvalResult], list[FixtureResult]]:
    """`count` fixtures run on head and on base (2 × `count` results); every 7th regresses."""
    fixtures: list[FixtureResult] = []
    for index in range(count):
        for side in ("base", "head"):
            passed = side == "base" or index % 7 != 0
            trace = Trace()
            trace.add(StepType.input, content=f"question {index}")
            trace.add(StepType.tool_call, tool="lookup", arguments={"id": index})
            trace.add(StepType.tool_result, tool="lookup", output="found", source="mock")
            trace.add(StepType.final, content=f"answer {index} from {side}")
            fixtures.append(
                FixtureResult(
                    eval=f"eval-{index % 20:02d}",
                    fixture=f"case-{index:05d}",
                    side=side,
                    status=Status.passed if passed else Status.failed,
                    score=1.0 if passed else 0.0,
                    verdict=Verdict.passed if passed else Verdict.failed,
                    severity=Severity.medium,
                    output=f"answer {index} from {side}",
                    trace=trace,
                )
            )
    evals = []
    for name in sorted({f.eval for f in fixtures}):
        for side in ("base", "head"):
            runs = [f for f in fixtures if f.eval == name and f.side == side]
            outcomes = [
                FixtureOutcome(
                    name=r.fixture,
                    score=r.score,
                    result=r.status,
                    severity=r.severity,
                    reps=1,
                    passes=int(r.passed),
                    pass_rate=float(r.passed),
                    pass_rate_interval=Interval(low=0, high=1),
                )
                for r in runs
            ]
            passing = sum(o.passed for o in outcomes)
            evals.append(
                EvalResult(
                    eval=name,
                    agent="bot",
                    side=side,
                    score=passing / len(runs),
                    passed=passing == len(runs),
                    pass_threshold=0.9,
                    passing=passing,
                    failing=len(runs) - passing,
                    errors=0,
                    total=len(runs),
                    fixture_results=outcomes,
                    fixtures=runs,
                )
            )
    return evals, fixtures
