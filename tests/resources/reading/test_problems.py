"""How a problem is worded (`resources/reading/problems.py`): the field path as YAML spells it, a
short rendering of what was found, and the nearest valid name."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from evalward.resources.models import Eval
from evalward.resources.reading.problems import (
    did_you_mean,
    found,
    located_messages,
    render_path,
)
from evalward.resources.reading.yamlsource import PathKey

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("loc", "path"),
    [
        (("spec", "assertions", 1, "value"), "spec.assertions[1].value"),
        (("spec",), "spec"),
        ((0, "name"), "[0].name"),
        ((), ""),
    ],
)
def test_a_path_is_written_as_the_yaml_spells_it(loc: tuple[str | int, ...], path: str) -> None:
    assert render_path(loc) == path


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"a": 1}, "a mapping"),
        ([1, 2], "a list"),
        (None, "nothing (null)"),
        ("text", "'text'"),
        (3, "3"),
        ("y" * 200, repr("y" * 200)[:77] + "..."),
    ],
)
def test_what_was_found_is_said_short(value: object, text: str) -> None:
    assert found(value) == text


def test_the_nearest_name_is_suggested_only_when_it_is_near() -> None:
    names = ["contains", "equals", "regex", "toolCalled"]
    assert did_you_mean("contain", names) == " (did you mean 'contains'?)"
    assert did_you_mean("toolcalled", names) == " (did you mean 'toolCalled'?)"
    assert did_you_mean("zzz", names) == ""


def test_a_name_in_other_case_is_suggested_however_far_difflib_finds_it() -> None:
    assert did_you_mean("APIVERSION", ["apiVersion"]) == " (did you mean 'apiVersion'?)"
    assert did_you_mean("Kind", ["kind", "kinds"]) == " (did you mean 'kind'?)"


def _told(data: dict[str, object]) -> list[tuple[PathKey, str]]:
    with pytest.raises(ValidationError) as raised:
        Eval.model_validate(data)
    return located_messages(raised.value, data, Eval)


EVAL_DATA: dict[str, object] = {
    "apiVersion": "evalward.dev/v1",
    "kind": "Eval",
    "metadata": {"name": "bot-eval"},
}


def test_a_field_of_a_block_written_beside_it_is_told_where_it_belongs() -> None:
    spec = {"targetAgent": "bot", "fixtures": ["a"], "repsPerFixture": 3, "execution": {}}
    assert _told({**EVAL_DATA, "spec": spec}) == [
        (
            ("spec", "repsPerFixture"),
            "unknown field 'repsPerFixture' here: it belongs in the `execution` block "
            "(spec.execution.repsPerFixture)",
        )
    ]


def test_a_field_of_no_block_keeps_the_nearest_name_and_the_fields_of_its_place() -> None:
    spec = {"targetAgent": "bot", "fixtures": ["a"], "fixture": "b", "nothing": 1}
    assert _told({**EVAL_DATA, "spec": spec}) == [
        (("spec", "fixture"), "unknown field 'fixture' (did you mean 'fixtures'?)"),
        (
            ("spec", "nothing"),
            "unknown field 'nothing'; expected one of: execution, fixtureSelector, fixtures, "
            "judge, playground, schedule, scoring, simulatedUser, targetAgent, visibility",
        ),
    ]
