"""A code scorer run as a run runs it (`scoring.code_scorer.CodeScorers`), each a real Python
or node process: what it returns read as promptfoo reads it, the context it is given about
the run (`scorer_case`), a file's function, a script, a transform's value, and a scorer that
crashes or was never loaded made an `error` that says why, never a pass."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from evalward.errors import ScorerFailed
from evalward.resources.checks.code_scorer import CodeAssertion
from evalward.resources.models import EvalFixtureSpec
from evalward.rundata.results import Status
from evalward.rundata.trace import StepType, Trace
from evalward.scoring.code.code_scorer import CodeScorers, scorer_case
from evalward.scoring.code.code_verdicts import ScorerCase

pytestmark = pytest.mark.integration

FIXTURE = EvalFixtureSpec.model_validate(
    {
        "targetAgent": "bot",
        "input": {"type": "prompt", "payload": {"prompt": "Where is order 7?", "tier": "gold"}},
        "vars": {"order": "7"},
        "reference": "Order 7 has shipped.",
        "assertions": [{"type": "contains", "value": "shipped"}],
    }
)


def case() -> ScorerCase:
    trace = Trace()
    trace.add(StepType.input, content="Where is order 7?")
    trace.add(StepType.final, content="Order 7 has shipped today.")
    return scorer_case(FIXTURE, trace)


def code(**fields: Any) -> CodeAssertion:
    return CodeAssertion.model_validate({"type": "code", **fields})


def scored(use: Callable[[CodeScorers], Awaitable[Any]]) -> Any:
    scorers = CodeScorers({"PATH": "/usr/bin:/bin"}, kill_grace=0.5)
    try:
        return asyncio.run(use(scorers))
    finally:
        scorers.close()


def test_a_runs_case_holds_its_output_input_reference_and_vars() -> None:
    made = case()
    assert made.output == "Order 7 has shipped today."
    assert made.input == "Where is order 7?"
    assert made.expected == "Order 7 has shipped."
    assert made.vars == {"prompt": "Where is order 7?", "tier": "gold", "order": "7"}
    assert [s["type"] for s in made.trace["steps"]] == ["input", "final"]


@pytest.mark.parametrize(
    ("source", "threshold", "status", "score"),
    [
        ("'shipped' in output", None, Status.passed, 1.0),
        ("context['vars']['order'] == '8'", None, Status.failed, 0.0),
        ("0.4", 0.5, Status.failed, 0.4),
        ("0.6", 0.5, Status.passed, 0.6),
        ("{'pass': True, 'score': 0.2, 'reason': context['expected']}", None, Status.passed, 0.2),
    ],
)
def test_what_a_python_scorer_returns_is_its_verdict(
    source: str, threshold: float | None, status: Status, score: float
) -> None:
    assertion = code(source=source, language="python", threshold=threshold)

    found = scored(lambda s: s.score(assertion, case()))

    assert (found.status, found.score) == (status, score)


def test_a_files_javascript_function_is_called_with_the_output_and_context() -> None:
    text = "exports.grade = (output, c) => ({ pass: true, score: 1, reason: c.vars.tier });"
    assertion = code(file="graders/grade.js:grade")
    assertion = assertion.model_copy(update={"file_text": text})

    found = scored(lambda s: s.score(assertion, case()))

    assert (found.status, found.message) == (Status.passed, "gold")


def test_a_script_reads_the_run_on_stdin_and_its_exit_code_decides() -> None:
    text = "import sys\nsys.exit(0 if 'shipped' in sys.stdin.read() else 1)\n"
    assertion = code(file="graders/check.py", protocol="script").model_copy(
        update={"file_text": text}
    )

    found = scored(lambda s: s.score(assertion, case()))

    assert found.status is Status.passed


@pytest.mark.parametrize(
    ("assertion", "said"),
    [
        (
            code(file="graders/gone.py"),
            "the scorer 'graders/gone.py' was not loaded with its fixture",
        ),
        (
            code(source="import os\nos._exit(3)", language="python"),
            "the scorer ended (exit code 3) without an answer",
        ),
        (code(source="1 / 0", language="python"), "the scorer failed: ZeroDivisionError"),
        (
            code(source="'a verdict?'", language="python"),
            'the scorer returned "a verdict?"; expected',
        ),
    ],
)
def test_a_scorer_that_gives_no_verdict_is_an_error_that_says_why(
    assertion: CodeAssertion, said: str
) -> None:
    found = scored(lambda s: s.score(assertion, case()))

    assert found.status is Status.error
    assert found.message.startswith(said)


def test_a_functions_value_and_a_scoring_functions_call() -> None:
    transform = code(source="output.upper()", language="python")
    deciding = code(source="context['namedScores']['tone'] > 0.5", language="python")

    async def use(scorers: CodeScorers) -> tuple[Any, Any]:
        value = await scorers.value(transform, ("shipped", {}))
        called = await scorers.call(deciding, ({}, {"namedScores": {"tone": 0.9}}))
        return value, called

    value, called = scored(use)

    assert value == "SHIPPED"
    assert called.status is Status.passed


def test_a_functions_value_that_fails_raises_why() -> None:
    broken = code(source="output['missing']", language="python")
    with pytest.raises(ScorerFailed, match="TypeError"):
        scored(lambda s: s.value(broken, ("shipped", {})))
