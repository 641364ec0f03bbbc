"""One trace step as report.html's detail bundle holds it: short keys, only what is set."""

from __future__ import annotations

from typing import Any

from evalward.rundata.trace import Step


def step_record(step: Step) -> dict[str, Any]:
    record: dict[str, Any] = {"n": step.index, "t": step.type.value}
    if step.content:
        record["c"] = step.content
    if step.tool:
        record["tool"] = step.tool
    if step.arguments is not None:
        record["args"] = step.arguments
    if step.output is not None:
        record["out"] = step.output
    if step.is_error:
        record["err"] = True
    if round(step.duration_ms, 1):
        record["ms"] = round(step.duration_ms, 1)
    if step.usage is not None:
        record["u"] = [step.usage.input_tokens, step.usage.output_tokens, step.usage.cost_usd]
    if step.model:
        record["model"] = step.model
    if step.source:
        record["src"] = step.source
    if step.via:
        record["via"] = step.via
    if step.cached:
        record["cached"] = True
    if step.turn is not None:
        record["tn"] = step.turn
    return record
