"""promptfoo's test cases, wherever they are written: inline, in YAML, JSON or JSONL files,
or in CSV rows with their compact `__expected` assertions; and `defaultTest`, merged into
each as promptfoo merges it (its assertions first, its vars and options under the test's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from evalward.importers.promptfoo.asserts import split_values
from evalward.importers.promptfoo.source import Files, Node

TEST_KEYS = {"description", "vars", "assert", "options", "metadata", "providers", "prompts"}
OPTION_KEYS = {
    "prefix", "suffix", "disableDefaultAsserts", "provider", "runSerially", "transform",
    "postprocess",
}  # fmt: skip
"""`transform` (and its older name `postprocess`) becomes the fixture's `transform`."""
REFUSED_TEST_KEYS = {
    "provider": "a test that replaces the suite's provider: give it a provider of its own in "
    "`providers` instead",
    "providerOutput": "a test with a fixed output runs no model: it has no equivalent",
}
RULE_KEYS = {"threshold", "assertScoringFunction"}
"""What decides a test other than "every assertion passes": the fixture's `passThreshold`
and `scoringFunction`."""
PROMPTFOO_TYPES = """
agent-rubric answer-relevance bleu classifier contains contains-all contains-any
contains-html contains-json contains-sql contains-xml context-faithfulness context-recall
context-relevance conversation-relevance cost equals factuality finish-reason g-eval gleu
guardrails icontains icontains-all icontains-any is-html is-json is-refusal is-sql
is-valid-function-call is-valid-openai-function-call is-valid-openai-tools-call is-xml
javascript latency levenshtein llm-rubric pi meteor model-graded-closedqa
model-graded-factuality moderation perplexity perplexity-score python regex rouge-n ruby
similar similar:cosine similar:dot similar:euclidean starts-with tool-call-f1 skill-used
trajectory:goal-success trajectory:tool-args-match trajectory:step-count
trajectory:tool-sequence trajectory:tool-used trace-error-spans trace-span-count
trace-span-duration search-rubric webhook word-count
""".split()  # noqa: SIM905 - sixty-odd names read best as words
"""Every assertion type promptfoo knows, in its own order: a compact assertion names one."""
COMPACT = re.compile(
    r"^(not-)?(" + "|".join(map(re.escape, PROMPTFOO_TYPES)) + r")"
    r"(?:\((\d+(?:\.\d+)?)\))?(?::([\s\S]*))?$"
)
THRESHOLD_DEFAULT = {"cost": 0.75, "latency": 0.75, "levenshtein": 0.75, "starts-with": 0.75}


@dataclass
class Test:
    """One test case as promptfoo runs it, after `defaultTest` is merged in."""

    node: Node
    index: int
    description: str
    variables: Node | None
    defaults: dict[str, Node]
    """defaultTest's vars, under the test's own."""
    asserts: list[Node]
    options: dict[str, Node]
    only_providers: list[str] | None
    only_prompts: list[str] | None
    rule: dict[str, Node]
    """`threshold` and `assertScoringFunction`, the test's own over defaultTest's."""


def test_nodes(node: Node, files: Files) -> list[Node]:
    """Every test of `tests:`: inline, or the files a `file://` names (globs too)."""
    found: list[Node] = []
    for item in node.elements():
        if isinstance(item.value, str):
            if not item.value.startswith("file://") and not item.value.endswith(
                (".csv", ".yaml", ".yml", ".json", ".jsonl")
            ):
                raise item.refuse("expected a test, or `file://` naming a file of tests")
            for path in files.glob(item, item.value):
                loaded = files.document(item, path)
                rows = loaded.elements() if isinstance(loaded.value, list) else [loaded]
                found += [_from_row(row) if path.suffix == ".csv" else row for row in rows]
        else:
            found.append(item)
    return found


def _from_row(row: Node) -> Node:
    """A CSV row as the test promptfoo makes of it (columns are vars but `__expected…`,
    `__description`, `__prefix`, `__suffix` and the others promptfoo reads)."""
    test: dict[str, Any] = {"vars": {}}
    asserts: list[Any] = []
    for column, cell in row.value.items():
        if column.startswith("__expected"):
            if cell.strip():
                asserts.append(compact(cell.strip()))
        elif column in ("__prefix", "__suffix"):
            test.setdefault("options", {})[column[2:]] = cell
        elif column == "__description":
            test["description"] = cell
        elif column == "__threshold" and cell.strip():
            test["threshold"] = cell
        elif column == "__providerOutput" and cell.strip():
            test["providerOutput"] = cell
        elif column == "__metric" and cell.strip():
            asserts = [{**a, "metric": cell} for a in asserts]
        elif not column.startswith("__"):
            test["vars"][column] = cell
    if asserts:
        test["assert"] = asserts
    return Node(test, row.source, row.path)


def compact(expected: str) -> dict[str, Any]:
    """promptfoo's compact assertion (`icontains:paris`, `grade:…`, `javascript:…`, or a
    plain text that the output must equal)."""
    # each prefix ends at the value's first colon
    if expected.startswith(("javascript:", "fn:", "eval:")):
        return {"type": "javascript", "value": expected.partition(":")[2].strip()}
    if expected.startswith(("grade:", "llm-rubric:")):
        return {"type": "llm-rubric", "value": expected.partition(":")[2]}
    if expected.startswith("python:") or (expected.startswith("file://") and ".py" in expected):
        return {"type": "python", "value": expected[7:].strip()}
    match = COMPACT.match(expected)
    if match is None:
        return {"type": "equals", "value": expected}
    negated, kind, threshold, value = match.groups()
    result: dict[str, Any] = {"type": f"not-{kind}" if negated else kind}
    if kind in ("contains-all", "contains-any", "icontains-all", "icontains-any") and value:
        result["value"] = split_values(value)
    elif value is not None:
        result["value"] = value if kind in ("contains-json", "is-json") else value.strip()
    if threshold is not None:
        result["threshold"] = float(threshold)
    elif kind in THRESHOLD_DEFAULT:
        result["threshold"] = THRESHOLD_DEFAULT[kind]
    return result


def _refuse_unread(node: Node, what: str, *, provider_droppable: bool) -> None:
    """A key of a test (or of `defaultTest`) with no equivalent in evalward, refused at its
    line; a test's own `provider` may be dropped with --skip-unsupported, a default's not."""
    for key, child in node.items():
        if key in REFUSED_TEST_KEYS:
            raise child.refuse(
                REFUSED_TEST_KEYS[key], droppable=provider_droppable and key == "provider"
            )
        if key not in TEST_KEYS | RULE_KEYS:
            raise child.refuse_key(key, f" of {what}", TEST_KEYS | RULE_KEYS)


def merged(node: Node, index: int, default: Node | None) -> Test:
    """The test with `defaultTest` merged in; what has no equivalent is refused."""
    if not isinstance(node.value, dict):
        raise node.refuse("expected a test: a mapping with `vars` and `assert`", droppable=False)
    _refuse_unread(node, "a test", provider_droppable=True)
    own = _entries(node.get("options"))
    if default is not None:
        _refuse_unread(default, "defaultTest", provider_droppable=False)
    base = default if default is not None else Node({}, node.source)  # none: adds nothing
    rule = {key: child for key, child in [*base.items(), *node.items()] if key in RULE_KEYS}
    defaults = _entries(base.get("vars"))
    options = {**_entries(base.get("options")), **own}
    skip = own.get("disableDefaultAsserts")
    asserts = [] if skip is not None and skip.value is True else _elements(base.get("assert"))
    for key, child in options.items():
        if key not in OPTION_KEYS:
            raise child.refuse(
                f"`options.{key}` has no equivalent in evalward"
                + (
                    ": a fixture's vars are as written; write the vars it computes into the "
                    "test's `vars` and remove it (promptfoo then renders the same prompt, and "
                    "both give the same verdict)"
                    if key == "transformVars"
                    else ""
                ),
                droppable=key != "transformVars",
            )
    asserts += _elements(node.get("assert"))
    description = node.get("description")
    return Test(
        node=node,
        index=index,
        description=str(description.value) if description is not None else "",
        variables=node.get("vars"),
        defaults=defaults,
        asserts=asserts,
        options=options,
        only_providers=_names(node.get("providers")),
        only_prompts=_names(node.get("prompts")),
        rule=rule,
    )


def _entries(node: Node | None) -> dict[str, Node]:
    return dict(node.items()) if node is not None else {}


def _elements(node: Node | None) -> list[Node]:
    return node.elements() if node is not None else []


def _names(node: Node | None) -> list[str] | None:
    return None if node is None else [str(item.value) for item in node.elements()]
