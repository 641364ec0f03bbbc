"""An output transform (resources/checks/code_source.py, `OutputTransform`): the function whose
result the checks read instead of the agent's final output (promptfoo's `transform`).

It runs as a code scorer runs, bounded and confined (scoring/code/code_scorer.py). Its result comes
back through the harness's own channel — the one JSON document the harness writes on the
stdout it started with — never from text the agent's output holds, so an output cannot choose
what its checks read. A transform that fails, hangs, or returns nothing (null) makes every
check it feeds an `error` that says why, never a pass.

What the checks read afterwards: a string as it is, any other value as its compact JSON text
(as promptfoo's checks read it); a code scorer gets the value itself as `output`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from evalward.errors import ScorerFailed, TransformError
from evalward.resources.checks.code_scorer import CodeAssertion
from evalward.resources.checks.code_source import CodeSource, OutputTransform
from evalward.resources.models import EvalFixtureSpec
from evalward.rundata.trace import Step, StepType, Trace
from evalward.runtime.agents.inputs import input_messages, input_text
from evalward.scoring.code.code_scorer import CodeScorers


@dataclass(frozen=True)
class Transformed:
    """The run as the checks read it after a transform: the trace whose final message is the
    transform's result (as text), and that result itself."""

    trace: Trace
    value: Any


async def transform_output(
    transform: OutputTransform,
    read: Transformed,
    spec: EvalFixtureSpec,
    scorers: CodeScorers | None,
) -> Transformed:
    """`read` after `transform`; TransformError when it gives nothing."""
    if scorers is None:
        raise TransformError("transforms are not run here")
    fields = {name: getattr(transform, name) for name in CodeSource.model_fields}
    if transform.file is not None and ":" not in transform.file and transform.function:
        fields["file"] = f"{transform.file}:{transform.function}"
    context = _context(spec)
    try:
        value = await scorers.value(CodeAssertion(type="code", **fields), (read.value, context))
    except ScorerFailed as exc:
        raise TransformError(f"the transform failed: {exc}") from None
    if value is None:
        raise TransformError("the transform returned nothing (null); it must return a value")
    return Transformed(with_final_output(read.trace, as_text(value)), value)


def as_text(value: Any) -> str:
    """What a text check reads of a value: a string as it is, else its compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def with_final_output(trace: Trace, text: str) -> Trace:
    """A copy of `trace` whose final message is `text` (the original is left as it is)."""
    final = trace.final_step
    if final is None:
        steps = [*trace.steps, Step(index=len(trace.steps) + 1, type=StepType.final, content=text)]
    else:
        steps = [s.model_copy(update={"content": text}) if s is final else s for s in trace.steps]
    return trace.model_copy(update={"steps": steps})


def _context(spec: EvalFixtureSpec) -> dict[str, Any]:
    """promptfoo's transform context (`vars`, `prompt`) and evalward's `input`, `expected`."""
    said = input_text(input_messages(spec.input)) if spec.input is not None else ""
    variables = {**(spec.input.payload if spec.input is not None else {}), **spec.vars}
    return {
        "vars": variables,
        "prompt": {"raw": said, "label": said},
        "input": said,
        "expected": spec.reference,
    }
