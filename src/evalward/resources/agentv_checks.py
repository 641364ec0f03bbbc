"""AgentV's structural checks as evalward assertions: `is-json`, and the promptfoo-style
`trajectory:tool-sequence` and `trajectory:tool-args-match` of its current format."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalward.resources.yamlsource import PathKey

CHECKS = ("is-json", "trajectory:tool-sequence", "trajectory:tool-args-match")
_SEQUENCE_MODES = {"in_order": None, "exact": "strict", "any_order": "superset"}

Problem = Callable[[PathKey, str], Exception]


def check_assertion(
    kind: str, item: dict[str, Any], path: PathKey, base: dict[str, Any], problem: Problem
) -> dict[str, Any]:
    if kind == "is-json":
        return {**base, "type": "jsonSchema", "schema": {}}
    value = item.get("value")
    if not isinstance(value, dict):
        raise problem((*path, "value"), f"expected a mapping; found {value!r}")
    if kind == "trajectory:tool-sequence":
        return _sequence(value, (*path, "value"), base, problem)
    name = value.get("name", value.get("tool"))
    if not isinstance(name, str) or not name:
        raise problem((*path, "value", "name"), "expected the tool's name")
    args = value.get("args", {})
    if not isinstance(args, dict):
        raise problem((*path, "value", "args"), f"expected a mapping; found {args!r}")
    mode = value.get("mode", "partial")
    if mode not in ("partial", "exact"):
        raise problem((*path, "value", "mode"), f"expected partial or exact; found {mode!r}")
    return {**base, "type": "toolArgs", "tool": name, "args": args, "mode": mode}


def _sequence(
    value: dict[str, Any], path: PathKey, base: dict[str, Any], problem: Problem
) -> dict[str, Any]:
    mode = value.get("mode", "in_order")
    if mode not in _SEQUENCE_MODES:
        raise problem(
            (*path, "mode"), f"expected one of {', '.join(_SEQUENCE_MODES)}; found {mode!r}"
        )
    steps = value.get("steps")
    if not isinstance(steps, list) or not steps:
        raise problem((*path, "steps"), "expected a list of tool names")
    tools = []
    for index, step in enumerate(steps):
        name = step.get("tool", step.get("name")) if isinstance(step, dict) else step
        if not isinstance(name, str) or not name:
            raise problem((*path, "steps", index), "expected a tool's name")
        if isinstance(step, dict) and set(step) - {"tool", "name"}:
            extra = sorted(set(step) - {"tool", "name"})[0]
            raise problem((*path, "steps", index, extra), f"`{extra}` of a step is not checked")
        tools.append(name)
    trajectory = _SEQUENCE_MODES[mode]
    if trajectory is None:
        return {**base, "type": "toolSequence", "tools": tools}
    return {**base, "type": "trajectory", "tools": tools, "mode": trajectory}
