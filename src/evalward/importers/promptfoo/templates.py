"""promptfoo's prompt templates and test variables, rendered as promptfoo renders them.

Templates are Nunjucks; Jinja (in its sandbox: a template is data, not code) renders the same
`{{ var }}`, filters and tags, with Nunjucks' `dump` added and its rules kept: no escaping, the
trailing newline kept, an undefined variable rendered empty. A variable given as a list runs
the test once per value (every combination); `file://` values are the file's content.

A template renders in evalward's process at import, so it is held as a mock output is
(`text.bounded_templates`): `*` and `**` bounded, RENDER_SECONDS of time, and no more text
than a resource file holds (what it renders is written into one). A template that fails,
whatever it raises, is refused at its line, like one that does not parse.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from jinja2 import Template, TemplateError, meta

from evalward.errors import Refused
from evalward.importers.promptfoo.source import Files, Node
from evalward.resources.reading import yaml12
from evalward.resources.reading.yamlsource import MAX_FILE_BYTES
from evalward.text import jsontext
from evalward.text.bounded_templates import BoundedSandbox, Late, until
from evalward.text.cuts import cap_chars

SCRIPT_SUFFIXES = {".js", ".cjs", ".mjs", ".ts", ".py", ".rb"}
MEDIA_SUFFIXES = {
    ".pdf", ".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tiff", ".svg",
    ".mp3", ".wav", ".ogg", ".flac", ".mp4", ".mov", ".webm",
}  # fmt: skip
PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")
PARTIAL_TAG = re.compile(r"({%[^%]*$|{{[^}]*$|{#[^#]*$)", re.MULTILINE)
RENDER_SECONDS = 5.0
"""How long one template may take to render (a loop over loops would hold the import for
hours; promptfoo's own prompts render in milliseconds)."""
LONGEST_RENDERING = MAX_FILE_BYTES
"""The most characters a template may render to: the fixture it goes into is a resource
file, which holds no more bytes."""
MOST_COMBINATIONS = 10_000
"""The most tests one promptfoo test's lists of values may make: each is a fixture of the
file of fixtures, which holds no more than MAX_FILE_BYTES (a few hundred bytes each)."""
SHOWN_ERROR = 500
"""The most characters of what a failing template raised that the refusal quotes (a
`ValueError` may quote a value of megabytes)."""


class _TooLong(Exception):
    """The template rendered more than LONGEST_RENDERING characters."""


def _dump(value: Any, indent: int | None = None) -> str:
    """Nunjucks' `dump`: JSON.stringify."""
    separators = (",", ":") if indent is None else (",", ": ")
    return json.dumps(value, ensure_ascii=False, indent=indent, separators=separators)


_ENV = BoundedSandbox(autoescape=False, keep_trailing_newline=True)
_ENV.filters["dump"] = _dump


@functools.lru_cache(maxsize=256)
def _compiled(template: str) -> tuple[Template, frozenset[str]]:
    """`template` compiled, and the variables it uses: once, though a suite renders its
    prompts once per test (a TemplateError is raised each time, not kept)."""
    parsed = _ENV.parse(template)
    return _ENV.from_string(parsed), frozenset(meta.find_undeclared_variables(parsed))


def render(template: str, variables: dict[str, Any], node: Node, warnings: list[str]) -> str:
    """`template` rendered with `variables`; a variable it uses that the test does not define
    renders empty, as in promptfoo, and is reported in `warnings`."""
    if "{{" not in template and "{%" not in template:
        return template
    try:
        compiled, used = _compiled(template)
        if "env" in used:
            raise node.refuse(
                "uses `env`, the environment of the machine that runs promptfoo: the import "
                "would freeze its value (a secret, perhaps) into the files; write the value in",
                droppable=False,
            )
        missing = sorted(used - set(variables))
        if missing:
            line, _ = node.where()
            warnings.append(
                f"{node.source.shown}:{line}: {', '.join(missing)} not defined for this test: "
                "rendered empty, as promptfoo does"
            )
        with until(time.monotonic() + RENDER_SECONDS):
            return _joined(compiled.generate(variables))
    except Refused:
        raise
    except Late:
        problem = f"the template did not render within {RENDER_SECONDS:g} s: shorten its loops"
    except _TooLong:
        problem = (
            f"the template renders more than {LONGEST_RENDERING:,} characters, more than the "
            f"{MAX_FILE_BYTES // (1024 * 1024)} MiB file of fixtures it goes into may hold: "
            "make it render the prompt a test sends"
        )
    except TemplateError as exc:
        problem = f"the template does not render: {cap_chars(str(exc), SHOWN_ERROR)}"
    except Exception as exc:  # whatever a template's Python raises: OverflowError, TypeError…
        shown = cap_chars(str(exc), SHOWN_ERROR)
        problem = f"the template does not render: {type(exc).__name__}: {shown}"
    raise node.refuse(problem, droppable=False) from None


def _joined(parts: Iterator[str]) -> str:
    """The parts a template renders, joined, but no more than LONGEST_RENDERING characters:
    a loop of bounded `*`s would otherwise make gigabytes before its time is up."""
    kept: list[str] = []
    size = 0
    for part in parts:
        size += len(part)
        if size > LONGEST_RENDERING:
            raise _TooLong
        kept.append(part)
    return "".join(kept)


def render_value(value: Any, variables: dict[str, Any], node: Node, warnings: list[str]) -> Any:
    """Every string in `value` (a string, a list, a mapping) rendered."""
    if isinstance(value, str):
        return render(value, variables, node, warnings)
    if isinstance(value, list):
        return [render_value(v, variables, node, warnings) for v in value]
    if isinstance(value, dict):
        return {k: render_value(v, variables, node, warnings) for k, v in value.items()}
    return value


def combinations(variables: dict[str, Node], files: Files) -> list[dict[str, Any]]:
    """promptfoo's var expansion: a list of strings, or a `file://` glob, gives one test per
    value, and several give every combination; a list of anything else is one value. More
    than MOST_COMBINATIONS are refused, counted before one is made (five lists of a hundred
    would be ten billion)."""
    options: list[list[Any]] = []
    for node in variables.values():
        value = node.value
        if isinstance(value, str) and value.startswith("file://"):
            values: list[Any] = [_file_value(node, path, files) for path in files.glob(node, value)]
        elif isinstance(value, list) and value and isinstance(value[0], str):
            values = list(value)
        else:
            values = [value]
        options.append(values)
    made = math.prod(len(values) for values in options)
    if made > MOST_COMBINATIONS:
        longest, _ = max(zip(variables.values(), options, strict=True), key=lambda n: len(n[1]))
        raise longest.refuse(
            f"the test's lists of values make {made:,} tests (every combination of them), more "
            f"than the {MOST_COMBINATIONS:,} one test may make, whose fixtures would outgrow "
            "the file they go into: split the lists across tests",
            droppable=False,
        )
    return [dict(zip(variables, chosen, strict=True)) for chosen in itertools.product(*options)]


def _file_value(node: Node, path: Path, files: Files) -> Any:
    if path.suffix in SCRIPT_SUFFIXES:
        raise node.refuse(
            f"{path.name} is a program that computes the variable; evalward does not run "
            "code to build inputs: run it once and write its output in the test's vars"
        )
    if path.suffix.lower() in MEDIA_SUFFIXES:
        raise node.refuse(
            f"{path.name}: promptfoo sends it as base64 or extracted text; evalward's inputs "
            "are text and conversations"
        )
    text = files.text(node, path)
    if path.suffix in (".yaml", ".yml"):  # promptfoo passes a YAML file on as JSON text
        try:
            return _dump(yaml12.load(text))
        except yaml.YAMLError as exc:
            raise node.refuse(f"cannot read {path.name}: {exc}", droppable=False) from None
    return text.strip()


def compose(variables: dict[str, Any], node: Node, warnings: list[str]) -> dict[str, Any]:
    """The variables as promptfoo renders them into a prompt: one trailing newline dropped,
    `{{name}}` placeholders of other variables filled in (five rounds at most), then each
    rendered as a template."""
    values = {k: v.removesuffix("\n") if isinstance(v, str) else v for k, v in variables.items()}
    for _ in range(5):
        changed = False
        for name, value in values.items():
            match = PLACEHOLDER.search(value) if isinstance(value, str) else None
            if match is not None and match[1] in values:
                values[name] = value.replace(match[0], str(values[match[1]]), 1)
                changed = True
        if not changed:
            break
    return {
        name: render(value, values, node, warnings) if isinstance(value, str) else value
        for name, value in values.items()
    }


def render_prompt(template: str, variables: dict[str, Any], node: Node, warnings: list[str]) -> str:
    """The prompt as promptfoo renders it: a template that is JSON has each of its strings
    rendered and is written again as JSON (two-space indents, as `JSON.stringify`); any other
    is rendered as text (a template cut off mid-tag is kept as it is)."""
    try:
        parsed = jsontext.loads(template)
    except ValueError:
        if PARTIAL_TAG.search(template):
            return template
        return render(template, variables, node, warnings)
    return stringify(render_value(parsed, variables, node, warnings), indent=2)


def stringify(value: Any, indent: int | None = None) -> str:
    """`JSON.stringify`: compact, or indented; a whole number written as an integer."""
    return _dump(_whole(value), indent)


def _whole(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_whole(v) for v in value]
    if isinstance(value, dict):
        return {k: _whole(v) for k, v in value.items()}
    return value
