"""AgentV graders (`assertions`, `evaluators`, `rubrics`) as evalward assertions, each
keeping AgentV's verdict (docs/resources.md, "AgentV files"). A grader type evalward cannot
evaluate is an error at load time, saying what to use instead (`REFUSED`), rather than a
check that silently never runs or fails at run time.

Script graders become code scorers with `protocol: script` (resources/checks/code_scorer.py): their
file is read with the eval file, from the same commit, so under `gate-config: base` a pull
request cannot choose the grader that grades it.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evalward.errors import AgentVProblem
from evalward.resources.common import is_number
from evalward.resources.reading.problems import did_you_mean
from evalward.resources.reading.yamlsource import PathKey

_STRUCTURAL_CHECKS = (
    "is-json",
    "trajectory:tool-used",
    "not-trajectory:tool-used",
    "trajectory:tool-sequence",
    "trajectory:tool-args-match",
)
"""AgentV's structural checks: `is-json`, and the promptfoo-style trajectory checks of its
current format (`not-trajectory:tool-used` too: the tools must not be called)."""
_SCRIPT_GRADERS = ("script", "code-grader", "code-judge", "code-evaluator", "script-grader")
"""AgentV's script-run graders, in the current and the older spellings (`code_judge`)."""
SUPPORTED_TYPES = (
    "contains",
    "icontains",
    "contains-any",
    "contains-all",
    "icontains-any",
    "icontains-all",
    "equals",
    "regex",
    "starts-with",
    "ends-with",
    "llm-grader",
    "rubrics",
    "latency",
    "cost",
    "token-usage",
    "tool-trajectory",
    "execution-metrics",
    "script",
    "assert-set",
    "similar",
    *_STRUCTURAL_CHECKS,
)
_TYPE_ALIASES = {"llm-judge": "llm-grader", "llm-rubric": "llm-grader", "rubric": "rubrics"}
REFUSED = {
    "composite": "list its members directly in the test's `assertions`, each with its "
    "`weight`: a test's assertions already combine as a weighted mean, and the test passes "
    "only when every one passes",
}
"""Grader types refused at load time, with what to use instead."""


@dataclass
class GraderContext:
    """What a test's graders may refer to: its criteria, its expected output, its files."""

    criteria: str | None
    reference: str | None
    read: Callable[[str, PathKey], str]
    """A file reference's text, relative to the eval file (or an AgentVProblem)."""
    locate: Callable[[str, PathKey], str]
    """A file reference's repository path, relative to the eval file (or an AgentVProblem)."""
    criteria_used: bool = False
    """A grader took the criteria: they are not added again as a rubric of their own."""


def grader_assertions(item: Any, path: PathKey, ctx: GraderContext) -> list[dict[str, Any]]:
    """One AgentV grader (assertion or evaluator) as evalward assertions."""
    if isinstance(item, str):  # AgentV's shorthand: a plain string is a rubric criterion
        return [rubric_item(item, path, 1.0)]
    kind, base = _grader_head(item, path)
    negate = item.get("negate") is True
    if kind == "assert-set":
        return _assert_set(item, path, ctx, base)
    if kind in _TEXT_CHECKS:
        return [_text_check(kind, item, path, ctx, base, negate=negate)]
    if kind in ("contains-any", "contains-all", "icontains-any", "icontains-all"):
        check = _list_check(kind, item, path, base)
        return [{**check, "pattern": _negated(check["pattern"])} if negate else check]
    if negate:  # only the text checks above can be negated
        what = "a script grader" if kind in _SCRIPT_GRADERS else repr(kind)
        raise AgentVProblem(
            (*path, "negate"),
            f"`negate` is not supported on {what}: evalward negates the text checks ("
            + ", ".join(_TEXT_CHECKS)
            + " and the contains lists); remove it, and have the grader check the opposite",
        )
    if kind in _STRUCTURAL_CHECKS:
        return _structural_check(kind, item, path, base)
    if kind in _SCRIPT_GRADERS:
        return [_script_assertion(item, path, base, ctx.locate)]
    if kind == "llm-grader":
        return _llm_grader(item, path, ctx, base)
    if kind == "rubrics":
        criteria = item.get("criteria")
        if not isinstance(criteria, list) or not criteria:
            raise AgentVProblem((*path, "criteria"), "expected a non-empty list of criteria")
        ctx.criteria_used = True
        return [
            rubric_item(c, (*path, "criteria", i), base["weight"]) for i, c in enumerate(criteria)
        ]
    if kind == "similar":
        return [_similar(item, path, base)]
    if kind in ("latency", "cost", "token-usage"):
        return [_limit_check(kind, item, path, base)]
    if kind == "execution-metrics":
        return _execution_metrics(item, path, base)
    if kind == "tool-trajectory":
        return _trajectory(item, path, base)
    raise AgentVProblem(
        (*path, "type"),
        f"AgentV assertion type {item['type']!r} is not supported by evalward; supported: "
        + ", ".join(SUPPORTED_TYPES),
    )


def _grader_head(item: Any, path: PathKey) -> tuple[str, dict[str, Any]]:
    """A grader's kind (AgentV's aliases resolved) and what every assertion made of it
    carries: its weight and, from `metric`, its axis. Refuses a kind evalward has no
    equivalent of, and fields of the wrong shape."""
    if not isinstance(item, dict) or not isinstance(item.get("type"), str):
        raise AgentVProblem(path, "expected an assertion mapping with a `type`")
    kind = item["type"].lower().replace("_", "-")
    kind = _TYPE_ALIASES.get(kind, kind)
    if kind in REFUSED:
        raise AgentVProblem(
            (*path, "type"),
            f"AgentV grader type {item['type']!r} is not supported by evalward; {REFUSED[kind]}",
        )
    weight = item.get("weight", 1.0)
    if not is_number(weight) or weight < 0:
        raise AgentVProblem((*path, "weight"), f"expected a number >= 0; found {weight!r}")
    base: dict[str, Any] = {"weight": float(weight)}
    if isinstance(item.get("metric"), str):
        base["axis"] = item["metric"]
    if "required" in item and not isinstance(item["required"], bool):
        raise AgentVProblem(
            (*path, "required"), f"expected true or false; found {item['required']!r}"
        )
    return kind, base


def _limit_check(
    kind: str, item: dict[str, Any], path: PathKey, base: dict[str, Any]
) -> dict[str, Any]:
    """A latency, cost or token-usage grader as evalward's `latency` or `cost` assertion."""
    if kind == "latency":
        limit = item.get("threshold", item.get("max_ms"))
        if not isinstance(limit, int | float) or limit <= 0:
            raise AgentVProblem(path, "a latency check needs `threshold` (milliseconds, > 0)")
        return {**base, "type": "latency", "maxMs": limit}
    if kind == "cost":  # AgentV's `budget`: the run's cost in US dollars
        budget = item.get("budget", item.get("max_cost_usd"))
        if not is_number(budget) or budget < 0:
            raise AgentVProblem(path, "a cost check needs `budget` (US dollars, >= 0)")
        return {**base, "type": "cost", "maxUsd": budget}
    limit = item.get("max_total", item.get("max_total_tokens"))
    if not isinstance(limit, int) or limit < 0:
        raise AgentVProblem(path, "a token-usage check needs `max_total` (a token count)")
    return {**base, "type": "cost", "maxTokens": limit}


_METRIC_LIMITS = {
    "max_tool_calls": ("maxSteps", "max", {"count": "toolCalls"}),
    "max_llm_calls": ("maxSteps", "max", {"count": "turns"}),
    "max_tokens": ("cost", "maxTokens", {}),
    "max_cost_usd": ("cost", "maxUsd", {}),
    "max_duration_ms": ("latency", "maxMs", {}),
}
"""An `execution-metrics` bound, and the evalward assertion (type, field) that checks it."""


def _execution_metrics(
    item: dict[str, Any], path: PathKey, base: dict[str, Any]
) -> list[dict[str, Any]]:
    """Each bound of an `execution-metrics` grader as its own assertion, all of them to
    hold: tool calls and model calls as `maxSteps`, tokens and dollars as `cost`, time as
    `latency`. A bound evalward cannot check (an exploration ratio) is refused."""
    out = []
    for key, limit in item.items():
        if key in ("type", "name", "metric", "weight", "required", "negate"):
            continue
        if key not in _METRIC_LIMITS:
            raise AgentVProblem(
                (*path, key),
                f"`{key}` of execution-metrics has no equivalent in evalward; it checks "
                + ", ".join(_METRIC_LIMITS),
            )
        if not is_number(limit) or limit < 0:
            raise AgentVProblem((*path, key), f"expected a number >= 0; found {limit!r}")
        kind, field, extra = _METRIC_LIMITS[key]
        whole = field in ("max", "maxTokens")  # counts of calls or tokens
        if whole and not float(limit).is_integer():
            raise AgentVProblem((*path, key), f"expected a whole number; found {limit!r}")
        value = int(limit) if whole else limit
        out.append({**base, "type": kind, field: value, **extra})
    if not out:
        raise AgentVProblem(path, "execution-metrics needs a bound, e.g. `max_tool_calls`")
    return out


def _assert_set(
    item: dict[str, Any], path: PathKey, ctx: GraderContext, base: dict[str, Any]
) -> list[dict[str, Any]]:
    """An assert-set with a threshold is a group (`assertSet`): its score the weighted mean
    of its members' scores, passing at the threshold (AgentV's rule). Without one, it needs
    every member: its members, each weighing its own weight times the set's, on the set's
    `metric` unless it names its own. The set's `config` is its members' (their own over it)."""
    threshold = item.get("threshold")
    if threshold is not None and (not is_number(threshold) or not 0 <= threshold <= 1):
        raise AgentVProblem(
            (*path, "threshold"), f"expected a number from 0 to 1; found {threshold!r}"
        )
    members = item.get("assert", item.get("assertions"))
    if not isinstance(members, list) or not members:
        raise AgentVProblem(path, "an assert-set needs its `assert` list")
    key = "assert" if "assert" in item else "assertions"
    shared = item.get("config")
    made_members: list[dict[str, Any]] = []
    for index, member in enumerate(members):
        if isinstance(shared, dict) and isinstance(member, dict):
            own = member.get("config")
            member = {**member, "config": {**shared, **(own if isinstance(own, dict) else {})}}
        made_members += grader_assertions(member, (*path, key, index), ctx)
    if threshold is not None:
        group = {**base, "type": "assertSet", "threshold": float(threshold)}
        return [{**group, "assertions": made_members}]
    for made in made_members:
        made["weight"] = made.get("weight", 1.0) * base["weight"]
        if "axis" in base and "axis" not in made:
            made["axis"] = base["axis"]
    return made_members


def _similar(item: dict[str, Any], path: PathKey, base: dict[str, Any]) -> dict[str, Any]:
    """AgentV's `similar` as evalward's: AgentV passes at `threshold` on (cosine + 1) / 2, so
    evalward's cosine threshold is 2 × threshold − 1. The embedding model is the grader's
    `config.embedding_provider.model` (or `provider.model`), called through evalward's
    `openai` provider (its URL and key are evalward's, in evalward.yaml)."""
    value = item.get("value")
    if not isinstance(value, str) or not value:
        raise AgentVProblem((*path, "value"), "expected the text to compare with")
    config = item.get("config") if isinstance(item.get("config"), dict) else {}
    provider = item.get("provider") if isinstance(item.get("provider"), dict) else None
    embedding = config.get("embedding_provider") if isinstance(config, dict) else None
    settings = embedding if isinstance(embedding, dict) else provider or config or {}
    if "api_key" in settings:
        raise AgentVProblem(
            path, "a key in the eval file: evalward holds the provider keys; remove `api_key`"
        )
    model = settings.get("model")
    if not isinstance(model, str) or not model.strip():
        raise AgentVProblem(
            path, "`similar` needs its embedding model (`embedding_provider.model`)"
        )
    threshold = item.get("threshold", 0.75)
    if not is_number(threshold):
        raise AgentVProblem((*path, "threshold"), f"expected a number; found {threshold!r}")
    out = {**base, "type": "similar", "value": value, "threshold": 2 * float(threshold) - 1}
    return {**out, "model": model if "/" in model else f"openai/{model}"}


_TEXT_CHECKS = ("contains", "icontains", "equals", "regex", "starts-with", "ends-with")


def _text_check(
    kind: str,
    item: dict[str, Any],
    path: PathKey,
    ctx: GraderContext,
    base: dict[str, Any],
    *,
    negate: bool,
) -> dict[str, Any]:
    """A check of the answer against one string, decided as AgentV decides it: `contains`
    and `regex` as written (case counts), `icontains` in any case, `equals`, `starts-with`
    and `ends-with` on the trimmed answer and value. An exact match, or the regex that says
    it."""
    value = item.get("value")
    if kind == "equals" and value is None:
        if ctx.reference is None:
            raise AgentVProblem(path, "an `equals` check needs `value` or `expected_output`")
        value = ctx.reference
    if not isinstance(value, str):
        raise AgentVProblem((*path, "value"), f"expected a string; found {value!r}")
    trimmed = kind in ("starts-with", "ends-with")
    if kind != "equals" and not (value.strip() if trimmed else value):
        raise _matches_everything(path, kind)
    if kind == "equals" and not negate:
        return {**base, "type": "equals", "value": value}
    if kind == "contains" and item.get("case_sensitive") is not False:
        return {**base, "type": "notContains" if negate else "contains", "value": value}
    pattern = {
        "contains": f"(?i){re.escape(value)}",
        "icontains": f"(?i){re.escape(value)}",
        "equals": rf"(?s)\A\s*{re.escape(value.strip())}\s*\Z",
        "regex": value,
        "starts-with": rf"\A\s*{re.escape(value.strip())}",
        "ends-with": rf"{re.escape(value.strip())}\s*\Z",
    }[kind]
    return {**base, "type": "regex", "pattern": _negated(pattern) if negate else pattern}


def _list_check(
    kind: str, item: dict[str, Any], path: PathKey, base: dict[str, Any]
) -> dict[str, Any]:
    """Any or all of a list of strings in the answer, as one regex."""
    values = item.get("value")
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise AgentVProblem((*path, "value"), f"expected a list of strings; found {values!r}")
    if not values or (kind.endswith("any") and not all(values)):
        raise _matches_everything(path, kind)
    flags = "(?is)" if kind.startswith("i") or item.get("case_sensitive") is False else "(?s)"
    if kind.endswith("any"):
        pattern = flags + "(?:" + "|".join(re.escape(v) for v in values) + ")"
    else:
        pattern = flags + r"\A" + "".join(f"(?=.*{re.escape(v)})" for v in values)
    return {**base, "type": "regex", "pattern": pattern}


def _matches_everything(path: PathKey, kind: str) -> AgentVProblem:
    """A text check with nothing to look for: it would pass (or, negated, fail) every answer,
    deciding nothing of it, and AgentV skips it; refused at its value."""
    return AgentVProblem(
        (*path, "value"),
        f"`{kind}` with an empty value matches every answer, so it would decide nothing (AgentV "
        "skips it); give the text to look for, or remove the check",
    )


def _negated(pattern: str) -> str:
    flags = re.match(r"^\(\?[a-z]+\)", pattern)
    prefix = flags.group(0) if flags else ""
    return f"{prefix}(?s)\\A(?!.*(?:{pattern[len(prefix) :]}))"


def _llm_grader(
    item: dict[str, Any], path: PathKey, ctx: GraderContext, base: dict[str, Any]
) -> list[dict[str, Any]]:
    prompt = item.get("prompt")
    if "value" in item and prompt is None:  # the current `llm-rubric`: its rubric items
        axis = {"axis": base["axis"]} if "axis" in base else {}
        judges = _rubric_values(item["value"], (*path, "value"), base["weight"])
        return [{**judge, **axis} for judge in judges]
    if prompt is not None and not isinstance(prompt, str):
        raise AgentVProblem((*path, "prompt"), f"expected a string; found {prompt!r}")
    if prompt and prompt.startswith("file://"):
        prompt = ctx.read(prompt.removeprefix("file://").strip(), (*path, "prompt"))
    elif prompt and "\n" not in prompt and re.search(r"\.(md|txt|j2)$|^\.{0,2}/", prompt.strip()):
        prompt = ctx.read(prompt.strip(), (*path, "prompt"))
    if not prompt:
        if not ctx.criteria:
            raise AgentVProblem(path, "an llm-grader without `prompt` needs the test's `criteria`")
        prompt = ctx.criteria
    elif ctx.criteria and not re.search(r"\{\{\s*criteria\s*\}\}", prompt):
        prompt = f"{prompt.rstrip()}\n\nCriteria: {{{{criteria}}}}"
    ctx.criteria_used = True  # AgentV hands the criteria to every grader
    prompt = re.sub(r"\{\{\s*criteria\s*\}\}", lambda _: ctx.criteria or "", prompt)
    prompt = re.sub(r"\{\{\s*expected_output\s*\}\}", lambda _: ctx.reference or "", prompt)
    threshold = item.get("min_score", item.get("threshold", 0.5))
    out = [{**base, "type": "judge", "kind": "rubric", "rubric": prompt, "minScore": threshold}]
    rubrics = listed(item.get("rubrics"), (*path, "rubrics"), "rubric items")
    for index, rubric in enumerate(rubrics):
        out.append(rubric_item(rubric, (*path, "rubrics", index), base["weight"]))
    return out


_RUBRIC_ITEM_KEYS = {
    "id", "outcome", "description", "weight", "min_score", "required", "operator",
    "score_ranges",
}  # fmt: skip
_RUBRIC_OPERATORS = {
    "correctness": "The answer states this, correctly: {}",
    "contradiction": "The answer does not contradict this: {}",
}


def _rubric_values(value: Any, path: PathKey, weight: float) -> list[dict[str, Any]]:
    """An `llm-rubric`'s `value` (a text, or a list of items) as judge assertions."""
    if isinstance(value, str):
        return [rubric_item(value, path, weight)]
    if not isinstance(value, list) or not value:
        raise AgentVProblem(path, "expected a rubric text or a non-empty list of rubric items")
    return [rubric_item(item, (*path, index), weight) for index, item in enumerate(value)]


def listed(value: Any, path: PathKey, what: str) -> list[Any]:
    """The list of `what` a file gives at `path` (none given: an empty one). Anything else is
    refused there, never iterated: a text would be read as one item per character, a mapping
    as its keys, and a number cannot be read at all."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise AgentVProblem(path, f"expected a list of {what}; found {value!r:.80}")
    return value


def rubric_item(item: Any, path: PathKey, weight: float) -> dict[str, Any]:
    """One rubric item (a text, or a mapping: `outcome`, `operator`, `score_ranges`, `weight`,
    `min_score`, as docs/resources.md tables them) as a judge assertion: one criterion, one
    judge, its rubric the criterion as the item states it. A key evalward would not honour is
    refused at its line."""
    if isinstance(item, str):
        if not item.strip():
            raise AgentVProblem(path, "a rubric item is empty")
        return {"type": "judge", "kind": "rubric", "rubric": item, "weight": weight}
    if not isinstance(item, dict):
        raise AgentVProblem(path, f"expected a rubric item (text or mapping); found {item!r}")
    for key in item:
        if key not in _RUBRIC_ITEM_KEYS:
            raise AgentVProblem(
                (*path, key), f"`{key}` of a rubric item is not read by evalward; remove it"
            )
    item_weight = item.get("weight", 1.0)
    if not is_number(item_weight) or item_weight < 0:
        raise AgentVProblem((*path, "weight"), f"expected a number >= 0; found {item_weight!r}")
    judge: dict[str, Any] = {
        "type": "judge",
        "kind": "rubric",
        "rubric": _rubric_criterion(item, path),
        "weight": weight * float(item_weight),
    }
    if "min_score" in item:
        judge["minScore"] = item["min_score"]
    return judge


def _rubric_criterion(item: dict[str, Any], path: PathKey) -> str:
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
    if operator not in _RUBRIC_OPERATORS:
        raise AgentVProblem(
            (*path, "operator"),
            f"expected operator correctness or contradiction; found {operator!r}",
        )
    return _RUBRIC_OPERATORS[operator].format(outcome)


def _trajectory(item: dict[str, Any], path: PathKey, base: dict[str, Any]) -> list[dict[str, Any]]:
    """The older `tool_trajectory` grader, as AgentV decided it: `any_order` each tool of
    `minimums` called that often; `in_order` / `exact` the `expected` calls in order (or
    exactly those), each call's `args` (a partial match) and its `max_duration_ms` (each
    call of that tool timed within it)."""
    mode = item.get("mode", "in_order")
    if mode == "any_order":
        minimums = item.get("minimums") or {}
        if not isinstance(minimums, dict) or not minimums:
            raise AgentVProblem(path, "an any_order tool-trajectory needs `minimums`")
        made = []
        for tool, count in minimums.items():
            value = {"name": str(tool), "min": count}
            made += _tool_used(value, (*path, "minimums", tool), base, False)
        return made
    if mode not in ("in_order", "exact"):
        raise AgentVProblem(
            (*path, "mode"), f"expected mode any_order, in_order or exact; found {mode!r}"
        )
    expected = item.get("expected")
    if not isinstance(expected, list) or not expected:
        raise AgentVProblem(path, "a tool-trajectory needs `expected` tool calls")
    tools: list[str] = []
    checks: list[dict[str, Any]] = []
    for index, call in enumerate(expected):
        at: PathKey = (*path, "expected", index)
        if not isinstance(call, dict) or not isinstance(call.get("tool"), str):
            raise AgentVProblem(at, "expected `{tool: name}`")
        for key in call:
            if key not in ("tool", "args", "max_duration_ms"):
                raise AgentVProblem((*at, key), f"`{key}` of an expected tool call is not read")
        tools.append(_tool_name(call["tool"], (*at, "tool")))
        args = call.get("args", "any")
        if args != "any":
            if not isinstance(args, dict):
                raise AgentVProblem((*at, "args"), f"expected a mapping or any; found {args!r}")
            checks.append(
                {**base, "type": "toolArgs", "tool": call["tool"], "args": args, "mode": "partial"}
            )
        budget = call.get("max_duration_ms")
        if budget is not None:
            if not is_number(budget) or budget <= 0:
                raise AgentVProblem(
                    (*at, "max_duration_ms"), f"expected milliseconds above 0; found {budget!r}"
                )
            checks.append({**base, "type": "latency", "tool": call["tool"], "maxMs": budget})
    return [_tool_sequence({"mode": mode, "steps": tools}, path, base), *checks]


_SEQUENCE_MODES = {"in_order": None, "exact": "strict"}
_ARGS_MATCH_KEYS = {"name", "tool", "args", "arguments", "mode"}
_SEQUENCE_KEYS = ("mode", "steps")
"""What evalward reads of a `trajectory:tool-args-match` value; AgentV's `defaults`, `ignore`
and `pattern` are refused, never skipped."""
_PATTERN = re.compile(r"[*?]")


def _tool_name(name: str, path: PathKey) -> str:
    """A tool's name as a trajectory check gives it. AgentV matches it as a pattern (`*`,
    `?`, in any case) and evalward as it is written, so a pattern would be the name of a tool
    no agent has: a guard that it is not called would pass every run. Refused at `path`."""
    if _PATTERN.search(name):
        raise AgentVProblem(
            path,
            f"{name!r} is a pattern: AgentV matches tool names as patterns (`*`, `?`), "
            "evalward as they are written; name each tool the check means (a list of names)",
        )
    return name


def _structural_check(
    kind: str, item: dict[str, Any], path: PathKey, base: dict[str, Any]
) -> list[dict[str, Any]]:
    """One of `_STRUCTURAL_CHECKS`: `is-json` as an empty `jsonSchema`, the trajectory
    checks as `toolCalled`, `toolNotCalled`, `toolSequence`, `trajectory` or `toolArgs`."""
    if kind == "is-json":
        return [{**base, "type": "jsonSchema", "schema": {}}]
    value = item.get("value")
    if kind.endswith("trajectory:tool-used"):
        return _tool_used(value, (*path, "value"), base, kind.startswith("not-"))
    if not isinstance(value, dict):
        raise AgentVProblem((*path, "value"), f"expected a mapping; found {value!r}")
    if kind == "trajectory:tool-sequence":
        return [_tool_sequence(value, (*path, "value"), base)]
    for key in value:
        if key not in _ARGS_MATCH_KEYS:
            raise AgentVProblem(
                (*path, "value", key),
                f"`{key}` of trajectory:tool-args-match is not read by evalward"
                f"{did_you_mean(str(key), _ARGS_MATCH_KEYS)}; it reads "
                + ", ".join(sorted(_ARGS_MATCH_KEYS)),
            )
    name = value.get("name", value.get("tool"))
    if not isinstance(name, str) or not name:
        raise AgentVProblem((*path, "value", "name"), "expected the tool's name")
    _tool_name(name, (*path, "value", "name"))
    key = "args" if "args" in value else "arguments"
    args = value.get(key)
    if not isinstance(args, dict):
        raise AgentVProblem(
            (*path, "value", key),
            f"expected the arguments to match (`args`, a mapping); found {args!r}",
        )
    mode = value.get("mode", "partial")
    if mode not in ("partial", "exact"):
        raise AgentVProblem((*path, "value", "mode"), f"expected partial or exact; found {mode!r}")
    return [{**base, "type": "toolArgs", "tool": name, "args": args, "mode": mode}]


def _tool_used(
    value: Any, path: PathKey, base: dict[str, Any], inverse: bool
) -> list[dict[str, Any]]:
    """A tool (or each of a list) called at least `min` times: `toolCalled`, or a
    `toolSequence` naming it `min` times; with `not-`, none of them called."""
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        kind = "toolNotCalled" if inverse else "toolCalled"
        return [{**base, "type": kind, "tool": _tool_name(name, path)} for name in value]
    if not isinstance(value, dict) or inverse:
        raise AgentVProblem(path, "expected a tool's name, a list of names, or {name, min}")
    for key in value:
        if key not in ("name", "min"):
            raise AgentVProblem((*path, key), f"`{key}` of trajectory:tool-used is not checked")
    name, least = value.get("name"), value.get("min", 1)
    if not isinstance(name, str) or not name:
        raise AgentVProblem((*path, "name"), "expected the tool's name")
    _tool_name(name, (*path, "name"))
    if isinstance(least, bool) or not isinstance(least, int) or not 1 <= least <= 100:
        raise AgentVProblem(
            (*path, "min"), f"expected a number of calls from 1 to 100; found {least!r}"
        )
    if least == 1:
        return [{**base, "type": "toolCalled", "tool": name}]
    return [{**base, "type": "toolSequence", "tools": [name] * least}]


def _tool_sequence(value: dict[str, Any], path: PathKey, base: dict[str, Any]) -> dict[str, Any]:
    """A `trajectory:tool-sequence` (or an older `tool-trajectory`'s expected calls). AgentV
    runs a sequence `in_order` or `exact`, any other mode in order, so `any_order` is refused
    rather than read as the looser check it names."""
    for key in value:
        if key not in _SEQUENCE_KEYS:
            raise AgentVProblem(
                (*path, key),
                f"`{key}` of a tool sequence is not read by evalward"
                f"{did_you_mean(str(key), _SEQUENCE_KEYS)}; it reads mode and steps",
            )
    mode = value.get("mode", "in_order")
    if mode == "any_order":
        raise AgentVProblem(
            (*path, "mode"),
            "AgentV runs a tool-sequence in_order or exact, and any_order in order: write "
            "in_order, or one trajectory:tool-used per tool where the order does not matter",
        )
    if not isinstance(mode, str) or mode not in _SEQUENCE_MODES:
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
        _tool_name(name, (*path, "steps", index))
        if isinstance(step, dict) and set(step) - {"tool", "name"}:
            extra = min(set(step) - {"tool", "name"})
            raise AgentVProblem(
                (*path, "steps", index, extra), f"`{extra}` of a step is not checked"
            )
        tools.append(name)
    trajectory = _SEQUENCE_MODES[mode]
    if trajectory is None:
        return {**base, "type": "toolSequence", "tools": tools}
    return {**base, "type": "trajectory", "tools": tools, "mode": trajectory}


_RUNNABLE = {".py": "python", ".js": "javascript", ".cjs": "javascript", ".mjs": "javascript"}
_RUNNERS = {"python", "python3", "uv", "run", "node", "bun", "npx", "tsx", "deno"}
"""Words of a command that only say how to run the file it names."""


def _script_assertion(
    item: dict[str, Any],
    path: PathKey,
    base: dict[str, Any],
    locate: Callable[[str, PathKey], str],
) -> dict[str, Any]:
    """One script grader as a code assertion; `locate` turns a path relative to the eval
    file into a repository path (or raises). AgentV runs a command (`[uv, run, check.py]`) in
    the eval file's folder (or its `cwd`); evalward runs the Python or JavaScript file it names,
    with its other arguments, as it runs every code scorer. A command whose program is not
    such a file (TypeScript, a shell line) is refused at its line, saying why."""
    key = "command" if "command" in item else "script"
    command = item.get(key)
    if isinstance(command, str):
        command = shlex.split(command)
    if not isinstance(command, list) or not command or not all(isinstance(c, str) for c in command):
        raise AgentVProblem(
            (*path, key), "expected the grader's command: a list of words or a line"
        )
    found = next(
        (i for i, word in enumerate(command) if posixpath.splitext(word)[1] in _RUNNABLE), None
    )
    if found is None or any(word not in _RUNNERS for word in command[:found]):
        raise AgentVProblem(
            (*path, key),
            f"evalward runs a script grader's Python or JavaScript file (`[python3, "
            f"check.py]`, `[node, check.js]`); {shlex.join(command)!r} names none it can run "
            "(a TypeScript grader can be compiled to JavaScript, a shell line written as a "
            "Python script)",
        )
    cwd = item.get("cwd", ".")
    if not isinstance(cwd, str):
        raise AgentVProblem((*path, "cwd"), f"expected a folder; found {cwd!r}")
    script = posixpath.normpath(posixpath.join(cwd, command[found]))
    out: dict[str, Any] = {
        **base,
        "type": "code",
        "protocol": "script",
        "file": locate(script, (*path, key)),
        "args": command[found + 1 :],
    }
    if isinstance(item.get("config"), dict):
        out["config"] = item["config"]
    threshold = item.get("threshold")
    if threshold is not None:
        if not is_number(threshold):
            raise AgentVProblem((*path, "threshold"), f"expected a number; found {threshold!r}")
        out["threshold"] = threshold
    timeout = item.get("timeout_seconds", item.get("timeout"))
    if is_number(timeout) and 0 < timeout <= 600:
        out["timeoutSeconds"] = timeout
    return out
