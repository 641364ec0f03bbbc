from __future__ import annotations

from pathlib import Path

import pytest

from support.report_pages import scenario_report


@pytest.fixture(scope="session")
def pull_request_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scenario's pull request run through `evalward run --base main`, once per test
    process: the browser tests only read its report.html and comment.md, so each module need
    not run the gate again."""
    return scenario_report(tmp_path_factory.mktemp("report"))
