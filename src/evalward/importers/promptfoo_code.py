"""promptfoo's `javascript` and `python` assertions as evalward code scorers
(resources/code_scorer.py), with the same call: `(output, context)`, the same return shapes
and the same `threshold`.

A `file://scorers/check.js:fn` value names a file of the repository (and its function); an
inline value is kept as written, an expression or a function body. Their negations
(`not-javascript`) are refused: the function can say the inverse itself.
"""

from __future__ import annotations

import posixpath
from typing import Any

from evalward.importers.promptfoo_source import Files, Node

LANGUAGES = {"javascript": "javascript", "python": "python"}
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
        reference, function = _split(value.removeprefix("file://"))
        if reference.endswith(".ts"):
            raise value_node.refuse(
                f"{reference!r} is TypeScript; evalward runs JavaScript and Python scorers: "
                "compile it to JavaScript and name the .js file"
            )
        path = files.path_of(value_node, reference)
        where = path.relative_to(files.root).as_posix()
        out["file"] = f"{where}:{function}" if function else where
        if posixpath.splitext(where)[1] not in _SUFFIXES:
            out["language"] = LANGUAGES[kind]
    else:
        out |= {"language": LANGUAGES[kind], "source": value}
    threshold = raw.get("threshold")
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, int | float):
            raise (node.get("threshold") or node).refuse("`threshold` must be a number")
        out["threshold"] = threshold
    config = raw.get("config")
    if isinstance(config, dict) and config:
        out["config"] = config
    return out


def _split(reference: str) -> tuple[str, str]:
    """`path.js:function` into the path and the function (`""` when none is named)."""
    head, colon, tail = reference.rpartition(":")
    if colon and head.endswith(_SUFFIXES) and tail and "/" not in tail:
        return head, tail
    return reference, ""
