"""AgentV's current suite format (`providers`, `prompts`, tests with `vars` and `assert`):
each test rewritten in the older shape importers/agentv/convert.py converts, once per provider
(docs/resources.md, "AgentV files"). Nothing of a test is ignored: a key evalward does not
read is refused at its line, as is a prompt it cannot render.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from evalward.errors import AgentVProblem
from evalward.resources.reading.problems import did_you_mean
from evalward.resources.reading.yamlsource import PathKey

CURRENT_KEYS = ("providers", "prompts", "targets")
CASE_KEYS = {
    "id", "description", "criteria", "expected_outcome", "input", "input_messages",
    "expected_output", "expected_messages", "execution", "assertions", "evaluators", "rubrics",
    "metadata", "sidecar", "assert", "vars", "conversation_id", "note", "tags", "threshold",
    "mode", "turns", "aggregation", "on_turn_failure",
}  # fmt: skip
"""What a test may hold; anything else is refused rather than silently not checked."""
IDENTITY = re.compile(r"^\s*\{\{\s*input\s*\}\}\s*$")
_VAR = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


@dataclass
class SuiteShape:
    """What the current format says for every test of a suite."""

    providers: list[str] = field(default_factory=list)
    prompt: str | None = None
    """The one prompt template (None: the input as it is)."""


def is_current(data: dict[str, Any]) -> bool:
    """A suite in AgentV's current format (`providers`, `prompts`, `vars`, `assert`)."""
    if any(key in data for key in CURRENT_KEYS):
        return True
    tests = data.get("tests")
    return isinstance(tests, list) and any(
        isinstance(t, dict) and ("vars" in t or "assert" in t) for t in tests
    )


def suite_shape(data: dict[str, Any], problems: list[AgentVProblem]) -> SuiteShape:
    shape = SuiteShape()
    key = "providers" if "providers" in data else "targets"
    providers = data.get(key)
    for index, provider in enumerate(providers if isinstance(providers, list) else []):
        name = provider.get("id", provider.get("name")) if isinstance(provider, dict) else provider
        if not isinstance(name, str) or not name.strip():
            problems.append(AgentVProblem((key, index), "expected a provider's name"))
            continue
        shape.providers.append(name.strip())
    if providers is not None and not isinstance(providers, list):
        problems.append(AgentVProblem((key,), "expected a list of provider names"))
    prompts = data.get("prompts")
    if prompts is None:
        return shape
    if not isinstance(prompts, list) or not prompts or not all(isinstance(p, str) for p in prompts):
        problems.append(AgentVProblem(("prompts",), "expected a list of prompt templates"))
    elif len(prompts) > 1:
        problems.append(
            AgentVProblem(
                ("prompts", 1),
                "evalward runs one prompt per suite: put each further prompt in a suite of its own",
            )
        )
    elif not IDENTITY.match(prompts[0]):
        shape.prompt = prompts[0]
    return shape


def expand_tests(
    tests: list[Any], key: str, load: Callable[[str, PathKey], list[Any]]
) -> tuple[list[tuple[Any, PathKey]], list[AgentVProblem]]:
    """Inline tests, and the tests of each `file://` dataset in the list, in order."""
    out: list[tuple[Any, PathKey]] = []
    problems: list[AgentVProblem] = []
    for index, item in enumerate(tests):
        path: PathKey = (key, index)
        if not isinstance(item, str):
            out.append((item, path))
            continue
        reference = item.removeprefix("file://")
        if not reference.endswith((".yaml", ".yml", ".jsonl", ".json", ".csv")):
            problems.append(
                AgentVProblem(
                    path, f"{item!r}: evalward reads YAML, JSONL and CSV datasets, not this"
                )
            )
            continue
        try:
            out += [(case, path) for case in load(reference, path)]
        except AgentVProblem as problem:
            problems.append(problem)
    return out, problems


def check_case_keys(case: dict[str, Any], path: PathKey) -> None:
    """Refuse a test (of any generation) holding a key evalward does not read: a grader
    under a name it does not know would otherwise never run."""
    unknown = sorted(str(k) for k in case if k not in CASE_KEYS)
    if unknown:
        raise AgentVProblem((*path, unknown[0]), unread(unknown[0], "a test", CASE_KEYS))


def unread(key: str, holder: str, keys: Iterable[str]) -> str:
    """Why a key of `holder` (a test, a turn) is refused and what it may hold instead: the key
    it was likely meant for first, since a misspelt one (`asert`) is the likeliest."""
    return f"`{key}` is not read by evalward{did_you_mean(key, keys)}; {holder} holds " + ", ".join(
        sorted(keys)
    )


def current_case(
    case: dict[str, Any], path: PathKey, shape: SuiteShape
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One current-format test in the older shape, and its other vars (for code scorers)."""
    out = {k: v for k, v in case.items() if k not in ("vars", "conversation_id")}
    variables = case.get("vars") or {}
    if not isinstance(variables, dict):
        raise AgentVProblem((*path, "vars"), f"expected a mapping; found {variables!r}")
    variables = dict(variables)
    for name in ("input", "expected_output"):
        if name in variables:
            if name in out:
                raise AgentVProblem((*path, "vars", name), f"`{name}` is given twice")
            out[name] = variables.pop(name)
    if shape.prompt is not None:
        out["input"] = _render(shape.prompt, out.get("input"), variables, path)
    if not isinstance(case.get("assert") or [], list):
        raise AgentVProblem((*path, "assert"), "expected a list of assertions")
    return out, variables


def _render(template: str, given: Any, variables: dict[str, Any], path: PathKey) -> str:
    if given is not None and not isinstance(given, str):
        raise AgentVProblem(
            (*path, "vars", "input"),
            "the suite's prompt is a template, so `input` must be text to put in it (a "
            "message list goes with the prompt `{{ input }}`)",
        )
    values = {**variables, "input": given}

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if values.get(name) is None:
            raise AgentVProblem((*path, "vars"), f"the prompt needs `{name}`, which is not set")
        return str(values[name])

    return _VAR.sub(value, template)


def each_target(case: dict[str, Any], shape: SuiteShape) -> list[dict[str, Any]]:
    """The test once per provider (its id suffixed when there are several), or once."""
    if not shape.providers or (case.get("execution") or {}).get("target"):
        return [case]
    many = len(shape.providers) > 1
    return [
        {**case, "id": f"{case.get('id')}-{provider}" if many else case.get("id"),
         "execution": {**(case.get("execution") or {}), "target": provider}}
        for provider in shape.providers
    ]  # fmt: skip
