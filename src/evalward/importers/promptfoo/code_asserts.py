"""promptfoo's `javascript` and `python` assertions as evalward code scorers
(resources/checks/code_scorer.py), with the same call: `(output, context)`, the same return shapes
and the same `threshold`.

A `file://scorers/check.js:fn` value names a file of the repository (and its function); an
inline value is kept as written, an expression or a function body. Their negations
(`not-javascript`) are refused: the function can say the inverse itself.
"""

from __future__ import annotations

import posixpath
from typing import Any

from evalward.importers.promptfoo.source import Files, Node
from evalward.resources.common import is_number

LANGUAGES = {"javascript", "python"}
_SUFFIXES = (".js", ".cjs", ".mjs", ".ts", ".py")


def code_assertion(node: Node, kind: str, negated: bool, files: Files) -> dict[str, Any]:
    """One `javascript` / `python` assertion as a `code` assertion."""
    if negated:
        raise node.refuse(
            f"`not-{kind}` inverts a scorer; make the function return the inverse itself and "
            f"use `{kind}`"
        )
    raw = node.value
    value_node = node.get("value") or node
    value = raw.get("value")
    if not isinstance(value, str) or not value.strip():
        raise value_node.refuse(f"a `{kind}` assertion needs its code or a file:// value")
    out: dict[str, Any] = {"type": "code"}
    if value.startswith("file://"):
        out |= _file(value_node, value, files)
        if posixpath.splitext(out["file"].partition(":")[0])[1] not in _SUFFIXES:
            out["language"] = kind
    else:
        out |= {"language": kind, "source": value}
    threshold = raw.get("threshold")
    if threshold is not None:
        if not is_number(threshold):
            raise (node.get("threshold") or node).refuse("`threshold` must be a number")
        out["threshold"] = threshold
    config = raw.get("config")
    if isinstance(config, dict) and config:
        out["config"] = config
    return out


def rule(found: dict[str, Node], files: Files) -> dict[str, Any]:
    """A test's `threshold` and `assertScoringFunction` as its fixture's `passThreshold` and
    `scoringFunction`."""
    out: dict[str, Any] = {}
    threshold = found.get("threshold")
    if threshold is not None:
        value = threshold.value
        try:
            number = float(value) if isinstance(value, str | int | float) else None
        except ValueError:
            number = None
        if isinstance(value, bool) or number is None or not 0 <= number <= 1:
            raise threshold.refuse("a test's `threshold` is a number from 0 to 1")
        out["passThreshold"] = number
    function = found.get("assertScoringFunction")
    if function is not None:
        value = function.value
        if not isinstance(value, str) or not value.startswith("file://"):
            raise function.refuse(
                "`assertScoringFunction` names a file: file://path.js:function or "
                "file://path.py:function"
            )
        out["scoringFunction"] = _file(function, value, files)
    return out


def _file(node: Node, value: str, files: Files) -> dict[str, Any]:
    """A `file://path.js:function` value as a code scorer's `file` (from the repository)."""
    reference, function = _split(value.removeprefix("file://"))
    if reference.endswith(".ts"):
        raise node.refuse(
            f"{reference!r} is TypeScript; evalward runs JavaScript and Python scorers: "
            "compile it to JavaScript and name the .js file"
        )
    where = files.path_of(node, reference).relative_to(files.root).as_posix()
    return {"file": f"{where}:{function}" if function else where}


def _split(reference: str) -> tuple[str, str]:
    """`path.js:function` into the path and the function (`""` when none is named)."""
    head, colon, tail = reference.rpartition(":")
    if colon and head.endswith(_SUFFIXES) and tail and "/" not in tail:
        return head, tail
    return reference, ""


def transform_of(node: Node, files: Files) -> dict[str, Any]:
    """promptfoo's `transform` (an assertion's, or a test's `options.transform`) as evalward's:
    inline JavaScript (promptfoo runs inline transforms as JavaScript), or a file's function
    (`file://t.js:fn`, `file://t.py`, whose default function is `get_transform`)."""
    value = node.value
    if not isinstance(value, str) or not value.strip():
        raise node.refuse("a `transform` is JavaScript, or file:// naming a .js or .py file")
    if value.startswith("file://"):
        found = _file(node, value, files)
        if posixpath.splitext(found["file"].partition(":")[0])[1] not in _SUFFIXES:
            raise node.refuse(f"{value!r}: a transform file is a .js or .py file")
        return found
    return {"language": "javascript", "source": value}
