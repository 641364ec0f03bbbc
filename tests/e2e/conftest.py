"""The browser the report.html tests share, one per test module."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from e2e.report_pages import CHROMIUM, FLAGS


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="the `dev` extra installs playwright"
    )
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield launched
        launched.close()
