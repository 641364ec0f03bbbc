"""What an Eval's pairwise judge refers to, checked at load (`resources/references.py`):
a model, a rubric for every fixture it judges, a calibration that is defined; each mistake at
its line before any model is called. Through `evalward validate` and the action:
tests/resources/test_pairwise_references.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalward.definitions.loader import load_what_loads
from evalward.resources.reading.yamlsource import PathKey
from evalward.resources.references import check_pairwise_references
from support.documents import documents
from support.greeter import greeter_agent, greeter_eval, greeting_fixture
from support.reported import Reported

pytestmark = pytest.mark.unit


def _found(tmp_path: Path, *settings: str) -> list[tuple[str, PathKey, str]]:
    (tmp_path / "suite.yaml").write_text(
        documents(
            greeter_agent("openai/gpt-4.1-mini"),
            greeter_eval(*settings),
            greeting_fixture("{ type: contains, value: Hi }"),
        ),
        encoding="utf-8",
    )
    resources, _ = load_what_loads(tmp_path)
    reported = Reported()
    located = resources.evals["greeter-eval"]
    check_pairwise_references(
        "greeter-eval", located, list(resources.fixtures.values()), resources, reported
    )
    return [(r.located.resource.kind, r.loc, r.message) for r in reported.reports]


def test_a_pairwise_judge_with_its_model_rubric_and_no_calibration_has_nothing_to_say(
    tmp_path: Path,
) -> None:
    assert _found(tmp_path, "judge: { model: openai/j, pairwise: { rubric: Kinder } }") == []


def test_a_judge_without_a_rubric_names_the_fixtures_it_cannot_judge(tmp_path: Path) -> None:
    ((kind, at, message),) = _found(tmp_path, "judge: { model: openai/j, pairwise: {} }")
    assert (kind, at) == ("Eval", ("spec", "judge", "pairwise"))
    assert message.startswith(
        "Eval 'greeter-eval' judges fixtures pairwise, and no rubric says what makes one run "
        "better for 'greeting' (suite.yaml:"
    )


def test_a_judge_without_a_model_is_refused(tmp_path: Path) -> None:
    ((_, at, message),) = _found(tmp_path, "judge: { pairwise: { rubric: Kinder } }")
    assert at == ("spec", "judge", "pairwise")
    assert "names no model to judge them" in message


def test_a_calibration_that_is_not_defined_is_named_with_the_nearest(tmp_path: Path) -> None:
    (tmp_path / "calibration.yaml").write_text(
        "apiVersion: evalward.dev/v1\nkind: JudgeCalibration\nmetadata: { name: kindness }\n"
        "spec:\n  rubric: Kinder\n  judgeModels: [openai/j]\n"
        "  pairs: [{ input: hi, outputA: Hello!, outputB: Go away, humanPreference: A }]\n",
        encoding="utf-8",
    )
    ((_, at, message),) = _found(
        tmp_path, "judge: { model: openai/j, pairwise: { rubric: Kinder, calibration: kindnes } }"
    )
    assert at == ("spec", "judge", "pairwise", "calibration")
    assert message == (
        "Eval 'greeter-eval' names JudgeCalibration 'kindnes' for its pairwise judge, which is "
        "not defined (did you mean 'kindness'?)"
    )
