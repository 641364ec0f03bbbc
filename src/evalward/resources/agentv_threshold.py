"""An AgentV test's `threshold` as its fixture's `passThreshold`.

AgentV passes a test when its weighted score reaches the test's `threshold`; evalward passes a
fixture when every assertion passes, unless the fixture sets `passThreshold`
(scoring/run_verdict.py). A test's `threshold` becomes it. AgentV's `required` graders
block a test whatever its score, which a fixture's `passThreshold` does not: a threshold
beside a required grader is refused at its line rather than loosened.
"""

from __future__ import annotations

from typing import Any

from evalward.resources.agentv_graders import AgentVProblem
from evalward.resources.yamlsource import PathKey

GRADER_KEYS = ("assert", "assertions", "evaluators")


def pass_threshold(case: dict[str, Any], path: PathKey, suite_graders: list[Any]) -> float | None:
    """The test's `passThreshold`, if it sets a threshold."""
    threshold = case.get("threshold")
    if threshold is None:
        return None
    at: PathKey = (*path, "threshold")
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise AgentVProblem(at, f"a threshold is a number from 0 to 1; found {threshold!r}")
    if not 0 <= threshold <= 1:
        raise AgentVProblem(at, f"a threshold is a number from 0 to 1; found {threshold!r}")
    graders = [g for key in GRADER_KEYS for g in case.get(key) or []] + suite_graders
    if any(_required(g) for g in graders):
        raise AgentVProblem(
            at,
            "a test threshold beside a `required` grader: AgentV fails the test when the "
            "required grader fails, whatever the score, and evalward's `passThreshold` would "
            "pass it on the score; drop `required` (the threshold decides) or the threshold "
            "(every grader must pass)",
        )
    return float(threshold)


def _required(grader: Any) -> bool:
    if not isinstance(grader, dict):
        return False
    if grader.get("required") is True:
        return True
    members = grader.get("assert", grader.get("assertions"))
    return isinstance(members, list) and any(_required(m) for m in members)
