"""What the checks read after an output transform (`scoring/code/transform.py`): a string as it is,
any other value as its compact JSON, in a copy of the trace whose final message it becomes.
The transform itself runs through `evalward run` in tests/scoring/code/test_output_transforms.py."""

from __future__ import annotations

import pytest

from evalward.rundata.trace import Step, StepType, Trace
from evalward.scoring.code.transform import as_text, with_final_output

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("as is", "as is"),
        ({"b": 1, "a": [1, 2]}, '{"b":1,"a":[1,2]}'),
        (["é", None], '["é",null]'),
        (3.5, "3.5"),
        (False, "false"),
    ],
)
def test_a_value_is_read_as_a_string_or_its_compact_json(value: object, text: str) -> None:
    assert as_text(value) == text


def test_the_last_final_message_becomes_the_text_and_the_trace_is_left_as_it_was() -> None:
    trace = Trace(
        steps=[
            Step(index=1, type=StepType.input, content="q"),
            Step(index=2, type=StepType.final, content="first answer"),
            Step(index=3, type=StepType.input, content="again"),
            Step(index=4, type=StepType.final, content="second answer"),
        ]
    )
    read = with_final_output(trace, "TRANSFORMED")
    assert [s.content for s in read.steps] == ["q", "first answer", "again", "TRANSFORMED"]
    assert trace.steps[3].content == "second answer"


def test_a_trace_with_no_final_message_gets_one() -> None:
    trace = Trace(steps=[Step(index=1, type=StepType.input, content="q")])
    read = with_final_output(trace, "out")
    assert [(s.index, s.type, s.content) for s in read.steps] == [
        (1, StepType.input, "q"),
        (2, StepType.final, "out"),
    ]
    assert len(trace.steps) == 1
