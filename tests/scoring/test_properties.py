"""Property-based: the loader and every assertion survive any input; scores stay in [0, 1]."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from evalward.definitions.loader import load_resources
from evalward.errors import ResourceError
from evalward.providers.base import RunLabels
from evalward.resources.models import Assertion, EvalFixture, ScoringConfig
from evalward.resources.resource_set import Located
from evalward.rundata.results import Status
from evalward.rundata.trace import StepType, Trace, Usage
from evalward.scoring.assertions import check
from evalward.scoring.scores import score_fixture
from resources.checks.test_error_table import ASSERTION_TYPES

pytestmark = pytest.mark.hostile

FAST = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
FIELDS = [
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "labels",
    "spec",
    "targetAgent",
    "input",
    "type",
    "payload",
    "prompt",
    "assertions",
    "value",
    "pattern",
    "tool",
    "weight",
    "severity",
    "fixtures",
    "fixtureSelector",
    "matchLabels",
    "scoring",
    "passThreshold",
    "execution",
    "models",
    "system",
    "systemFile",
    "runtime",
    "command",
    "run",
    "schedule",
    "judge",
    "evalcases",
    "tests",
    "id",
    "criteria",
    "expected_outcome",
    "file",
    "max",
    "min",
    "args",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([*FIELDS, *ASSERTION_TYPES, "evalward.dev/v1", "Agent", "EvalFixture", "Eval"]),
    st.text(max_size=20),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=25,
)
documents = st.fixed_dictionaries(
    {
        "apiVersion": st.sampled_from(["evalward.dev/v1", "pai.io/v1"]),
        "kind": st.sampled_from(["Agent", "EvalFixture", "Eval", "JudgeCalibration", "Other"]),
    },
    optional={"metadata": values, "spec": values},
)


def load(files: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for name, content in files.items():
            (Path(tmp) / name).write_text(content, encoding="utf-8")
        try:
            load_resources(Path(tmp))
        except ResourceError as exc:
            assert exc.problems and all(p.file and p.message for p in exc.problems)


@FAST
@given(st.lists(documents, min_size=1, max_size=3))
def test_loader_survives_any_document(docs: list[dict[str, Any]]) -> None:
    load({"r.yaml": yaml.safe_dump_all(docs)})


@FAST
@given(st.text(max_size=300), st.sampled_from(["apiVersion: evalward.dev/v1\n", "evalcases:\n"]))
def test_loader_survives_any_text(text: str, head: str) -> None:
    load({"r.yaml": head + text})


@FAST
@given(values.filter(lambda v: isinstance(v, list | dict)))
def test_loader_survives_any_agentv_shape(cases: Any) -> None:
    load({"r.yaml": yaml.safe_dump({"evalcases": cases})})


ASSERTION: TypeAdapter[Any] = TypeAdapter(Assertion)
step_texts = st.text(max_size=40) | st.sampled_from(["", "a+", "(", "done", "{}", "[1]"])
steps = st.lists(
    st.tuples(
        st.sampled_from(
            [
                StepType.assistant,
                StepType.tool_call,
                StepType.tool_result,
                StepType.error,
                StepType.final,
            ]
        ),
        step_texts,
        st.sampled_from(["a", "b", "search"]),
        st.dictionaries(st.text(max_size=5), scalars, max_size=3),
        st.integers(0, 10**6),
    ),
    max_size=8,
)
assertion_dicts = st.builds(
    lambda kind, extra: {**extra, "type": kind},
    st.sampled_from(ASSERTION_TYPES),
    st.dictionaries(
        st.sampled_from(
            [
                "value",
                "values",
                "pattern",
                "tool",
                "tools",
                "args",
                "max",
                "min",
                "weight",
                "severity",
                "mode",
                "steps",
                "expected",
                "rubric",
                "minScore",
                "flags",
                "path",
                "count",
                "caseSensitive",
                "field",
            ]
        ),
        values,
        max_size=4,
    ),
)


def trace_from(rows: list[tuple[StepType, str, str, dict[str, Any], int]]) -> Trace:
    trace = Trace()
    trace.add(StepType.input, content="hi")
    for kind, content, tool, arguments, tokens in rows:
        if kind is StepType.tool_call:
            trace.add(kind, tool=tool, arguments=arguments)
        elif kind is StepType.tool_result:
            trace.add(kind, tool=tool, output=content)
        else:
            trace.add(kind, content=content, usage=Usage(output_tokens=tokens))
    return trace


@settings(max_examples=400, deadline=None)
@given(assertion_dicts, steps)
def test_every_assertion_survives_any_trace_and_scores_in_range(
    raw: dict[str, Any], rows: list[tuple[StepType, str, str, dict[str, Any], int]]
) -> None:
    try:
        assertion = ASSERTION.validate_python(raw)
    except ValidationError:
        return  # refused at load time with a located message (see the corpus)
    trace = trace_from(rows)
    if raw["type"] != "judge":
        status, message = check(assertion, trace, regex_timeout=0.05)
        assert isinstance(status, Status) and isinstance(message, str)
    fixture = EvalFixture.model_validate(
        {
            "apiVersion": "evalward.dev/v1",
            "kind": "EvalFixture",
            "metadata": {"name": "fx"},
            "spec": {
                "targetAgent": "bot",
                "input": {"type": "prompt", "payload": {"prompt": "hi"}},
                "assertions": [raw, {"type": "contains", "value": "done"}],
            },
        }
    )
    result = asyncio.run(
        score_fixture(
            Located(fixture, "f.yaml", 1),
            trace,
            ScoringConfig(),
            run=RunLabels(eval="ev", side="head", rep=0),
            regex_timeout=0.05,
        )
    )
    assert 0.0 <= result.score <= 1.0
    assert all(0.0 <= a.score <= 1.0 for a in result.assertions)
    assert result.status is not Status.passed or all(
        a.status in (Status.passed, Status.skipped) or a.advisory for a in result.assertions
    )
