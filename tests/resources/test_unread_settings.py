"""Settings an Eval gives that its way of deciding does not read (`resources/unread_settings.py`):
each a warning at its field naming what decides instead, never ignored in silence."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalward.definitions.loader import load_resources
from evalward.resources.reading.yamlsource import PathKey
from evalward.resources.unread_settings import check_unread_settings
from support.documents import documents
from support.greeter import greeter_agent, greeter_eval, greeting_fixture
from support.reported import Reported

pytestmark = pytest.mark.unit


def _warnings(tmp_path: Path, *settings: str) -> list[tuple[PathKey, str, bool]]:
    suite = documents(
        greeter_agent("openai/gpt-4.1-mini"),
        greeter_eval(*settings),
        greeting_fixture("{ type: contains, value: Hi }"),
    )
    (tmp_path / "suite.yaml").write_text(suite, encoding="utf-8")
    reported = Reported()
    check_unread_settings(load_resources(tmp_path), reported)
    return [(r.loc, r.message, r.warning) for r in reported.reports]


def test_fixed_reps_name_each_adaptive_setting_they_do_not_read(tmp_path: Path) -> None:
    found = _warnings(
        tmp_path,
        "execution: { repsPerFixture: 3 }",
        "scoring: { passThreshold: 0.8, gate: { missRate: 0.1, drop: 0.2 } }",
    )
    assert [(loc, warning) for loc, _, warning in found] == [
        (("spec", "scoring", "gate", "missRate"), True),
        (("spec", "scoring", "gate", "drop"), True),
    ]
    assert found[0][1] == (
        "Eval 'greeter-eval' has fixed reps (no execution.reps), which do not read "
        "scoring.gate.missRate: only adaptive reps' sequential tests do; remove it (from the "
        "Eval, or from evalward.yaml's defaults), or set execution.reps"
    )


def test_adaptive_reps_name_each_fixed_setting_with_what_decides_instead(
    tmp_path: Path,
) -> None:
    found = _warnings(
        tmp_path,
        "execution: { reps: { min: 2, max: 6 } }",
        "scoring: { minRepPassRate: 0.6, gate: { failOnRegression: any } }",
    )
    assert [loc for loc, _, _ in found] == [
        ("spec", "scoring", "minRepPassRate"),
        ("spec", "scoring", "gate", "failOnRegression"),
    ]
    assert "a fixture's verdict is its sequential test's" in found[0][1]
    assert found[1][1].startswith("Eval 'greeter-eval' has adaptive reps (execution.reps)")


def test_an_eval_that_sets_only_what_it_reads_gets_no_warning(tmp_path: Path) -> None:
    assert _warnings(tmp_path, "scoring: { passThreshold: 0.8 }") == []
    assert _warnings(tmp_path, "execution: { reps: { min: 2, max: 6 } }") == []
