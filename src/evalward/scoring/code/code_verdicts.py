"""What a code scorer is given, and what its answer means (scoring/code/code_scorer.py runs it).

A `function` scorer's return value is read as promptfoo reads a `javascript` / `python`
assertion's: a bool (pass or fail), a number (the score; it passes at `threshold` or above,
without one above 0), or a mapping `{pass, score, reason}`. A `script` scorer (AgentV's
script graders) reads the run as JSON on stdin and answers through one channel the agent's
words cannot reach, whatever the script logs of them: its exit code, or its whole stdout as
one JSON verdict (docs/assertions.md, "Where a verdict comes from", gives the rules; a stdout
that holds a verdict's key beside other text is an error). So a reply that ends with
`{"pass": true}` passes no run the grader fails. Any other answer is an `error` that says
what came back, never a pass.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalward.errors import DuplicateKey
from evalward.resources.checks.code_scorer import CodeAssertion
from evalward.rundata.results import Status
from evalward.scoring.judges.panel import JudgeOutcome
from evalward.text import jsontext
from evalward.text.cuts import cap_chars, hidden
from evalward.text.numbers import side_text

SCRIPT_THRESHOLD = 0.8
"""AgentV's: a script grader's score passes at 0.8 or above unless it says otherwise."""


@dataclass(frozen=True)
class ScorerCase:
    """What a scorer is given about one run (`output`: its final message, or what a
    transform made of it)."""

    output: Any
    input: str
    expected: str | None
    vars: Mapping[str, Any]
    trace: Mapping[str, Any]


def verdict(assertion: CodeAssertion, value: Any) -> JudgeOutcome:
    """What the scorer returned, as promptfoo reads it; any other shape is an error."""
    threshold = assertion.threshold
    if isinstance(value, bool):
        return _decided(value, 1.0 if value else 0.0, "")
    if isinstance(value, int | float):
        number = finite(value)
        if number is None:
            return error_verdict(f"the scorer returned {_short(value)}, which is not a score")
        return _from_score(number, threshold, "")
    if isinstance(value, dict):
        passed = value.get("pass", value.get("pass_"))
        score = value.get("score")
        reason = value.get("reason", "")
        if passed is not None and not isinstance(passed, bool):
            return error_verdict(
                f"the scorer returned `pass: {_short(passed)}`; expected true or false"
            )
        if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
            return error_verdict(f"the scorer returned `score: {_short(score)}`; expected a number")
        if not isinstance(reason, str):
            reason = cap_chars(json.dumps(reason), 500)
        if passed is None and score is None:
            return error_verdict("the scorer returned a mapping with neither `pass` nor `score`")
        if score is not None:
            number = finite(score)
            if number is None:
                return error_verdict(
                    f"the scorer returned `score: {_short(score)}`, which is not a score"
                )
            score = number
        if passed is None:
            return _from_score(score, threshold, reason)  # type: ignore[arg-type]
        if score is None:
            return _decided(passed, 1.0 if passed else 0.0, reason)
        if threshold is not None and score < threshold:
            passed = False
            reason = reason or f"score {side_text(score, threshold, 'g')} < threshold {threshold:g}"
        return _decided(passed, float(score), reason)
    return error_verdict(
        f"the scorer returned {_short(value)}; expected true/false, a number, or "
        "{pass, score, reason}"
    )


def finite(number: float) -> float | None:
    """`number` as a float, or None when it is none: NaN, an infinity, or an integer past a
    float's range (a scorer's `10 ** 400`, which would otherwise end the run)."""
    try:
        value = float(number)
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


def _from_score(score: float, threshold: float | None, reason: str) -> JudgeOutcome:
    passed = score >= threshold if threshold is not None else score > 0
    bound = f"≥ {threshold:g}" if threshold is not None else "> 0"
    shown = side_text(score, threshold, "g") if threshold is not None else f"{score:g}"
    said = reason or (f"score {shown} {bound}" if passed else f"score {shown}, not {bound}")
    return _decided(passed, score, said)


def _decided(passed: bool, score: float, reason: str) -> JudgeOutcome:
    clamped = min(1.0, max(0.0, score))
    note = "" if clamped == score else f" (score {score:g} counted as {clamped:g})"
    message = (reason or ("the scorer passed it" if passed else "the scorer failed it")) + note
    return JudgeOutcome(Status.passed if passed else Status.failed, clamped, message)


def error_verdict(message: str) -> JudgeOutcome:
    return JudgeOutcome(Status.error, 0.0, message)


def _short(value: Any) -> str:
    return cap_chars(json.dumps(value, ensure_ascii=False), 80)


def script_verdict(assertion: CodeAssertion, value: Any) -> JudgeOutcome:
    """A script grader's answer, from its own channel only (see the module's docstring):
    its exit code, or its whole stdout as one JSON object; what could be read either way
    is an error, never a pass."""
    if not isinstance(value, dict) or not isinstance(value.get("exit"), int):
        return error_verdict("the scorer's answer is not the harness's")
    if value.get("truncated"):
        return error_verdict("the script wrote more than 256 KiB on its stdout")
    out, err, code = (
        str(value.get("stdout", "")).strip(),
        str(value.get("stderr", "")),
        value["exit"],
    )
    if code != 0:
        return _failed_exit(out, err, code)
    try:
        found = jsontext.loads(out, max_depth=jsontext.AGENT_DEPTH, unique_keys=True)
    except DuplicateKey as exc:
        return error_verdict(
            f"the script's JSON verdict is ambiguous: it gives `{cap_chars(exc.key, 80)}` twice"
        )
    except ValueError:
        found = None
    if isinstance(found, dict):
        return _json_verdict(assertion, found)
    beside = _VERDICT_KEY.search(out)
    if beside is not None:
        line = out.count("\n", 0, beside.start()) + 1
        return error_verdict(
            f"the script exited 0, but its stdout is not one JSON document and holds "
            f"{beside[0].rstrip(': ')} on line {line}: it cannot be told whether that is "
            "its verdict or text it printed (such as the agent's reply). A JSON grader "
            "prints its verdict alone on stdout (its logs on stderr); an exit-code grader "
            "prints no verdict"
        )
    return _decided(True, 1.0, cap_chars(out, 500) or "the script exited 0")


_VERDICT_KEY = re.compile(r'"(?:pass|score|checks|assertions)"\s*:')
"""A key of a JSON verdict (AgentV's `script` and `code-grader` shapes)."""


def _failed_exit(out: str, err: str, code: int) -> JudgeOutcome:
    """A non-zero exit fails the run, whatever the script printed: with a stdout that is
    (or begins as) JSON, or with something on stderr, it is an error (AgentV's rule)."""
    if out.startswith(("{", "[")):
        return error_verdict(
            f"the script exited {code} with JSON on its stdout; a JSON grader gives its "
            "verdict with exit code 0, an exit-code grader prints no JSON verdict"
        )
    if err.strip():
        said = hidden(err.strip())  # before either cut
        said = said if len(said) <= 600 else f"{said[:300]}… …{said[-300:]}"
        return error_verdict(f"the script failed (exit code {code}): {said}")
    return _decided(False, 0.0, cap_chars(out, 500) or f"the script exited {code}")


def _json_verdict(assertion: CodeAssertion, found: dict[str, Any]) -> JudgeOutcome:
    """A verdict in AgentV's shapes: `{pass, score, reason, checks}` (the `script` grader),
    `{score, assertions}` (`code-grader`) or `{score, hits, misses, reasoning}` (older).
    Without `score`, the checks' mean (each its own `score`, else 1 for a pass) or the share
    of `assertions` passed; without `pass`, the score against the threshold."""
    score = found.get("score")
    if score is None:
        score = _share(found.get("checks"), "pass")
    if score is None:
        score = _share(found.get("assertions"), "passed")
    if "pass" not in found and score is None:
        return error_verdict(
            "the script's JSON has neither `pass` nor `score` (nor `checks` or `assertions`)"
        )
    reason = found.get("reason") or found.get("reasoning") or _checks(found)
    threshold = assertion.threshold if assertion.threshold is not None else SCRIPT_THRESHOLD
    answer = {"score": score} if score is not None else {}
    if "pass" in found:
        answer["pass"] = found["pass"]
    with_threshold = assertion.model_copy(update={"threshold": threshold})
    return verdict(with_threshold, {**answer, "reason": reason if isinstance(reason, str) else ""})


def _share(items: Any, key: str) -> float | None:
    """The mean of a list of per-aspect results (each its `score`, else 1 when `key` is
    true); None for no list or an empty one."""
    if not isinstance(items, list):
        return None
    scores: list[float] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        own = item.get("score")
        number = finite(own) if isinstance(own, int | float) and not isinstance(own, bool) else None
        if number is not None:
            scores.append(min(1.0, max(0.0, number)))
        else:
            scores.append(1.0 if item.get(key) is True else 0.0)
    return sum(scores) / len(scores) if scores else None


def _checks(found: Mapping[str, Any]) -> str:
    """A reason from the per-aspect results (`checks`, `assertions`, `hits` / `misses`)."""
    said: list[str] = []
    for key in ("checks", "assertions"):
        for check in found.get(key) or []:
            if isinstance(check, dict) and isinstance(check.get("text"), str):
                ok = check.get("pass", check.get("passed"))
                said.append(("✓ " if ok else "✗ ") + check["text"])
    said += [f"✓ {hit}" for hit in found.get("hits") or [] if isinstance(hit, str)]
    said += [f"✗ {miss}" for miss in found.get("misses") or [] if isinstance(miss, str)]
    return cap_chars("; ".join(said), 1000)


def script_stdin(case: ScorerCase) -> dict[str, Any]:
    """The run as AgentV's script graders read it (snake_case; the older names too)."""
    steps = case.trace.get("steps", [])
    calls = Counter(s["tool"] for s in steps if s.get("type") == "tool_call" and s.get("tool"))
    expected = (
        [{"role": "assistant", "content": case.expected}] if case.expected is not None else []
    )
    usage = case.trace.get("usage") or {}
    return {
        "input": [{"role": "user", "content": case.input}],
        "question": case.input,
        "output": case.output,
        "answer": case.output,
        "candidate_answer": case.output,
        "expected_output": expected,
        "reference_answer": case.expected,
        "messages": [{"role": "assistant", "content": case.output}],
        "trace_summary": {
            "event_count": len(steps),
            "tool_calls": dict(calls),
            "error_count": sum(step.get("type") == "error" for step in steps),
            "llm_call_count": sum(step.get("type") in ("assistant", "final") for step in steps),
        },
        "token_usage": {
            "input": usage.get("input_tokens", 0),
            "output": usage.get("output_tokens", 0),
        },
        "cost_usd": usage.get("cost_usd"),
        "duration_ms": case.trace.get("duration_ms"),
        "vars": dict(case.vars),
        "trace": dict(case.trace),
    }
