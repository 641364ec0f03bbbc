"""AgentV's rubric items as judge assertions: one criterion, one judge.

An item is a text, or a mapping with its criterion as `outcome` (or `description`), its
`weight` and `min_score`; `required` is what every evalward assertion already is. AgentV's
current `llm-rubric` grader lists them under `value`, and adds two shapes: an `operator`
(`correctness`: the answer states the outcome; `contradiction`: it does not contradict it) and
`score_ranges` (labels of the 0–10 scale the judge scores on, with the item's `id` as the
criterion). Each becomes the rubric text the judge reads; a key evalward would not honour is
refused at its line.
"""

from __future__ import annotations

from typing import Any

from evalward.resources.agentv_problem import AgentVProblem
from evalward.resources.yamlsource import PathKey

ITEM_KEYS = {
    "id", "outcome", "description", "weight", "min_score", "required", "operator",
    "score_ranges",
}  # fmt: skip
OPERATORS = {
    "correctness": "The answer states this, correctly: {}",
    "contradiction": "The answer does not contradict this: {}",
}


def rubric_values(value: Any, path: PathKey, weight: float) -> list[dict[str, Any]]:
    """An `llm-rubric`'s `value` (a text, or a list of items) as judge assertions."""
    if isinstance(value, str):
        return [rubric_item(value, path, weight)]
    if not isinstance(value, list) or not value:
        raise AgentVProblem(path, "expected a rubric text or a non-empty list of rubric items")
    return [rubric_item(item, (*path, index), weight) for index, item in enumerate(value)]


def rubric_item(item: Any, path: PathKey, weight: float) -> dict[str, Any]:
    if isinstance(item, str):
        if not item.strip():
            raise AgentVProblem(path, "a rubric item is empty")
        return {"type": "judge", "kind": "rubric", "rubric": item, "weight": weight}
    if not isinstance(item, dict):
        raise AgentVProblem(path, f"expected a rubric item (text or mapping); found {item!r}")
    for key in item:
        if key not in ITEM_KEYS:
            raise AgentVProblem(
                (*path, key), f"`{key}` of a rubric item is not read by evalward; remove it"
            )
    item_weight = item.get("weight", 1.0)
    if isinstance(item_weight, bool) or not isinstance(item_weight, int | float) or item_weight < 0:
        raise AgentVProblem((*path, "weight"), f"expected a number >= 0; found {item_weight!r}")
    judge: dict[str, Any] = {
        "type": "judge",
        "kind": "rubric",
        "rubric": _criterion(item, path),
        "weight": weight * float(item_weight),
    }
    if "min_score" in item:
        judge["minScore"] = item["min_score"]
    return judge


def _criterion(item: dict[str, Any], path: PathKey) -> str:
    outcome = item.get("outcome", item.get("description"))
    ranges = item.get("score_ranges")
    if ranges is not None:
        if not isinstance(ranges, dict) or not ranges:
            raise AgentVProblem((*path, "score_ranges"), "expected a mapping of score to label")
        name = outcome if isinstance(outcome, str) and outcome.strip() else item.get("id")
        if not isinstance(name, str) or not name.strip():
            raise AgentVProblem(path, "a rubric item with `score_ranges` needs its `id`")
        bands = "\n".join(f"- {score}: {label}" for score, label in ranges.items())
        return f"{name}, scored from 0 to 10 (a score of 10 is 1.0):\n{bands}"
    if not isinstance(outcome, str) or not outcome.strip():
        raise AgentVProblem(path, "a rubric item needs `outcome` (the criterion, as text)")
    operator = item.get("operator")
    if operator is None:
        return outcome
    if operator not in OPERATORS:
        raise AgentVProblem(
            (*path, "operator"),
            f"expected operator correctness or contradiction; found {operator!r}",
        )
    return OPERATORS[operator].format(outcome)
