"""promptfoo assertions as evalward assertions, each with the same pass/fail on the same output
(docs/cli.md, "import promptfoo", tables them). Case-insensitive, any-of, all-of, prefix and
negated forms become one `regex` with the values escaped (a negation is a lookahead over the
whole output, so `not-regex` keeps promptfoo's "matches nowhere"). What runs other code (ruby,
webhook), what needs another grading model (factuality, …) and what has no equivalent is
refused with what to write instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import regex
import yaml
from pydantic import BaseModel, ValidationError

from evalward.importers.promptfoo.code_asserts import LANGUAGES, code_assertion, transform_of
from evalward.importers.promptfoo.source import Files, Node
from evalward.importers.promptfoo.templates import render_value
from evalward.resources.checks.assertions import DEFAULT_EMBEDDING_MODEL, Assertion
from evalward.resources.common import is_number
from evalward.resources.reading import yaml12
from evalward.resources.reading.problems import located_messages

KEYS = {"type", "value", "threshold", "weight", "metric", "provider", "config", "transform"}
SIMILAR = {"similar": "cosine", "similar:cosine": "cosine", "similar:dot": "dot",
           "similar:euclidean": "euclidean"}  # fmt: skip
"""promptfoo's embedding similarity assertions, by the metric each computes."""
CODE = {"javascript", "python", "ruby", "webhook"}
GRADED = {
    "model-graded-closedqa",
    "model-graded-factuality",
    "factuality",
    "g-eval",
    "answer-relevance",
    "context-faithfulness",
    "context-recall",
    "context-relevance",
    "conversation-relevance",
    "select-best",
    "max-score",
    "classifier",
    "moderation",
    "guardrails",
    "pi",
    "search-rubric",
    "agent-rubric",
    "trajectory:goal-success",
    "is-refusal",
}
ANY = r"[\s\S]*?"
"""Any text, newlines included, without a flag that would change the user's own pattern."""

AssertionDocument = dict[str, Any]
"""An evalward assertion, as the mapping written into a fixture's `assert` list."""


def js_string(value: Any) -> str:
    """`String(value)` in JavaScript, for the scalars promptfoo compares as text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def split_values(value: str) -> list[str]:
    """promptfoo's comma-separated values (`a, "b, c", d`): quotes keep commas, `""` or `\\"`
    is a quote."""
    values: list[str] = []
    i = 0
    while i < len(value):
        while i < len(value) and (value[i].isspace() or value[i] == ","):
            i += 1
        if i >= len(value):
            break
        if value[i] == '"':
            i += 1
            field = ""
            while i < len(value):
                if value[i] == "\\" and value[i + 1 : i + 2] in ('"', "\\"):
                    field, i = field + value[i + 1], i + 2
                elif value[i] == '"' and value[i + 1 : i + 2] == '"':
                    field, i = field + '"', i + 2
                elif value[i] == '"':
                    i += 1
                    break
                else:
                    field, i = field + value[i], i + 1
            values.append(field)
        else:
            end = value.find(",", i)
            end = len(value) if end < 0 else end
            values.append(value[i:end].strip())
            i = end
    return values


EmbeddingModel = Callable[[Node | None], str]
"""The evalward model id of an embedding provider node (None: the test's, else promptfoo's
default), its provider added to those the suite calls."""


_FROM_KEY = {
    "maxUsd": "threshold",
    "maxMs": "threshold",
    "minScore": "threshold",
    "threshold": "threshold",
    "value": "value",
    "pattern": "value",
    "weight": "weight",
    "axis": "metric",
}
"""The promptfoo key each field of a converted assertion comes from, where it has one."""


class _Converted(BaseModel):
    assertion: Assertion


def _refuse_invalid(node: Node, kind: str, assertion: AssertionDocument) -> None:
    """The converted assertion as a fixture's loader reads it: one it refuses (a `cost`
    `threshold` below 0) is refused here, at the promptfoo key it came from, in the
    loader's words, never as the converted file's."""
    data = {"assertion": assertion}
    try:
        _Converted.model_validate(data)
    except ValidationError as exc:
        loc, message = located_messages(exc, data, _Converted)[0]
        field = str(loc[1]) if len(loc) > 1 else None
        key = _FROM_KEY.get(field or "")
        at = (node.get(key) if key else None) or node
        told = f"`{field}`: " if field and key is None else ""
        raise at.refuse(
            f"`{kind}` converts to evalward's `{assertion['type']}` check, which refuses "
            f"it: {told}{message}",
            droppable=False,
        ) from None


class Converter:
    """Converts one test's assertions, with its variables, into evalward's."""

    def __init__(self, files: Files, warnings: list[str], embedding: EmbeddingModel) -> None:
        self.files = files
        self.warnings = warnings
        self.embedding = embedding
        self.graders: list[Node] = []
        """The `provider` nodes of llm-rubric assertions: the judge the Eval must use."""

    def convert(self, node: Node, variables: dict[str, Any]) -> list[AssertionDocument]:
        raw = node.value
        if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
            raise node.refuse("an assertion needs a `type`", droppable=False)
        kind: str = raw["type"]
        if kind == "assert-set":
            return self._set(node, variables)
        for key, child in node.items():
            if key == "contextTransform":
                raise child.refuse(
                    "`contextTransform` picks a RAG context out of the output; evalward's "
                    "checks have no context: drop the assertion"
                )
            if key == "rubricPrompt":
                raise child.refuse("a custom grading prompt: evalward's judge has its own")
            if key not in KEYS:
                raise child.refuse(f"`{key}` is not part of a promptfoo assertion")
            if key == "config" and child.value and kind.removeprefix("not-") not in LANGUAGES:
                raise child.refuse("`config` has no equivalent in evalward")
        negated = kind.startswith("not-")
        base = kind.removeprefix("not-")
        value_node = node.get("value")
        value = render_value(raw.get("value"), variables, value_node or node, self.warnings)
        converted = self._one(node, base, negated, value, value_node)
        extra: dict[str, Any] = {}
        if isinstance(raw.get("weight"), int | float) and raw["weight"] != 1:
            extra["weight"] = raw["weight"]
        metric = raw.get("metric")
        if isinstance(metric, str) and metric:
            extra["axis"] = metric
        transform = node.get("transform")
        if transform is not None:
            extra["transform"] = transform_of(transform, self.files)
        done = [{**a, **extra} for a in converted]
        for assertion in done:
            _refuse_invalid(node, kind, assertion)
        return done

    def _set(self, node: Node, variables: dict[str, Any]) -> list[AssertionDocument]:
        """An `assert-set` without a threshold passes when all of its assertions do: the same
        as listing them one by one. With a threshold it is a group (`assertSet`): its score
        the weighted mean of its members', passing at the threshold, as promptfoo scores it."""
        for key, child in node.items():
            if key not in ("type", "assert", "threshold", "weight", "metric"):
                raise child.refuse(f"`{key}` is not part of a promptfoo assert-set")
        metric = node.get("metric")
        own_axis = str(metric.value) if metric is not None else None
        members = node.get("assert")
        if members is None:
            raise node.refuse("an assert-set needs `assert`", droppable=False)
        converted = [a for child in members.elements() for a in self.convert(child, variables)]
        threshold = node.get("threshold")
        if threshold is None:
            return [{**a, "axis": a.get("axis", own_axis)} if own_axis else a for a in converted]
        value = threshold.value
        if not is_number(value) or not 0 <= value <= 1:
            raise threshold.refuse("an assert-set's `threshold` is a number from 0 to 1")
        group: AssertionDocument = {
            "type": "assertSet",
            "threshold": value,
            "assertions": converted,
        }
        weight = node.get("weight")
        if weight is not None and isinstance(weight.value, int | float) and weight.value != 1:
            group["weight"] = weight.value
        if own_axis:
            group["axis"] = own_axis
        return [group]

    def _one(
        self, node: Node, base: str, negated: bool, value: Any, value_node: Node | None
    ) -> list[AssertionDocument]:
        at = value_node or node
        handler = _HANDLERS.get(base)
        if handler is not None:
            return handler(self, node, at, negated, value)
        if base in LANGUAGES:
            return [code_assertion(node, base, negated, self.files)]
        if base == "contains-json":
            raise node.refuse(
                "`contains-json` looks for JSON inside text; evalward's jsonSchema checks an "
                "output that is JSON: use `is-json` if the reply is only JSON, else a regex or a "
                "judge"
            )
        if base in CODE:
            raise node.refuse(
                f"`{base}` runs code evalward cannot run; write the check as a `javascript` or "
                "`python` assertion (a code scorer), as contains/regex/equals/is-json, or as an "
                "llm-rubric judge"
            )
        if base in GRADED:
            raise node.refuse(
                f"`{base}` needs a grading model or embeddings evalward does not have; write "
                "what it checks as an `llm-rubric` (an evalward judge with a rubric)"
            )
        raise node.refuse(f"`{base}` has no equivalent among evalward's assertions")

    # --- the handlers, by promptfoo type without its `not-` -----------------------------------

    def _contains(self, node: Node, at: Node, negated: bool, value: Any) -> list[AssertionDocument]:
        text = _text(at, value)
        return [{"type": "notContains" if negated else "contains", "value": text}]

    def _icontains(
        self, node: Node, at: Node, negated: bool, value: Any
    ) -> list[AssertionDocument]:
        return [_pattern(at, "(?i)" + _search(_escape(_text(at, value)), negated))]

    def _any(
        self, node: Node, at: Node, negated: bool, value: Any, fold: bool
    ) -> list[AssertionDocument]:
        either = "(?:" + "|".join(_escape(v) for v in _texts(at, value)) + ")"
        return [_pattern(at, ("(?i)" if fold else "") + _search(either, negated))]

    def _all(
        self, node: Node, at: Node, negated: bool, value: Any, fold: bool
    ) -> list[AssertionDocument]:
        texts = _texts(at, value)
        if len(texts) == 1 and not fold and not negated:
            return [{"type": "contains", "value": texts[0]}]
        every = "".join(f"(?={ANY}{_escape(t)})" for t in texts)
        body = f"(?!{every})" if negated else every
        return [_pattern(at, ("(?i)" if fold else "") + r"\A" + body)]

    def _equals(self, node: Node, at: Node, negated: bool, value: Any) -> list[AssertionDocument]:
        if isinstance(value, dict | list):
            if negated:
                raise at.refuse("`not-equals` with a JSON value has no equivalent in evalward")
            return [{"type": "jsonSchema", "schema": {"const": value}}]
        if negated:
            return [_pattern(at, rf"\A(?!{_escape(_text(at, value))}\Z)")]
        # promptfoo compares the output as it is: spaces and newlines around it count
        return [{"type": "equals", "value": _text(at, value), "exact": True}]

    def _starts_with(
        self, node: Node, at: Node, negated: bool, value: Any
    ) -> list[AssertionDocument]:
        prefix = _escape(_text(at, value))
        return [_pattern(at, rf"\A(?!{prefix})" if negated else rf"\A{prefix}")]

    def _regex(self, node: Node, at: Node, negated: bool, value: Any) -> list[AssertionDocument]:
        if not isinstance(value, str) or not value:
            raise at.refuse("`regex` needs a pattern")
        try:
            regex.compile(value)
        except regex.error as exc:
            raise at.refuse(
                f"the pattern does not compile in evalward's engine ({exc}); JavaScript and "
                "Python patterns differ in a few constructs: rewrite it"
            ) from None
        return [_pattern(at, _search(f"(?:{value})", negated) if negated else value)]

    def _is_json(self, node: Node, at: Node, negated: bool, value: Any) -> list[AssertionDocument]:
        if negated:
            raise node.refuse("`not-is-json` has no equivalent in evalward")
        schema: Any = {} if value in (None, "") else value
        if isinstance(schema, str):
            if schema.startswith("file://"):
                schema = self.files.document(at, self.files.path_of(at, schema)).value
            else:
                try:
                    schema = yaml12.load(schema)
                except yaml.YAMLError:  # a text that is neither JSON nor YAML: no schema
                    schema = None
        if not isinstance(schema, dict):
            raise at.refuse("`is-json` takes a JSON Schema object as its value")
        return [{"type": "jsonSchema", "schema": schema}]

    def _bound(self, node: Node, at: Node, negated: bool, value: Any) -> list[AssertionDocument]:
        """`cost` or `latency`: an upper bound, its `threshold`."""
        threshold = node.get("threshold")
        kind = node.value["type"]
        if negated:
            raise node.refuse(f"`{kind}` (a lower bound) has no equivalent in evalward")
        if threshold is None or not is_number(threshold.value):
            raise node.refuse(f"`{kind}` needs a numeric `threshold`", droppable=False)
        return [{"type": kind, "maxUsd" if kind == "cost" else "maxMs": threshold.value}]

    def _similar(self, node: Node, at: Node, negated: bool, value: Any) -> list[AssertionDocument]:
        """`similar` (and `not-similar`, `similar:dot`, `similar:euclidean`): the same metric,
        threshold (promptfoo's default, 0.75, is evalward's) and embedding model."""
        texts = [js_string(v) for v in value] if isinstance(value, list) else [_text(at, value)]
        if not texts or any(not text for text in texts):
            raise at.refuse("`similar` needs the text (or texts) to compare with")
        out: AssertionDocument = {
            "type": "similar",
            "value": texts[0] if len(texts) == 1 else texts,
        }
        threshold = node.get("threshold")
        if threshold is not None:
            if not is_number(threshold.value):
                raise threshold.refuse("`threshold` must be a number")
            out["threshold"] = threshold.value
        metric = SIMILAR[node.value["type"].removeprefix("not-")]
        if metric != "cosine":
            out["metric"] = metric
        if negated:
            out["negate"] = True
        model = self.embedding(node.get("provider"))
        if model != DEFAULT_EMBEDDING_MODEL:
            out["model"] = model
        return [out]

    def _rubric(self, node: Node, at: Node, negated: bool, value: Any) -> list[AssertionDocument]:
        if negated:
            raise node.refuse("`not-llm-rubric`: write the opposite statement as the rubric")
        if isinstance(value, dict | list):
            value = json.dumps(value, ensure_ascii=False)
        if not isinstance(value, str) or not value.strip():
            raise at.refuse("`llm-rubric` needs the rubric as its value", droppable=False)
        provider = node.get("provider")
        if provider is not None:
            self.graders.append(provider)
        judged: AssertionDocument = {
            "type": "judge",
            "rubric": "Score 1 if this statement is true of the final answer, 0 if it is not: "
            f"{value.strip()}",
        }
        threshold = node.get("threshold")
        if threshold is not None and isinstance(threshold.value, int | float):
            judged["minScore"] = min(max(float(threshold.value), 0.0), 1.0)
        return [judged]


def _escape(text: str) -> str:
    """`text` as a pattern that matches it literally, spaces left as they are."""
    escaped: str = regex.escape(text, special_only=True, literal_spaces=True)
    return escaped


def _pattern(at: Node, pattern: str) -> AssertionDocument:
    try:
        regex.compile(pattern)
    except regex.error as exc:  # pragma: no cover - escaped values always compile
        raise at.refuse(f"cannot be written as a pattern: {exc}", droppable=False) from None
    return {"type": "regex", "pattern": pattern}


def _search(pattern: str, negated: bool) -> str:
    """Found anywhere in the output, or (negated) found nowhere in it."""
    return rf"\A(?!{ANY}{pattern})" if negated else pattern


def _text(at: Node, value: Any) -> str:
    if value is None or isinstance(value, dict | list) or value == "":
        raise at.refuse("expected a text or a number as the value", droppable=False)
    return js_string(value)


def _texts(at: Node, value: Any) -> list[str]:
    values = split_values(value) if isinstance(value, str) else value
    if not isinstance(values, list) or not values:
        raise at.refuse("expected a list of texts as the value", droppable=False)
    return [_text(at, v) for v in values]


_Handler = Callable[[Converter, Node, Node, bool, Any], list[AssertionDocument]]
_HANDLERS: dict[str, _Handler] = {
    "contains": Converter._contains,
    "icontains": Converter._icontains,
    "contains-any": lambda c, n, a, neg, v: c._any(n, a, neg, v, fold=False),
    "icontains-any": lambda c, n, a, neg, v: c._any(n, a, neg, v, fold=True),
    "contains-all": lambda c, n, a, neg, v: c._all(n, a, neg, v, fold=False),
    "icontains-all": lambda c, n, a, neg, v: c._all(n, a, neg, v, fold=True),
    "equals": Converter._equals,
    "starts-with": Converter._starts_with,
    "regex": Converter._regex,
    "is-json": Converter._is_json,
    "cost": Converter._bound,
    "latency": Converter._bound,
    "llm-rubric": Converter._rubric,
    **{kind: Converter._similar for kind in SIMILAR},
}
