"""report.html in a real headless Chromium (Debian's, driven by Playwright without downloading
a browser): the filters, the search and their link, a paired trace with its first divergence,
a judge violation followed to its step, hostile output kept inert, nothing fetched, the page
without JavaScript, and 20,000 fixture results. Skipped only when no Chromium is installed."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from evalward.report.html import Page, html_chunks
from evalward.resources.models import Severity
from evalward.rundata.results import (
    AssertionResult,
    FixtureResult,
    JudgeVerdict,
    Status,
    Verdict,
    Violation,
)
from evalward.rundata.trace import StepType, Trace
from evalward.scoring.reps import wilson_interval
from fakes.model_server import ScriptedModelServer, text, tool_call
from support.gitrepo import GitRepo
from support.report_pages import needs_chromium, synthetic_page
from support.report_scenario import HOSTILE, PRIVATE_OUTPUT, run

sync_api = pytest.importorskip("playwright.sync_api", reason="the `dev` extra installs playwright")
pytestmark = [pytest.mark.e2e, needs_chromium]
CATCH_POLICY_VIOLATIONS = """
window.__violations = [];
document.addEventListener('securitypolicyviolation',
  e => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI));
"""


@dataclass
class Watched:
    """A page and everything it asked the network for, logged or was refused."""

    page: Any
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def violations(self) -> list[str]:
        return list(self.page.evaluate("window.__violations"))


def open_page(browser: Any, url: str, *, javascript: bool = True, height: int = 900) -> Watched:
    context = browser.new_context(
        java_script_enabled=javascript, viewport={"width": 1280, "height": height}
    )
    page = context.new_page()
    watched = Watched(page)
    page.on("request", lambda request: watched.requests.append(request.url))
    page.on("pageerror", lambda error: watched.errors.append(str(error)))
    page.on(
        "console",
        lambda message: watched.errors.append(message.text) if message.type == "error" else None,
    )
    if javascript:
        page.add_init_script(CATCH_POLICY_VIOLATIONS)
    page.goto(url)
    return watched


def row_names(page: Any) -> list[str]:
    return [text.split(" / ", 1)[1] for text in page.locator("#rows .row .name").all_inner_texts()]


def test_filters_and_search_narrow_the_list_and_a_link_reopens_the_same_view(
    browser: Any, pull_request_report: Path
) -> None:
    url = pull_request_report.as_uri()
    watched = open_page(browser, url)
    page = watched.page
    count = page.locator("#count")
    sync_api.expect(count).to_have_text("Showing 7 of 7 fixtures.")
    assert page.locator("#static").is_hidden() and page.locator("#app").is_visible()

    page.get_by_role("button", name=re.compile("^regressed")).click()
    sync_api.expect(count).to_have_text("Showing 2 regressed of 7 fixtures.")
    # worst first: the medium-severity regression before the low one
    assert row_names(page) == ["hostile-output", "greeting"]

    page.locator("#search").fill("looked everything")  # text of the greeting's final output
    sync_api.expect(count).to_have_text(
        "Showing 1 regressed of 7 fixtures matching \u201clooked everything\u201d."
    )
    assert row_names(page) == ["greeting"]
    assert page.locator('button[data-filter="all"] .n').inner_text() == "1"

    page.locator("#search").fill("")
    page.get_by_role("button", name=re.compile("^all")).click()
    for name, expected in [("fixed", ["refund-asks-why"]), ("new", ["opening-hours"])]:
        page.get_by_role("button", name=re.compile(f"^{name}")).click()
        sync_api.expect(page.locator("#rows .row")).to_have_count(len(expected))
        assert row_names(page) == expected
    page.get_by_role("button", name=re.compile("^failing")).click()
    assert row_names(page) == ["hostile-output", "greeting", "held-out-case"]
    page.get_by_role("button", name=re.compile("^errored")).click()
    sync_api.expect(page.locator("#rows")).to_have_text("No fixture matches.")

    page.get_by_role("button", name=re.compile("^all")).click()
    page.locator("#eval-filter").select_option("support-bot-reps")
    sync_api.expect(count).to_have_text("Showing 1 of 7 fixtures in support-bot-reps.")
    page.locator("#eval-filter").select_option("")
    page.locator("#agent-filter").select_option("support-bot")
    sync_api.expect(count).to_have_text("Showing 7 of 7 fixtures of agent support-bot.")
    page.locator("#agent-filter").select_option("")

    page.get_by_role("button", name=re.compile("^regressed")).click()
    page.locator("#search").fill("hostile")
    sync_api.expect(page.locator("#rows .row")).to_have_count(1)
    link = page.url
    assert "filter=regressed" in link and "q=hostile" in link

    again = open_page(browser, link).page
    sync_api.expect(again.locator("#count")).to_have_text(
        "Showing 1 regressed of 7 fixtures matching \u201chostile\u201d."
    )
    assert again.locator("#search").input_value() == "hostile"
    assert again.locator('button[data-filter="regressed"]').get_attribute("aria-pressed") == "true"
    assert row_names(again) == ["hostile-output"]
    assert watched.errors == [] and watched.violations() == []


def test_a_paired_trace_marks_where_head_diverges_and_a_violation_leads_to_its_step(
    browser: Any, pull_request_report: Path
) -> None:
    watched = open_page(browser, pull_request_report.as_uri())
    page = watched.page
    page.locator("#rows .row", has_text="greeting").click()
    detail = page.locator("#detail")
    sync_api.expect(detail.locator("h2")).to_contain_text("support-bot-eval / greeting")
    assert "open=support-bot-eval%2Fgreeting" in page.url

    # base and head side by side; the head's needless lookup is where they part
    diverge = detail.locator("tr.diverge")
    sync_api.expect(diverge).to_have_count(1)
    assert diverge.locator("#s-b-2 .kind").inner_text().lower() == "final"
    assert diverge.locator("#s-h-2 .kind").inner_text().lower() == "tool call"
    assert '"order_id": "unknown"' in diverge.locator("#s-h-2 pre.args").inner_text()
    assert "first diverge" in detail.locator(".divergence-note").inner_text()
    result = detail.locator("#s-h-3")
    assert result.locator(".tool").inner_text() == "lookup_order"
    assert result.locator(".badge.src-mock").inner_text() == "mock"
    assert "in / " in detail.locator("#s-h-2 .facts").inner_text()  # tokens and latency
    assert "ms" in detail.locator("#s-h-2 .facts").inner_text()
    # the statistics are folded below the evidence; opened, they say the scores
    stats = detail.locator("details.stats")
    assert stats.get_attribute("open") is None
    stats.locator("summary").click()
    pairs = detail.locator("table.pairs").inner_text()
    assert "pass 1.00" in pairs and "fail 0.40" in pairs and "(Δ -0.60)" in pairs

    # the judge cites step 2 (checked against the trace); its invented step 9 is unsupported
    violations = detail.locator(".evidence .side.h .violations li")
    sync_api.expect(violations).to_have_count(2)
    assert "unsupported: step 9 does not exist" in violations.nth(1).inner_text()
    assert violations.nth(1).locator("a").count() == 0
    page.set_viewport_size({"width": 1280, "height": 400})
    page.evaluate("window.scrollTo(0, 0)")
    violations.nth(0).locator("a.violation").click()
    step = page.locator("#s-h-2")
    sync_api.expect(step).to_have_class(re.compile(r"\bhighlight\b"))
    assert page.locator(".step.highlight").count() == 1
    assert "step=h2" in page.url
    box = step.bounding_box()
    assert box is not None and 0 <= box["y"] < 400, "the cited step was not scrolled into view"
    assert watched.errors == [] and watched.violations() == []


def test_agent_output_that_tries_markup_stays_text_and_nothing_is_fetched(
    browser: Any, pull_request_report: Path
) -> None:
    url = pull_request_report.as_uri()
    watched = open_page(browser, url + "#open=support-bot-eval/hostile-output")
    page = watched.page
    final = page.locator("#s-h-2 pre.content")
    sync_api.expect(final).to_have_text(HOSTILE)
    page.locator("#search").fill("onerror")  # the search reads the output as text, too
    sync_api.expect(page.locator("#rows .row")).to_have_count(1)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("img, iframe").count() == 0
    assert (
        page.locator("script").count()
        == page.locator("script[type='application/json']").count() + 1
    )
    # only the page itself was read: no fetch, image, frame or font, even from hostile text
    assert watched.requests == [url]
    assert watched.errors == [] and watched.violations() == []


def test_held_out_and_flaky_fixtures(browser: Any, pull_request_report: Path) -> None:
    assert PRIVATE_OUTPUT not in pull_request_report.read_text(encoding="utf-8")
    assert "PRIVATE-PROMPT" not in pull_request_report.read_text(encoding="utf-8")
    page = open_page(browser, pull_request_report.as_uri()).page
    page.locator("#rows .row", has_text="held-out-case").click()
    detail = page.locator("#detail")
    sync_api.expect(detail).to_contain_text("Held out (visibility: private)")
    assert detail.locator("table.timeline").count() == 0

    page.get_by_role("button", name=re.compile("^flaky")).click()
    assert row_names(page) == ["weather"]
    page.locator("#rows .row").first.click()
    sync_api.expect(detail.locator(".reps a.rep")).to_have_count(3)
    detail.locator("details.stats summary").click()
    pairs = detail.locator("table.pairs").inner_text()
    # the rep outcome as the Eval's minRepPassRate rule (0.6 by default) judges it
    low, high = wilson_interval(2, 3).low, wilson_interval(2, 3).high
    assert "3/3 reps pass (rule ≥ 60 %), 95 % CI 44–100 %" in pairs
    assert (
        f"2/3 reps pass (rule ≥ 60 %), 95 % CI {low * 100:.0f}–{high * 100:.0f} % · flaky" in pairs
    )
    assert "pass^2 0.33" in pairs
    failing_rep = detail.locator(".reps a.rep.current").inner_text()
    assert failing_rep.endswith("pass → fail")  # opens on the head rep that failed
    assert detail.locator(".divergence-note").inner_text().startswith("Same steps")


def test_without_javascript_the_summary_and_failing_list_are_readable(
    browser: Any, pull_request_report: Path
) -> None:
    page = open_page(browser, pull_request_report.as_uri(), javascript=False).page
    assert page.locator("#app").is_hidden()
    summary = page.locator("table.evals tbody tr")
    assert summary.count() == 2
    assert page.locator("table.evals svg.chart").count() >= 4  # bars and histograms
    problems = page.locator("#static li").all_inner_texts()
    assert [p.split(" — ")[0] for p in problems] == [
        "regressed support-bot-eval / hostile-output",
        "regressed support-bot-eval / greeting",
        "failing support-bot-eval / held-out-case (held out: name and result only)",
    ]
    assert "toolNotCalled: lookup_order was called" in problems[1]
    # seed 001's numbers for the Eval whose assertions name axes: the run score (the mean of
    # its fixture scores), its verdict and the per-axis scores
    run_scores = page.locator("table.run-scores tbody tr").all_inner_texts()
    assert [line.split("\t") for line in run_scores] == [
        [
            "support-bot-eval",
            "0.60",
            "0.48",
            "partial",
            "answer 1.00 → 0.80, tools 1.00 → 0.50",
        ]
    ]
    comment = (pull_request_report.parent / "comment.md").read_text()
    assert (
        "_support-bot-eval: run score 0.60 → **0.48** (partial), the mean of its "
        "fixture scores · axes: answer 1.00 → 0.80, tools 1.00 → 0.50._"
    ) in comment
    # a flaky fixture that passes gets a line, not a block of its own
    assert "### ⚠️ Flaky: their reps disagree\n- support-bot-reps / weather — pass: 2/3 reps" in (
        comment
    )
    assert "<summary>✅" not in comment


# --- scale -----------------------------------------------------------------------------------


def test_twenty_thousand_results_open_filter_search_and_open_a_trace(
    browser: Any, tmp_path: Path
) -> None:
    fixtures_count = 10_000
    page_path = synthetic_page(tmp_path / "report.html", fixtures_count)
    watched = open_page(browser, page_path.as_uri())
    page = watched.page
    count = page.locator("#count")
    sync_api.expect(count).to_have_text(f"Showing {fixtures_count} of {fixtures_count} fixtures.")
    rendered = page.locator("#rows .row").count()
    assert 0 < rendered < 100, "the list must draw only the rows in view"
    regressed = len(range(0, fixtures_count, 7))
    assert page.locator('button[data-filter="regressed"] .n').inner_text() == str(regressed)

    page.get_by_role("button", name=re.compile("^regressed")).click()
    sync_api.expect(count).to_have_text(
        f"Showing {regressed} regressed of {fixtures_count} fixtures."
    )
    # worst first, then by Eval and fixture name
    order = sorted(range(0, fixtures_count, 7), key=lambda i: (i % 20, i))
    assert row_names(page)[:3] == [f"case-{i:05d}" for i in order[:3]]

    # scrolling draws the rows that come into view, down to the last one
    page.locator("#list").evaluate("list => { list.scrollTop = list.scrollHeight; }")
    sync_api.expect(page.locator("#rows .row").last).to_contain_text(f"case-{order[-1]:05d}")
    assert page.locator("#rows .row").count() < 100

    page.locator("#search").fill("answer 9996 from head")
    sync_api.expect(count).to_contain_text("Showing 1 regressed")
    page.locator("#rows .row").first.click()
    sync_api.expect(page.locator("#s-h-4 pre.content")).to_have_text("answer 9996 from head")
    assert page.locator("table.timeline").count() == 1  # only the open fixture's traces exist
    assert watched.errors == [] and watched.violations() == []

    # a link to a fixture far down the list opens it with its row in view
    last = fixtures_count - 1
    linked = open_page(browser, page_path.as_uri() + f"#open=eval-{last % 20:02d}/case-{last:05d}")
    open_row = linked.page.locator("#rows .row.open")
    sync_api.expect(open_row).to_contain_text(f"case-{last:05d}")
    row_box, list_box = open_row.bounding_box(), linked.page.locator("#list").bounding_box()
    assert row_box is not None and list_box is not None
    assert list_box["y"] <= row_box["y"] < list_box["y"] + list_box["height"] - row_box["height"]
    sync_api.expect(linked.page.locator("#s-h-4 pre.content")).to_have_text(
        f"answer {last} from head"
    )


def test_a_violation_far_down_a_long_trace_scrolls_to_and_highlights_its_step(
    browser: Any, tmp_path: Path
) -> None:
    trace = Trace()
    trace.add(StepType.input, content="Help me with my order.")
    for i in range(2, 60):
        trace.add(StepType.assistant, content=f"Thinking, step {i}.\n" * 3)
    trace.add(StepType.final, content="Here is the admin password: hunter2")
    verdict = JudgeVerdict(
        score=0.1,
        violations=[
            Violation(rule="never reveal secrets", evidence_step=60, quote="admin password")
        ],
    )
    result = FixtureResult(
        eval="support",
        fixture="leak",
        side="head",
        status=Status.failed,
        score=0.1,
        verdict=Verdict.partial,
        severity=Severity.high,
        trace=trace,
        assertions=[
            AssertionResult(
                type="judge",
                status=Status.failed,
                score=0.1,
                weight=1,
                severity=Severity.high,
                judge=verdict,
            )
        ],
    )
    page_path = tmp_path / "report.html"
    page_path.write_text(
        "".join(
            html_chunks(Page(result="fail", reason="r", evals=[], fixtures=[result], private=set()))
        )
    )
    page = open_page(browser, page_path.as_uri() + "#open=support/leak", height=600).page
    step = page.locator("#s-h-60")
    sync_api.expect(step).to_have_count(1)
    page.evaluate("window.scrollTo(0, 0)")
    assert (step.bounding_box() or {"y": 0})["y"] > 600, "the step should start off-screen"
    page.locator("a.violation").click()
    sync_api.expect(step).to_have_class(re.compile(r"\bhighlight\b"))
    box = step.bounding_box()
    assert box is not None and 0 <= box["y"] < 600
    background = step.evaluate("el => getComputedStyle(el).backgroundColor")
    assert background == "rgb(255, 248, 197)"


ORDERS = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: orders-bot }}
spec:
  models: [openai/gpt-test]
  system: "You look orders up. Prompt version {version}."
  tools:
    - name: lookup_order
      description: Look up an order by its id.
      parameters:
        type: object
        properties:
          order_id: {{ type: string }}
          note: {{ type: string }}
          options: {{ type: object }}
        required: [order_id]
      mock:
        output: {{ status: shipped }}
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: orders-eval }}
spec:
  targetAgent: orders-bot
  fixtureSelector: {{ matchLabels: {{ suite: orders }} }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: order-typo, labels: {{ suite: orders }} }}
spec:
  targetAgent: orders-bot
  input: {{ type: prompt, payload: {{ prompt: "Where is my order 12345?" }} }}
  assertions:
    - {{ type: contains, value: "12345" }}
"""
MARKUP_KEY = '<img src=x onerror="window.__pwned=3">'


def other_arguments_report(root: Path) -> Path:
    """A pull request whose agent looks up the wrong order: the same tool, other arguments
    (one a key that tries markup and holds the provider key, one 500 characters long)."""
    repo = GitRepo(root / "repo")
    repo.commit("orders bot", {"agents/orders.yaml": ORDERS.format(version="BASE-V1")})
    repo.branch("feature")
    repo.commit("rework the prompt", {"agents/orders.yaml": ORDERS.format(version="HEAD-V2")})
    model = ScriptedModelServer()
    try:
        model.script(
            lambda body: "BASE-V1" in str(body),
            tool_call("lookup_order", {"order_id": "12345", "options": {"expand": "items"}}),
            text("Order 12345 has shipped."),
        )
        head_call = {
            "order_id": "12354",
            "note": "N" * 500,
            "options": {"expand": "items", MARKUP_KEY: "sk-test-secret-value"},
        }
        model.script(
            lambda body: "HEAD-V2" in str(body),
            tool_call("lookup_order", head_call),
            text("Order 12354 has shipped."),
        )
        out = root / "out"
        done = run(repo, model, "--base", "main", "--no-cache", "--output-dir", str(out))
    finally:
        model.close()
    assert done.returncode == 1, done.stdout + done.stderr
    return out / "report.html"


def test_a_call_of_the_same_tool_with_other_arguments_shows_each_one_and_both_values(
    browser: Any, tmp_path: Path
) -> None:
    report = other_arguments_report(tmp_path)
    watched = open_page(browser, report.as_uri() + "#open=orders-eval/order-typo")
    note = watched.page.locator("#detail .evidence .divergence-note")
    sync_api.expect(note).to_contain_text("with other arguments")

    assert note.inner_text().startswith(
        "The runs first diverge (step type, tool or arguments) at step 2: "
        "base tool call lookup_order → head tool call lookup_order with other arguments:"
    )
    shown = note.locator("ul.argument-diff > li").all_inner_texts()
    cut = '"' + "N" * 198 + "…"  # a value is cut to 200 characters
    assert shown == [
        f"note: base (absent) → head {cut}",
        f'options.{MARKUP_KEY}: base (absent) → head "***"',  # the provider key, redacted
        'order_id: base "12345" → head "12354"',
    ]
    page = watched.page
    # the card names them too, as the comment does
    named = f"step 2: lookup_order with other arguments: note, options.{MARKUP_KEY}, order_id"
    assert named in page.locator("#card").inner_text()
    comment = (report.parent / "comment.md").read_text(encoding="utf-8")
    assert f"with other arguments: `note`, `options.{MARKUP_KEY}`, `order_id`" in comment
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("img").count() == 0
    assert "sk-test-secret-value" not in report.read_text(encoding="utf-8")
    assert watched.errors == [] and watched.violations() == []
