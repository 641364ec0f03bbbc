"""What a code scorer is given, and what its answer means (scoring/code_scorer.py runs it).

A `function` scorer's return value is read as promptfoo reads a `javascript` / `python`
assertion's: a bool (pass or fail), a number (the score; it passes at `threshold` or above,
without one above 0), or a mapping `{pass, score, reason}`. A `script` scorer (AgentV's
script graders) reads the run as JSON on stdin and answers on stdout: that JSON object
(`{pass, score, reason, checks}`, or the older `{score, hits, misses, reasoning}`; a score
alone passes at `threshold`, else AgentV's 0.8), or plain text and its exit code (0: pass;
non-zero: fail, or an error when it wrote on stderr). Any other answer is an `error` that
says what came back, never a pass.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalward.resources.code_scorer import CodeAssertion
from evalward.rundata.results import Status

SCRIPT_THRESHOLD = 0.8
"""AgentV's: a script grader's score passes at 0.8 or above unless it says otherwise."""


@dataclass(frozen=True)
class ScorerCase:
    """What a scorer is given about one run."""

    output: str
    input: str
    expected: str | None
    vars: Mapping[str, Any]
    trace: Mapping[str, Any]


@dataclass(frozen=True)
class ScorerVerdict:
    status: Status
    score: float
    message: str


def verdict(assertion: CodeAssertion, value: Any) -> ScorerVerdict:
    """What the scorer returned, as promptfoo reads it; any other shape is an error."""
    threshold = assertion.threshold
    if isinstance(value, bool):
        return _decided(value, 1.0 if value else 0.0, "")
    if isinstance(value, int | float):
        return _from_score(float(value), threshold, "")
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
            reason = json.dumps(reason)[:500]
        if passed is None and score is None:
            return error_verdict("the scorer returned a mapping with neither `pass` nor `score`")
        if score is not None and not math.isfinite(score):
            return error_verdict(f"the scorer returned `score: {score}`, which is not a score")
        if passed is None:
            return _from_score(float(score), threshold, reason)  # type: ignore[arg-type]
        if score is None:
            return _decided(passed, 1.0 if passed else 0.0, reason)
        if threshold is not None and score < threshold:
            passed = False
            reason = reason or f"score {score:g} < threshold {threshold:g}"
        return _decided(passed, float(score), reason)
    return error_verdict(
        f"the scorer returned {_short(value)}; expected true/false, a number, or "
        "{pass, score, reason}"
    )


def _from_score(score: float, threshold: float | None, reason: str) -> ScorerVerdict:
    passed = score >= threshold if threshold is not None else score > 0
    bound = f"≥ {threshold:g}" if threshold is not None else "> 0"
    said = reason or (f"score {score:g} {bound}" if passed else f"score {score:g}, not {bound}")
    return _decided(passed, score, said)


def _decided(passed: bool, score: float, reason: str) -> ScorerVerdict:
    clamped = min(1.0, max(0.0, score))
    note = "" if clamped == score else f" (score {score:g} counted as {clamped:g})"
    message = (reason or ("the scorer passed it" if passed else "the scorer failed it")) + note
    return ScorerVerdict(Status.passed if passed else Status.failed, clamped, message)


def error_verdict(message: str) -> ScorerVerdict:
    return ScorerVerdict(Status.error, 0.0, message)


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if value is not None else "null"
    return text if len(text) <= 80 else text[:79] + "…"


def script_verdict(assertion: CodeAssertion, value: Any) -> ScorerVerdict:
    """A script grader's answer: JSON on stdout, else its text and exit code."""
    if not isinstance(value, dict) or not isinstance(value.get("exit"), int):
        return error_verdict("the scorer's answer is not the harness's")
    if value.get("truncated"):
        return error_verdict("the script wrote more than 256 KiB on its stdout")
    out, err, code = (
        str(value.get("stdout", "")).strip(),
        str(value.get("stderr", "")),
        value["exit"],
    )
    found = _json_object(out)
    if found is not None:
        if "pass" not in found and "score" not in found:
            return error_verdict("the script's JSON has neither `pass` nor `score`")
        reason = found.get("reason") or found.get("reasoning") or _checks(found)
        threshold = assertion.threshold if assertion.threshold is not None else SCRIPT_THRESHOLD
        answer = {k: found[k] for k in ("pass", "score") if k in found}
        with_threshold = assertion.model_copy(update={"threshold": threshold})
        return verdict(
            with_threshold, {**answer, "reason": reason if isinstance(reason, str) else ""}
        )
    if code == 0:
        return _decided(True, 1.0, out[:500] or "the script exited 0")
    if err.strip():
        said = err.strip()
        said = said if len(said) <= 600 else f"{said[:300]} … {said[-300:]}"
        return error_verdict(f"the script failed (exit code {code}): {said}")
    return _decided(False, 0.0, out[:500] or f"the script exited {code}")


def _json_object(text: str) -> dict[str, Any] | None:
    for candidate in (text, text.splitlines()[-1] if text else ""):
        try:
            found = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(found, dict):
            return found
    return None


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
    return "; ".join(said)[:1000]


def script_stdin(case: ScorerCase) -> dict[str, Any]:
    """The run as AgentV's script graders read it (snake_case; the older names too)."""
    steps = case.trace.get("steps", [])
    calls: dict[str, int] = {}
    for step in steps:
        if step.get("type") == "tool_call" and step.get("tool"):
            calls[step["tool"]] = calls.get(step["tool"], 0) + 1
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
            "tool_calls": calls,
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
