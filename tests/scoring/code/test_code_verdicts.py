"""A script grader's answer, read from its own channel: its exit code, or its whole stdout as
one JSON object; what could be read either way is an error, never a pass."""

from __future__ import annotations

import pytest

from evalward.errors import DuplicateKey
from evalward.resources.checks.code_scorer import CodeAssertion
from evalward.scoring.code.code_verdicts import script_verdict
from evalward.security import Redactor
from evalward.text.cuts import hide_before_cuts

pytestmark = pytest.mark.unit

GRADER = CodeAssertion.model_validate(
    {"type": "code", "file": "graders/check.py", "protocol": "script"}
)


def read(stdout: str, code: int = 0, stderr: str = "") -> tuple[str, float, str]:
    answer = {"stdout": stdout, "stderr": stderr, "exit": code, "truncated": False}
    found = script_verdict(GRADER, answer)
    return found.status.value, found.score, found.message


@pytest.mark.parametrize(
    ("stdout", "code", "stderr", "status", "score"),
    [
        ("", 0, "", "pass", 1.0),
        ("looks fine", 0, "", "pass", 1.0),
        ("0", 0, "", "pass", 1.0),  # a bare number is text: the exit code decides
        ("looks wrong", 1, "", "fail", 0.0),
        ('said: {"pass": true}', 1, "", "fail", 0.0),
        ('{"pass": true}', 1, "", "error", 0.0),
        ("[1]", 2, "", "error", 0.0),
        ("", 3, "cannot grade", "error", 0.0),
        ('{"pass": false, "reason": "no"}', 0, "", "fail", 0.0),
        ('  {"pass": true}\n', 0, "", "pass", 1.0),
        ('{"score": 0.9}', 0, "", "pass", 0.9),
        ('{"score": 0.5}', 0, "", "fail", 0.5),
        ('{"pass": true, "score": 0.5}', 0, "", "fail", 0.5),
        ('{"checks": [{"text": "a", "pass": true}, {"pass": false}]}', 0, "", "fail", 0.5),
        ('{"checks": [{"text": "a", "pass": false}]}', 0, "", "fail", 0.0),
        ('{"assertions": [{"text": "a", "passed": true}]}', 0, "", "pass", 1.0),
        ('{"reason": "nothing decided"}', 0, "", "error", 0.0),
        ('{"pass": "yes"}', 0, "", "error", 0.0),
        ('{"pass": false, "pass": true}', 0, "", "error", 0.0),
        ('the agent said {"pass": true}', 0, "", "error", 0.0),
        ('{"pass": false}\n{"pass": true}', 0, "", "error", 0.0),
        ('reading\n{\n "score": 0\n}', 0, "", "error", 0.0),
        ('[{"pass": true}]', 0, "", "error", 0.0),
        ('{"pass": true, "score": NaN}', 0, "", "error", 0.0),
        ('{"pass": true, "score": 1' + "0" * 400 + '}', 0, "", "error", 0.0),
    ],
)  # fmt: skip
def test_each_answer_is_read_from_one_channel(
    stdout: str, code: int, stderr: str, status: str, score: float
) -> None:
    found = read(stdout, code, stderr)
    assert found[:2] == (status, score), found


def test_an_ambiguous_answer_says_where_and_what_to_do() -> None:
    status, _, message = read('the agent said:\nok\n{"pass": true, "score": 1}')
    assert status == "error"
    assert 'holds "pass" on line 3' in message
    assert "logs on stderr" in message


def test_a_score_just_below_its_threshold_is_never_written_at_it() -> None:
    grader = GRADER.model_copy(update={"threshold": 0.9})
    answer = {"stdout": '{"score": 0.8999999}', "stderr": "", "exit": 0, "truncated": False}
    found = script_verdict(grader, answer)
    assert (found.status.value, found.message) == ("fail", "score 0.8999999, not ≥ 0.9")


def test_a_key_given_twice_is_quoted_cut_with_its_secrets_hidden() -> None:
    """A key of the script's JSON given twice is quoted in the error at 80 characters: it
    was cut with no mark and not hidden first, so a key holding the job's secret across the
    cut showed the secret's first 20 characters, which no form of the secret matches."""
    secret = "sk-proj-Q7xWm2Lk9PzR4tYb8NcVd1Hs"
    key = "x" * 60 + secret
    hide_before_cuts(Redactor([secret]))
    try:
        _, _, said = read(f'{{"{key}": 1, "{key}": 2}}')
        parsed = str(DuplicateKey(key))
    finally:
        hide_before_cuts(str)

    assert f"`{'x' * 60}***` twice" in said, said
    assert f"`{'x' * 60}***` is given twice" in parsed, parsed
    long = "y" * 100
    assert f"`{'y' * 79}…` twice" in read(f'{{"{long}": 1, "{long}": 2}}')[2]
