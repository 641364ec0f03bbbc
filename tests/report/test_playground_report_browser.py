"""report.html shows each run's playground state, initial -> final, base beside head, in a
real headless Chromium; a state that tries markup stays text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalward.report.files import write_chunks
from evalward.report.html import Page, html_chunks
from evalward.rundata.playground_state import PlaygroundRun, PlaygroundState
from evalward.security import Redactor
from evalward.verdict.compare import compare
from support.report_pages import needs_chromium, synthetic

sync_api = pytest.importorskip("playwright.sync_api", reason="the `dev` extra installs playwright")
pytestmark = [pytest.mark.e2e, needs_chromium]


def test_a_runs_state_diff_is_shown_for_base_and_head(browser: Any, tmp_path: Path) -> None:
    evals, fixtures = synthetic(1)  # case-00000 regresses on head
    before = {"db": {"orders": {"A-1": {"status": "delivered"}}, "refunds": {}}}
    for result in fixtures:
        after = json.loads(json.dumps(before))
        after["db"]["refunds"]["1"] = {"order_id": "A-1", "note": f"<img src=x> {result.side}"}
        if result.side == "head":
            after["db"]["orders"]["A-1"]["status"] = "lost"
        result.playground = PlaygroundRun(
            PlaygroundState("shop", before), PlaygroundState("shop", after)
        ).record()
    page_file = tmp_path / "report.html"
    page = Page(
        result="fail",
        reason="r",
        evals=evals,
        fixtures=fixtures,
        private=set(),
        comparisons=compare(evals),
    )
    write_chunks(page_file, html_chunks(page), Redactor([]))

    context = browser.new_context()
    view = context.new_page()
    errors: list[str] = []
    view.on("pageerror", lambda error: errors.append(str(error)))
    view.goto(page_file.as_uri())
    view.locator("#rows .row", has_text="case-00000").click()
    section = view.locator("#detail section.state-diff")
    sync_api.expect(section.locator("h3")).to_have_text("Playground state, initial \u2192 final")
    base, head = section.locator(".column").nth(0), section.locator(".column").nth(1)
    assert "playground shop" in base.inner_text()
    # record by record: each changed object under a line naming its path
    assert "@@ db.refunds" in base.inner_text() and "@@ db.orders.A-1" not in base.inner_text()
    assert base.locator("del").all_inner_texts() == []  # a record added, nothing removed
    assert any('"1": {' in t for t in base.locator("ins").all_inner_texts())
    removed = [t[1:].strip() for t in head.locator("del").all_inner_texts()]
    assert removed == ['"status": "delivered"']
    assert "@@ db.orders.A-1" in head.inner_text() and "@@ db.refunds" in head.inner_text()
    assert any('"status": "lost"' in t for t in head.locator("ins").all_inner_texts())
    assert '"note": "<img src=x> head"' in head.inner_text()
    assert view.locator("#detail img").count() == 0  # the agent's text stayed text
    assert errors == []
