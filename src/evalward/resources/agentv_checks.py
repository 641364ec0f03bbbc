"""AgentV's structural checks as evalward assertions: `is-json`, and the promptfoo-style
`trajectory:tool-used`, `trajectory:tool-sequence` and `trajectory:tool-args-match` of its
current format (`not-trajectory:tool-used` too: the tools must not be called)."""

from __future__ import annotations

from typing import Any

from evalward.resources.agentv_problem import AgentVProblem
from evalward.resources.yamlsource import PathKey

CHECKS = (
    "is-json",
    "trajectory:tool-used",
    "not-trajectory:tool-used",
    "trajectory:tool-sequence",
    "trajectory:tool-args-match",
)
_SEQUENCE_MODES = {"in_order": None, "exact": "strict", "any_order": "superset"}


def check_assertion(
    kind: str, item: dict[str, Any], path: PathKey, base: dict[str, Any]
) -> list[dict[str, Any]]:
    if kind == "is-json":
        return [{**base, "type": "jsonSchema", "schema": {}}]
    value = item.get("value")
    if kind.endswith("trajectory:tool-used"):
        return _used(value, (*path, "value"), base, kind.startswith("not-"))
    if not isinstance(value, dict):
        raise AgentVProblem((*path, "value"), f"expected a mapping; found {value!r}")
    if kind == "trajectory:tool-sequence":
        return [_sequence(value, (*path, "value"), base)]
    name = value.get("name", value.get("tool"))
    if not isinstance(name, str) or not name:
        raise AgentVProblem((*path, "value", "name"), "expected the tool's name")
    args = value.get("args", {})
    if not isinstance(args, dict):
        raise AgentVProblem((*path, "value", "args"), f"expected a mapping; found {args!r}")
    mode = value.get("mode", "partial")
    if mode not in ("partial", "exact"):
        raise AgentVProblem((*path, "value", "mode"), f"expected partial or exact; found {mode!r}")
    return [{**base, "type": "toolArgs", "tool": name, "args": args, "mode": mode}]


def _used(value: Any, path: PathKey, base: dict[str, Any], inverse: bool) -> list[dict[str, Any]]:
    """A tool (or each of a list) called at least `min` times: `toolCalled`, or a
    `toolSequence` naming it `min` times; with `not-`, none of them called."""
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        kind = "toolNotCalled" if inverse else "toolCalled"
        return [{**base, "type": kind, "tool": name} for name in value]
    if not isinstance(value, dict) or inverse:
        raise AgentVProblem(path, "expected a tool's name, a list of names, or {name, min}")
    for key in value:
        if key not in ("name", "min"):
            raise AgentVProblem((*path, key), f"`{key}` of trajectory:tool-used is not checked")
    name, least = value.get("name"), value.get("min", 1)
    if not isinstance(name, str) or not name:
        raise AgentVProblem((*path, "name"), "expected the tool's name")
    if isinstance(least, bool) or not isinstance(least, int) or not 1 <= least <= 100:
        raise AgentVProblem(
            (*path, "min"), f"expected a number of calls from 1 to 100; found {least!r}"
        )
    if least == 1:
        return [{**base, "type": "toolCalled", "tool": name}]
    return [{**base, "type": "toolSequence", "tools": [name] * least}]


def _sequence(value: dict[str, Any], path: PathKey, base: dict[str, Any]) -> dict[str, Any]:
    mode = value.get("mode", "in_order")
    if mode not in _SEQUENCE_MODES:
        raise AgentVProblem(
            (*path, "mode"), f"expected one of {', '.join(_SEQUENCE_MODES)}; found {mode!r}"
        )
    steps = value.get("steps")
    if not isinstance(steps, list) or not steps:
        raise AgentVProblem((*path, "steps"), "expected a list of tool names")
    tools = []
    for index, step in enumerate(steps):
        name = step.get("tool", step.get("name")) if isinstance(step, dict) else step
        if not isinstance(name, str) or not name:
            raise AgentVProblem((*path, "steps", index), "expected a tool's name")
        if isinstance(step, dict) and set(step) - {"tool", "name"}:
            extra = sorted(set(step) - {"tool", "name"})[0]
            raise AgentVProblem(
                (*path, "steps", index, extra), f"`{extra}` of a step is not checked"
            )
        tools.append(name)
    trajectory = _SEQUENCE_MODES[mode]
    if trajectory is None:
        return {**base, "type": "toolSequence", "tools": tools}
    return {**base, "type": "trajectory", "tools": tools, "mode": trajectory}
