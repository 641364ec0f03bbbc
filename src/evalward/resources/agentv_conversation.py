"""AgentV's multi-turn tests (`mode: conversation`, `turns`) as evalward conversations.

Each of AgentV's turns is a scripted user turn: its `input` is what the user says, its
`assert` list the turn's own assertions (each read against that turn alone), its
`expected_output` a line of the judge's reference. The test's `input` may hold system
messages only: they become the conversation's `system` instructions (the user's messages are
the turns). The test's own `assert` list reads the whole conversation.

AgentV scores a conversation by its turns' scores (`aggregation`: mean, min or max) and may
stop at a failing turn (`on_turn_failure: stop`); evalward requires every assertion of every
turn to pass, as it requires every AgentV grader, so both keys are read and neither loosens
that. A key of a turn evalward does not read is refused at its line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalward.resources.agentv_graders import GraderContext, grader_assertions
from evalward.resources.agentv_problem import AgentVProblem, AgentVProblems
from evalward.resources.yamlsource import PathKey

ReadMessages = Callable[[Any, PathKey, str], list[dict[str, str]]]
"""A value (text or message list) at a path, as `{role, content}` messages of a role."""

TURN_KEYS = ("input", "assert", "expected_output")
CHOICES = {"mode": ("conversation",), "aggregation": ("mean", "min", "max"),
           "on_turn_failure": ("continue", "stop")}  # fmt: skip


def is_conversation(case: dict[str, Any]) -> bool:
    return case.get("mode") == "conversation" or "turns" in case


def conversation(
    case: dict[str, Any],
    path: PathKey,
    opening: list[dict[str, str]],
    messages: ReadMessages,
    context: GraderContext,
) -> tuple[dict[str, Any], str | None]:
    """The fixture's `conversation` and the reference its turns' expected outputs make."""
    for key, allowed in CHOICES.items():
        if key in case and case[key] not in allowed:
            raise AgentVProblem(
                (*path, key), f"expected {' or '.join(allowed)}; found {case[key]!r}"
            )
    spoken = [m for m in opening if m["role"] != "system"]
    if spoken:
        raise AgentVProblem(
            (*path, "input"),
            "a conversation's user messages are its `turns`; its `input` may hold system "
            f"messages only (found a {spoken[0]['role']} message)",
        )
    turns = case.get("turns")
    if not isinstance(turns, list) or not turns:
        raise AgentVProblem((*path, "turns"), "a conversation needs its `turns`: a list")
    made: dict[str, Any] = {"turns": [], "maxTurns": max(len(turns), 1)}
    system = "\n\n".join(m["content"] for m in opening if m["content"].strip())
    if system:
        made["system"] = system
    expected: list[str] = []
    problems: list[AgentVProblem] = []
    for index, turn in enumerate(turns):
        at: PathKey = (*path, "turns", index)
        try:
            made["turns"].append(_turn(turn, at, messages, context))
        except AgentVProblems as found:
            problems += found.problems
            continue
        except AgentVProblem as problem:
            problems.append(problem)
            continue
        if turn.get("expected_output") is not None:
            said = messages(turn["expected_output"], (*at, "expected_output"), "assistant")
            expected.append(f"Turn {index + 1}: " + "\n".join(m["content"] for m in said))
    if problems:
        raise AgentVProblems(problems)
    return made, "\n\n".join(expected) or None


def _turn(
    turn: Any, path: PathKey, messages: ReadMessages, context: GraderContext
) -> dict[str, Any]:
    if not isinstance(turn, dict) or "input" not in turn:
        raise AgentVProblem(path, "expected a turn: `{input, assert}`")
    for key in turn:
        if key not in TURN_KEYS:
            raise AgentVProblem((*path, key), f"`{key}` of a turn is not read by evalward")
    said = messages(turn["input"], (*path, "input"), "user")
    if any(m["role"] != "user" for m in said):
        raise AgentVProblem((*path, "input"), "a turn's input is what the user says")
    checks = turn.get("assert") or []
    if not isinstance(checks, list):
        raise AgentVProblem((*path, "assert"), "expected a list of assertions")
    assertions: list[dict[str, Any]] = []
    problems: list[AgentVProblem] = []
    for index, item in enumerate(checks):
        try:
            assertions += grader_assertions(item, (*path, "assert", index), context)
        except AgentVProblem as problem:
            problems.append(problem)
    if problems:
        raise AgentVProblems(problems)
    return {"user": "\n\n".join(m["content"] for m in said), "assertions": assertions}
