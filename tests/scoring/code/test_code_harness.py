"""The programs that call a code scorer (`scoring.code_harness`), run as evalward runs them
(`python3 -I -c`, `node -e`) with one JSON request on stdin: the answer is the one line on
the stdout they started with, whatever the scorer prints goes to stderr, a failure names the
scorer's own line, a value that is no score is refused, a `script` scorer is run as a child
under the limits, and a JavaScript scorer may import Node's own modules only."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from evalward.scoring.code.code_harness import JAVASCRIPT, LIMITS, PYTHON

pytestmark = pytest.mark.integration

LIMITED = [256 << 20, 10, 1 << 20]
"""Bytes of data, CPU seconds, bytes a file may grow to."""


def asked(argv: list[str], **request: Any) -> tuple[dict[str, Any], str]:
    """The harness's one answer line and what went to stderr."""
    base = {"filename": "graders/check.py", "function": None, "inline": False, "line": None}
    body = {**base, "limits": LIMITED, "output": "the answer is 42", "context": {}, **request}
    done = subprocess.run(
        argv, input=json.dumps(body).encode(), capture_output=True, timeout=60, check=False
    )
    (line,) = done.stdout.decode().splitlines()
    return json.loads(line), done.stderr.decode()


def python(**request: Any) -> tuple[dict[str, Any], str]:
    return asked([sys.executable, "-I", "-c", PYTHON], **request)


def node(**request: Any) -> tuple[dict[str, Any], str]:
    return asked(["node", "-e", JAVASCRIPT], **request)


def test_an_inline_python_expression_reads_the_output() -> None:
    answer, _ = python(source="'42' in output", inline=True)
    assert answer == {"ok": True, "value": True}


def test_what_a_python_scorer_prints_goes_to_stderr_not_into_the_answer() -> None:
    source = "def grade(output, context):\n    print('debugging', output)\n    return 0.5\n"
    answer, stderr = python(source=source, function="grade")
    assert answer == {"ok": True, "value": 0.5}
    assert "debugging the answer is 42" in stderr


def test_a_python_failure_names_the_scorers_line_in_its_file() -> None:
    source = "def grade(output, context):\n    return 1 / 0\n"
    answer, _ = python(source=source, function="grade", line=10)
    assert answer["ok"] is False
    assert answer["error"] == "ZeroDivisionError: division by zero (at graders/check.py:11)"


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("float('nan')", "returned nan, which is not a score"),
        ("object()", "TypeError: Object of type object is not JSON serializable"),
    ],
)
def test_a_value_that_is_no_score_is_refused(source: str, error: str) -> None:
    answer, _ = python(source=source, inline=True)
    assert answer == {"ok": False, "error": error}


def test_a_missing_function_is_named() -> None:
    answer, _ = python(source="x = 1\n", function="grade")
    assert answer == {
        "ok": False,
        "error": "LookupError: graders/check.py defines no function 'grade'",
    }


def test_a_script_scorer_runs_as_a_child_given_its_input() -> None:
    source = "import json, sys\nprint(json.load(sys.stdin)['n'] * 2)\nsys.exit(4)\n"
    answer, _ = python(source=source, language="python", stdin={"n": 21}, args=["--x"])
    assert answer["ok"] is True
    assert answer["value"] == {"stdout": "42\n", "truncated": False, "stderr": "", "exit": 4}


def test_limits_are_set_before_the_program_runs() -> None:
    shown = "import resource; print(resource.getrlimit(resource.RLIMIT_CPU))"
    done = subprocess.run(
        [sys.executable, "-c", LIMITS, *map(str, LIMITED), sys.executable, "-c", shown],
        capture_output=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.decode().strip() == "(10, 11)"


def test_an_inline_javascript_expression_and_an_exported_scorer_object() -> None:
    answer, _ = node(source="output.includes('42')", inline=True)
    assert answer == {"ok": True, "value": True}
    scorer = "exports.length = { name: 'length', score: ({ output }) => output.length };"
    answer, _ = node(source=scorer, filename="graders/check.js", function="length")
    assert answer == {"ok": True, "value": len("the answer is 42")}


def test_a_javascript_scorer_may_not_import_a_package_it_was_not_given() -> None:
    source = "const _ = require('left-pad'); module.exports = () => true;"
    answer, _ = node(source=source, filename="graders/check.js")
    assert answer["ok"] is False
    assert "Cannot find module 'left-pad'" in answer["error"]
