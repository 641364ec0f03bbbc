"""Where a head run first parts from the base run of the same fixture, step by step.

A reviewer comparing two traces wants the first place the agent did something different: a
step of another type, another tool, or the same tool with other arguments. When the steps
match all the way, the first step whose text differs (a reworded answer, another tool output)
is the next best place to look.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from evalward.rundata.trace import Step, StepType, Trace


class DivergenceKind(StrEnum):
    steps = "steps"
    """A step of another type, tool or arguments, or one side has steps the other lacks."""
    text = "text"
    """The same steps, but a step's text (content or tool output) differs."""


@dataclass(frozen=True)
class Divergence:
    step: int
    """The 1-based index of the first differing step (the same index on both sides)."""
    kind: DivergenceKind


def _shape(step: Step) -> tuple[str, str | None, Any]:
    arguments = None if step.arguments is None else _canonical(step.arguments)
    return step.type.value, step.tool, arguments


def first_divergence(base: Trace, head: Trace) -> Divergence | None:
    """The first step at which `head` differs from `base`, or None when they are the same."""
    for position, (before, after) in enumerate(zip(base.steps, head.steps, strict=False)):
        if _shape(before) != _shape(after):
            return Divergence(position + 1, DivergenceKind.steps)
    if len(base.steps) != len(head.steps):  # one side goes on past the other's last step
        return Divergence(min(len(base.steps), len(head.steps)) + 1, DivergenceKind.steps)
    for position, (before, after) in enumerate(zip(base.steps, head.steps, strict=True)):
        if (before.content, before.output) != (after.content, after.output):
            return Divergence(position + 1, DivergenceKind.text)
    return None


def first_divergent_turn(base: Trace, head: Trace) -> int | None:
    """In a conversation, the first user turn on which `head` differs from `base` (the turn
    of their first differing step); None when they agree or hold no conversation."""
    found = first_divergence(base, head)
    if found is None:
        return None
    steps = {s.index: s.turn for s in [*base.steps, *head.steps] if s.turn is not None}
    if not steps:
        return None
    # the step's turn; past the end of one side, the turn the other had reached
    return steps.get(found.step, max(steps.values()))


ARGUMENTS_SHOWN = 8
"""At most this many differing arguments are named; the rest are counted."""
ARGUMENT_DEPTH = 4
"""How deep into nested objects the differing keys are looked for; below, a whole value."""
KEY_LIMIT = 200
"""An object with a longer key is named as a whole: a path holds no key longer than this."""


@dataclass(frozen=True)
class ArgumentDiff:
    """Where two calls of the same tool differ: each differing argument's path (its keys from
    the top; empty when the arguments as a whole are not an object on both sides), and how
    many more differ than are named."""

    paths: tuple[tuple[str, ...], ...]
    more: int = 0


def differing_arguments(before: Step, after: Step) -> ArgumentDiff | None:
    """The arguments in which two calls of one tool differ (`first_divergence`'s "the same
    tool with other arguments"), in key order; None unless both are calls of the same tool
    whose arguments differ. Only paths: the values stay in the steps, where the report's
    redaction finds a secret whole (a value cut short here could hide one from it)."""
    if not (
        before.type is after.type is StepType.tool_call
        and before.tool == after.tool
        and _canonical(before.arguments) != _canonical(after.arguments)
    ):
        return None
    paths: list[tuple[str, ...]] = []
    _differences(before.arguments, after.arguments, (), paths)
    return ArgumentDiff(tuple(paths[:ARGUMENTS_SHOWN]), max(len(paths) - ARGUMENTS_SHOWN, 0))


def _differences(
    before: Any, after: Any, path: tuple[str, ...], found: list[tuple[str, ...]]
) -> None:
    if (
        isinstance(before, dict)
        and isinstance(after, dict)
        and len(path) < ARGUMENT_DEPTH
        and all(len(str(key)) <= KEY_LIMIT for key in (*before, *after))
    ):
        for key in sorted({*before, *after}, key=str):
            if key not in before or key not in after:
                found.append((*path, str(key)))
            elif _canonical(before[key]) != _canonical(after[key]):
                _differences(before[key], after[key], (*path, str(key)), found)
        return
    found.append(path)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)
