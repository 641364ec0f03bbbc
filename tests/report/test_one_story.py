"""Every surface of one run tells the same story with the same numbers: the pull-request
comment, the job summary, the check run, report.html, results.json and the log (the action,
through the image's entry point), and the terminal (`evalward run --output-dir`).

The run is report.html's scenario (tests/support/report_scenario.py): two regressions (one low,
one medium), a still-failing held-out fixture, a fix, a fixture the pull request adds, a flaky
one, and a judge: its calls count in the tokens."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from evalward.text.numbers import seconds_text
from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer
from support.actionrun import ActionRun, pull_request_event, run_action
from support.gitrepo import GitRepo
from support.report_scenario import make_pull_request, run, script
from support.suite import provider_env

pytestmark = pytest.mark.e2e

HEADLINE = "Blocked: support-bot-eval 0.71 < 0.90 — 2 regressions"
COUNTS = (
    "3/6 fixtures pass on head · 2 regressions · 3 failing · 1 fixed · "
    "1 new (1 gating once merged) · 1 flaky"
)


def tagged(page: str, pattern: str) -> str:
    found = re.search(pattern, page, re.S)
    assert found is not None, pattern
    return html.unescape(found[1]).strip()


def page_flags(page: str) -> dict[str, int]:
    """How many of report.html's fixtures carry each filter flag, from the page's own data."""
    data = json.loads(tagged(page, r'<script type="application/json" id="ew-data">(.*?)</script>'))
    flags = data["meta"]["flags"]
    return {name: sum(1 for row in data["rows"] if row["g"] & bit) for name, bit in flags.items()}


def comment_lines(body: str) -> tuple[str, str, str]:
    """The comment's headline, counts line and figures line, as a reader sees them."""
    headline = html.unescape(body.splitlines()[1].removeprefix("## ❌ evalward: "))
    counts = next(line for line in body.splitlines() if " fixtures pass on head" in line)
    figures = next(line for line in body.splitlines() if line.startswith("wall time "))
    return headline, counts, figures


def figures_of(record: dict[str, Any]) -> str:
    """The figures line as results.json's numbers make it."""
    spent = record["run"]["spent"]
    cost = (
        f"${spent['cost_usd']:.4f}"
        if spent["cost_usd"] is not None
        else f"cost unknown ({spent['unpriced_calls']} calls to a model with no price)"
    )
    figures = (
        f"wall time {seconds_text(record['run']['wall_time_s'])} "
        f"(runs summed {seconds_text(record['summary']['run_time_summed_s'])}) · "
        f"{spent['model_calls']} model calls, {spent['tokens']:,} tokens incl. judge, {cost}"
    )
    found = record["run"].get("attribution_spent")
    if found is not None:  # attribution's, apart from the gate's own
        unknown = f"cost unknown ({found['unpriced_calls']} calls to a model with no price)"
        spent_on = f"${found['cost_usd']:.4f}" if found["cost_usd"] is not None else unknown
        figures += (
            f" · attribution: {found['model_calls']} model calls, "
            f"{found['tokens']:,} tokens incl. judge, {spent_on}"
        )
    return figures


def check_record(record: dict[str, Any]) -> None:
    """results.json holds the numbers every surface shows, each counting what it says."""
    summary, spent = record["summary"], record["run"]["spent"]
    assert summary["headline"] == HEADLINE
    counts = summary["counts"]
    assert (counts["fixtures"], counts["passing"], counts["regressions"]) == (6, 3, 2)
    assert counts["regressions_by_severity"] == {"medium": 1, "low": 1}
    assert (counts["failing"], counts["fixed"], counts["new"], counts["pending"]) == (3, 1, 1, 1)
    assert (counts["flaky"], counts["errors_on_head"]) == (1, 0)
    # the tokens count the judge's calls: more than the agents' runs used
    agents = sum(
        f["usage"]["input_tokens"] + f["usage"]["output_tokens"] for f in record["fixtures"]
    )
    assert spent["tokens"] > agents > 0
    assert spent["model_calls"] > len(record["fixtures"])
    runs_summed = sum(f["duration_ms"] for f in record["fixtures"]) / 1000
    assert abs(summary["run_time_summed_s"] - runs_summed) < 0.01


def check_page(page: str, record: dict[str, Any]) -> None:
    assert tagged(page, r'<h2 id="headline">(.*?)</h2>') == HEADLINE
    assert tagged(page, r'<p class="counts">(.*?)</p>') == COUNTS
    assert tagged(page, r'<p class="figures muted">(.*?)</p>') == figures_of(record)
    counts = record["summary"]["counts"]
    flags = page_flags(page)
    assert (flags["regressed"], flags["failing"], flags["fixed"]) == (
        counts["regressions"],
        counts["failing"],
        counts["fixed"],
    )
    assert (flags["new"], flags["flaky"], flags["errored"]) == (
        counts["new"],
        counts["flaky"],
        counts["errors_on_head"],
    )
    # the card leads with the worst regression, linked to the fixture opened
    card = tagged(page, r'<ol class="reasons">(.*?)</ol>')
    first = re.search(r"<li>(.*?)</li>", card, re.S)
    assert first is not None and "support-bot-eval / hostile-output" in first[1]
    assert 'href="#open=support-bot-eval%2Fhostile-output"' in first[1]


def test_the_action_tells_one_story_in_the_comment_summary_check_run_report_and_log(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    make_pull_request(repo)
    script(model)
    base, head = repo.git("rev-parse", "main").strip(), repo.head()
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    env = provider_env(model)
    done: ActionRun = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=env,
        inputs={"check-run": "true", "cache": "off"},
    )
    assert done.returncode == 1, done.stderr
    record = done.results()
    check_record(record)

    (posted,) = github.comments_on(7)
    body = str(posted["body"])
    headline, counts, figures = comment_lines(body)
    assert (headline, counts, figures) == (HEADLINE, COUNTS, figures_of(record))
    assert comment_lines(done.summary) == (headline, counts, figures)  # the job summary
    assert (done.output_dir / "comment.md").read_text() == body

    (check,) = github.check_runs
    assert check["output"]["title"] == HEADLINE
    assert check["output"]["summary"].split("\n\n")[:2] == [COUNTS, figures]

    check_page((done.output_dir / "report.html").read_text(), record)

    # the log's spending line says the run's model calls, tokens and cost in the same words
    spending = next(line for line in done.stdout.splitlines() if "evalward: estimated" in line)
    # (the gate's own beside its estimate: attribution's has a log line of its own)
    assert spending.endswith("; actual " + figures.split(" · ")[1])


def test_the_command_line_tells_the_same_story_on_the_terminal_and_in_its_files(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    repo = GitRepo(tmp_path / "repo")
    make_pull_request(repo)
    script(model)
    out = tmp_path / "out"
    done = run(
        repo, model, "--base", "main", "--no-cache", "--no-history", "--output-dir", str(out)
    )
    assert done.returncode == 1, done.stderr
    record = json.loads((out / "results.json").read_text())
    check_record(record)
    printed = comment_lines(done.stdout)
    assert printed == comment_lines((out / "comment.md").read_text())
    assert printed == (HEADLINE, COUNTS, figures_of(record))
    check_page((out / "report.html").read_text(), record)
    spending = next(line for line in done.stderr.splitlines() if "evalward: estimated" in line)
    # (the run's own beside its estimate, as the action's log: attribution's is said apart)
    assert spending.endswith("; actual " + printed[2].split(" · ")[1])
    assert "evalward: attribution: " in done.stderr
    # the terminal shows the reasons, evidence first, as the comment does
    assert (
        "1. 🔻 **medium** · **support-bot-eval / hostile-output** — step 2: the final answer "
        "differs from base's · contains: 'Nothing' not found in the final message · "
        "score 1.00 → 0.00 (-1.00)"
    ) in done.stdout
    assert (
        "3. 🔻 **low** · **support-bot-eval / greeting** — step 2: base the final answer → head "
        "`lookup_order` · toolNotCalled: lookup_order was called · score 1.00 → 0.40 (-0.60)"
    ) in done.stdout
