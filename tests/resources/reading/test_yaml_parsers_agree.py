"""yaml-rs and the PyYAML fallback read every document the same way, by YAML 1.2's core schema.

Documents are written as text (block and flow collections, plain and quoted scalars, several
documents, anchors and merge keys) from scalars chosen where YAML 1.1, YAML 1.2 and yaml-rs
part ways, so a missing yaml-rs wheel can change nothing but speed.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalward.errors import YamlSyntaxError
from evalward.importers.promptfoo.source import Files, Node, Source
from evalward.resources.reading import yamlsource
from evalward.resources.reading.yamlsource import Document, load_documents, parse_documents

pytestmark = pytest.mark.unit

TRICKY = [
    *("no", "No", "NO", "on", "On", "off", "yes", "Yes", "y", "n", "~", "null", "Null", "NULL"),
    *("true", "True", "TRUE", "false", "tRUE", "nULL", "0", "-0", "+1", "012", "00", "-012"),
    *("0o17", "0O17", "0o8", "0x1F", "0X1F", "-0x1f", "+0o7", "0b11", "0b2", "1_000", "_1"),
    *("1_", "0x_1", "1e3", "1E3", "1.0e+3", ".5", "5.", "+.5", ".e3", "1e", "1.5.5", "0.1_1"),
    *(".inf", "-.Inf", "+.INF", ".inF", ".nan", ".NaN", "+.nan", "inf", "nan", "infinity"),
    *("12:30", "1:2:3", "2020-01-01", "2020-01-01T10:00:00Z", "=", "<<SYS>>", "a<<b", "!x"),
    *("99999999999999999999999", "1.7976931348623157e309", "tool_1", "_private", "v1.2.3"),
    *("support-bot", "gpt-4o", "a b", "#x", "x#y", "@at", "%p", "`b`", "a: b", "-", "?"),
]
WORDS = st.sampled_from(TRICKY) | st.text(alphabet="abXYZ019_.-+:~!<>#", min_size=1, max_size=6)


_PLAIN = re.compile(r"[^-?:,\[\]{}#&*!|>'\"%@`\s][^\s#,\[\]{}:]*(?: [^\s#,\[\]{}:]+)*|\d+(?::\d+)+")
"""A word both grammars read as one plain scalar in any context (libyaml follows YAML 1.1's
grammar, yaml-rs 1.2's, and they part on an indicator or `:` at odd places, e.g. `[:]`); any
other word is written quoted."""


def _plain(word: str) -> str:
    marker = word.startswith(("...", "---"))  # a document's end or start
    return word if _PLAIN.fullmatch(word) and not marker else _double(word)


def _single(word: str) -> str:
    return "'" + word.replace("'", "''") + "'"


def _double(word: str) -> str:
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'


SCALARS = st.tuples(WORDS, st.sampled_from([_plain, _plain, _single, _double])).map(
    lambda pair: pair[1](pair[0])
)


@st.composite
def flow(draw: st.DrawFn, depth: int = 0) -> str:
    """A flow collection or a scalar."""
    kind = draw(st.sampled_from(["scalar", "scalar", "seq", "map"] if depth < 2 else ["scalar"]))
    if kind == "scalar":
        return draw(SCALARS)
    items = draw(st.lists(flow(depth + 1), max_size=3))
    if kind == "seq":
        return "[" + ", ".join(items) + "]"
    keys = draw(st.lists(SCALARS, min_size=len(items), max_size=len(items)))
    return "{" + ", ".join(f"{k}: {v}" for k, v in zip(keys, items, strict=True)) + "}"


@st.composite
def block(draw: st.DrawFn, indent: int = 0, depth: int = 0) -> str:
    """A block mapping or sequence, each value a flow node or a nested block."""
    pad = " " * indent
    lines = []
    mapping = draw(st.booleans())
    for _ in range(draw(st.integers(1, 3))):
        head = f"{pad}{draw(SCALARS)}:" if mapping else f"{pad}-"
        if depth < 2 and draw(st.integers(0, 3)) == 0:
            lines.append(head + "\n" + draw(block(indent + 2, depth + 1)))
        else:
            lines.append(f"{head} {draw(flow())}\n")
    return "".join(lines)


MERGED = "base: &base {model: gpt-4o, retries: 2}\nagent:\n  <<: *base\n  retries: no\n"


@st.composite
def documents(draw: st.DrawFn) -> str:
    parts = draw(st.lists(block() | flow().map(lambda node: node + "\n"), min_size=1, max_size=3))
    if draw(st.integers(0, 5)) == 0:
        parts.append(MERGED)
    return "---\n".join(parts) if len(parts) > 1 else parts[0]


def _typed(value: Any) -> Any:
    """The data with every scalar's type beside it (1, 1.0 and True compare equal in Python)."""
    if isinstance(value, dict):
        return ("map", [(_typed(k), _typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("seq", [_typed(v) for v in value])
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, value)


def _outcome(text: str) -> Any:
    try:
        return [(_typed(d.data), d.start_line) for d in load_documents(text)]
    except YamlSyntaxError as exc:
        return ("refused", str(exc), exc.line, exc.column)


@pytest.mark.skipif(yamlsource._yaml_rs is None, reason="no yaml-rs wheel on this platform")
@settings(max_examples=400, deadline=None)
@given(text=documents())
def test_yaml_rs_and_the_fallback_read_every_document_alike(text: str) -> None:
    fast = _outcome(text)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(yamlsource, "_yaml_rs", None)
        fallback = _outcome(text)
    assert fast == fallback, text


MANY_DOCUMENTS = [
    "# c\n\n---\na: 1\n--- \nb: [1, 2]\n# tail\n",
    "a: 1\n---\n---\nb: |\n  x\n  ---\n",
    "--- |\nfoo\n--- >\nbar\n",
    "---\n|\nfoo\n---\nbar\n",
    "---\n&a >\nx\n---\ny\n",
    "a: 1\n...\n---\nb: 2\n",
    "a: &x 1\n---\nb: *x\n",
    "---\n---\n# only a comment\n---\na: [1,\n  2]\n---\n{b: 3}\n---\n''\n---\n~\n",
    "".join(f"---\nkind: X\nmetadata: {{ name: n{i} }}\nspec: [{i}, two]\n" for i in range(40)),
]


@pytest.mark.skipif(yamlsource._yaml_rs is None, reason="no yaml-rs wheel on this platform")
@pytest.mark.parametrize("chunk", [1, 60, yamlsource.RS_CHUNK])
@pytest.mark.parametrize("text", MANY_DOCUMENTS)
def test_a_file_of_documents_reads_alike_read_apart_or_whole(text: str, chunk: int) -> None:
    """yaml-rs reads a file `RS_CHUNK` of its documents at a time where that reads as the
    whole file would (a block scalar at a document's root, which it lets run past `---`, is
    read whole and refused by both parsers): read a document at a time (a chunk of 1),
    a few (60 characters), or whole, as the fallback reads it."""
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(yamlsource, "RS_CHUNK", chunk)
        fast = _outcome(text)
        patched.setattr(yamlsource, "_yaml_rs", None)
        assert fast == _outcome(text), text


@settings(max_examples=200, deadline=None)
@given(text=documents())
def test_the_located_parse_reads_the_same_data(text: str) -> None:
    """What `validate` reports against (the marks path) is the data the run used."""
    try:
        marked = [_typed(d.data) for d in parse_documents(text)]
    except YamlSyntaxError:
        return
    assert [_typed(d.data) for d in load_documents(text)] == marked, text


@pytest.mark.parametrize("without_wheel", [False, True])
def test_yaml_1_1_words_stay_strings_whatever_else_the_file_holds(
    without_wheel: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two files identical but for a description holding `<<` read `no` the same way."""
    if without_wheel:
        monkeypatch.setattr(yamlsource, "_yaml_rs", None)
    for description in ("plain tags", "uses <<SYS>> tags"):
        text = f"description: {description!r}\nvalue: no\nswitch: on\nok: Yes\nwhen: 2024-01-02\n"
        (document,) = load_documents(text)
        assert document.data["value"] == "no"
        assert document.data["switch"] == "on"
        assert document.data["ok"] == "Yes"
        assert document.data["when"] == "2024-01-02"


def test_an_imported_promptfoo_file_reads_by_the_core_schema_too(tmp_path: Path) -> None:
    (tmp_path / "vars.yaml").write_text("answer: no\nswitch: on\ncount: 012\n# <<SYS>>\n")
    files = Files(tmp_path, tmp_path, tmp_path)
    config = Node("file://vars.yaml", Source("promptfooconfig.yaml", Document(None, 1)))
    read = files.document(config, files.path_of(config, "file://vars.yaml"))
    assert read.value == {"answer": "no", "switch": "on", "count": 12}
    switch = read.get("switch")
    assert switch is not None and switch.where() == (2, 1)


@settings(max_examples=300, deadline=None)
@given(
    text=st.lists(st.sampled_from([*"-.%|>&!#a \t\n", "---", "\n---", "..."]), max_size=30).map(
        "".join
    )
)
def test_a_line_start_pattern_finds_what_its_multiline_regex_finds(text: str) -> None:
    """The document markers, the texts yaml-rs reads whole and the deep blocks are found as
    a line break and the pattern (faster than `^`): where `^` under re.MULTILINE finds them."""
    for pattern in (yamlsource._MARKER, yamlsource._WHOLE_ONLY, yamlsource._DEEP_BLOCK):
        plain = pattern.here
        assert list(pattern.spans(text)) == [m.span() for m in plain.finditer(text)], text
        assert pattern.search(text) == bool(plain.search(text)), text
    deep = "a:\n" + "- " * yamlsource.MAX_DEPTH + "x\n"
    assert yamlsource._DEEP_BLOCK.search(deep) and not yamlsource._DEEP_BLOCK.search(deep[3:-4])
