"""Parse YAML into plain data while remembering where every value stood.

Validation errors must name the file, line and column of the offending field. Recording the
mark of every node costs about as much as parsing, so the fast path (`load_documents`) only
constructs the data and finds where each document starts; the loader re-parses a file with
`parse_documents` (every node's mark under its path of keys and indexes) only when one of its
documents has a problem to report.

Every path reads by YAML 1.2's core schema (`no`, `on` and `Yes` are strings): yaml-rs when its
wheel is installed and the text holds nothing it reads otherwise (`_yaml_rs_differs`), else
PyYAML (libyaml when available) through `yaml12.CoreLoader`. A missing wheel costs speed
only; tests/resources/reading/test_yaml_parsers_agree.py holds the two to the same data on
generated documents.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from evalward.errors import YamlSyntaxError
from evalward.text.counts import counted

if TYPE_CHECKING:
    import yaml

_LAZY_ARENA = "MIMALLOC_ARENA_EAGER_COMMIT"
"""yaml-rs's allocator (mimalloc) reads its options once, as the wheel loads, and commits its
first arena eagerly: 4.5 MiB resident from the import on, used or not. Committed as used, the
same parses cost no more CPU (bench/speed.py's P1: peak RSS 81 → 77 MiB). Set only while the
wheel loads, so no program evalward starts inherits it; a value the user gave stands."""

_yaml_rs: ModuleType | None
_arena_given = _LAZY_ARENA in os.environ
os.environ.setdefault(_LAZY_ARENA, "0")
try:  # a YAML 1.2 parser in Rust: about 6x faster than libyaml through PyYAML
    import yaml_rs as _yaml_rs
except ImportError:  # pragma: no cover - a platform without its wheels
    _yaml_rs = None
finally:
    if not _arena_given:
        del os.environ[_LAZY_ARENA]


_LONG_RUN = 3500
_LONG_DIGITS = re.compile(rf"(?<![0-9a-fA-F])[0-9a-fA-F]{{{_LONG_RUN},}}")
"""A run of digits that may be an integer Python will not write in decimal (4,300 digits: as
few as 3,572 in hex), which yaml-rs reads without a bound and the core schema's loader
refuses at its line. Matched only where a run begins, so the search is one pass; searched
only in a text with a line that long (a third of the time of the search itself)."""
_RS_CANDIDATES = (re.compile(r"0[bBxXoO]"), re.compile(r"\.[iInN][nNaA][fFnN]"))
_DIGIT_OR_DOT = frozenset("0123456789.")
_TOKEN_END = frozenset(" \t\r\n[]{},:#")
_RS_UNDERSCORED = re.compile(r"[-+]?[_0-9.][_0-9a-fA-FxXoObB.eE+-]*")
_RS_ODD_PREFIX = re.compile(r"[-+]?0[bBXO]|[-+]0[xo]")
_RS_SPECIAL = re.compile(r"[-+]?\.(?:[iI][nN][fF]|[nN][aA][nN])")
_CORE_SPECIALS = frozenset(
    f"{sign}.{word}" for sign in ("", "+", "-") for word in ("inf", "Inf", "INF")
) | {".nan", ".NaN", ".NAN"}


_OTHER_BREAKS = ("\x85", "\u2028", "\u2029")
"""Line breaks of YAML 1.1 (PyYAML's) that YAML 1.2 (yaml-rs) reads as text."""


def _yaml_rs_differs(text: str) -> bool:
    """Whether yaml-rs could read `text` otherwise than the core schema: a merge key (yaml-rs
    keeps `<<` as a key), a tag (it drops unknown ones, reads `!!binary` as text), a number
    with `_` (it drops underscores: `_1` is 1), a binary, signed or upper-case hex or octal,
    or `.inf` / `.nan` in mixed case: all strings, or merged, by the core schema; or a number
    too long to write in decimal (`_LONG_DIGITS`); or a NEL, line or paragraph separator
    (`_OTHER_BREAKS`), a line break to PyYAML and text to yaml-rs, which then read another
    number of documents (a document after a comment, joined by NELs, was dropped). One pass
    over the text; each token is looked at once."""
    if "<<" in text or any(each in text for each in _OTHER_BREAKS):
        return True
    if max(map(len, text.splitlines()), default=0) >= _LONG_RUN and _LONG_DIGITS.search(text):
        return True  # no line break is a digit: a run that long is within one line
    checked = 0  # the end of the last token looked at
    for at in sorted(_rs_candidates(text)):
        if at < checked:
            continue
        start, end = at, at + 1
        while start > 0 and text[start - 1] not in _TOKEN_END:
            start -= 1
        while end < len(text) and text[end] not in _TOKEN_END:
            end += 1
        if _rs_reads_otherwise(text[start:end]):
            return True
        checked = end
    return False


def _rs_candidates(text: str) -> Iterator[int]:
    """Where such a token may stand: a `!`, a `_` beside a digit or a dot, a `0x`-like
    prefix, a `.inf`-like word. Found with `str.find` and literal-led patterns (fast)."""
    for mark in ("!", "_"):
        at = text.find(mark)
        while at >= 0:
            if mark == "!" or (
                text[at - 1 : at] in _DIGIT_OR_DOT or text[at + 1 : at + 2] in _DIGIT_OR_DOT
            ):
                yield at
            at = text.find(mark, at + 1)
    for pattern in _RS_CANDIDATES:  # apart: an alternation would lose their literal lead
        for match in pattern.finditer(text):
            yield match.start()


def _rs_reads_otherwise(token: str) -> bool:
    return (
        token.startswith("!")
        or ("_" in token and _RS_UNDERSCORED.fullmatch(token) is not None)
        or _RS_ODD_PREFIX.match(token) is not None
        or (_RS_SPECIAL.fullmatch(token) is not None and token not in _CORE_SPECIALS)
    )


PathKey = tuple[str | int, ...]

MAX_FILE_BYTES = 5 * 1024 * 1024
"""Largest resource file read: a bigger one is refused before it is read whole."""
MAX_DEPTH = 100
"""Deepest nesting of collections accepted: parsers and validators recurse, and a crafted
document (`[[[[…` or `- - - …`) could otherwise exhaust the stack and crash the process."""
MAX_EXPANDED = 100_000
"""Most values the aliases of a file may expand to beyond the file's own values (an alias
bomb is a few lines that expand to billions)."""


class _LineStart:
    """A pattern found only where a line starts (`^` under `re.MULTILINE`): searched as a
    line break followed by it, beside a match at the text's start, since re finds a
    pattern's literal first character at C speed, where it tries `^` at every position (a
    third to a sixth of the time of the search, on a file of fixtures)."""

    def __init__(self, body: str) -> None:
        self.here = re.compile("^" + body, re.MULTILINE)
        """The pattern itself, for a match at a line's start (`match(text, at)`)."""
        self._later = re.compile("\n" + body, re.MULTILINE)

    def search(self, text: str) -> bool:
        return bool(self.here.match(text) or self._later.search(text))

    def spans(self, text: str) -> Iterator[tuple[int, int]]:
        """Where each match starts and ends, in order."""
        if first := self.here.match(text):
            yield first.span()
        for match in self._later.finditer(text):
            yield match.start() + 1, match.end()


_DEEP_BLOCK = _LineStart(r"(?:[ \t]|[-?:][ \t])" f"{{{MAX_DEPTH},}}")


@dataclass
class Document:
    """One YAML document: its data and the (line, column) of every path in it, 1-based."""

    data: Any
    start_line: int
    marks: dict[PathKey, tuple[int, int]] = field(default_factory=dict)

    def locate(self, path: PathKey) -> tuple[int, int]:
        """The mark of `path`, or of its longest prefix that has one."""
        for end in range(len(path), -1, -1):
            mark = self.marks.get(path[:end])
            if mark is not None:
                return mark
        return (self.start_line, 1)


_BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
)


def too_large(size: int) -> str:
    return (
        f"file is {size} bytes, over the {MAX_FILE_BYTES // (1024 * 1024)} MiB limit of a "
        "resource file; split it into several files"
    )


BOM = "\ufeff"
"""UTF-8's byte-order mark: YAML allows one at the start of a stream, and an editor that saves
"UTF-8 with BOM" writes it. PyYAML skips it there; yaml-rs reads it as the first key's first
character (`\ufeffapiVersion`), or fails on a comment after it, so every path drops it before
parsing (`without_bom`), as the mock script's always had it dropped."""


def without_bom(text: str) -> str:
    """`text` without the byte-order mark it may start with (`BOM`)."""
    return text.removeprefix(BOM)


def _parseable(text: str) -> str:
    """`text` without its byte-order mark (`BOM`) and with every line break a line feed.

    YAML reads CR LF and a lone CR as a line break, as LF (and gives the same value: a break
    in a scalar is a line feed), but the fast path's searches for a document marker (`---`,
    `_MARKER`) end a line only at LF: in a file saved with CR LF (Git for Windows checks
    files out so by default) they found one document where there were several, whose list
    was then read as that one document's data. Lines and columns stay those of the file."""
    text = without_bom(text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def decode(raw: bytes) -> str:
    """The text of a YAML file, which must be UTF-8 (a byte-order mark at its start is
    dropped, `BOM`); else a located, actionable error."""
    try:
        return without_bom(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        bad = undecodable(raw, exc)
        if bad.wide:
            raise YamlSyntaxError(
                f"file is {bad.wide} (it starts with a {bad.wide} byte-order mark); save it as "
                "UTF-8",
                1,
                1,
            ) from None
        raise YamlSyntaxError(
            f"file is not valid UTF-8 (byte 0x{bad.byte:02x}); save it as UTF-8",
            bad.line,
            bad.column,
        ) from None


@dataclass(frozen=True)
class NotUtf8:
    """Where bytes stop being UTF-8: the wide encoding a byte-order mark at their start says
    they are (`wide`, "" for none), and the first byte that is not, at its 1-based line and
    column."""

    wide: str
    byte: int
    line: int
    column: int


def undecodable(raw: bytes, exc: UnicodeDecodeError) -> NotUtf8:
    """Where `raw`, which `exc` says is not UTF-8, stops being it (a YAML file, a prompt)."""
    wide = next((encoding.upper() for bom, encoding in _BOMS if raw.startswith(bom)), "")
    line = raw.count(b"\n", 0, exc.start) + 1
    column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
    return NotUtf8(wide, raw[exc.start], line, column)


def looks_like_resource(raw: bytes) -> bool:
    """Whether undecodable bytes are probably one of our files (then a mistake worth naming)."""
    if b"apiVersion" in raw or b"evalcases" in raw or b"tests:" in raw:
        return True
    for bom, encoding in _BOMS:
        if raw.startswith(bom):
            text = raw.decode(encoding, errors="replace")
            return "apiVersion" in text or "evalcases" in text or "tests:" in text
    return False


def parse_documents(text: str) -> list[Document]:
    """Every document of a multi-document YAML text, with marks."""
    text = _parseable(text)
    check_shape(text)
    import yaml

    from evalward.resources.reading.yaml12 import CoreLoader  # lazy: the fast path never needs it

    loader = CoreLoader(text)
    documents: list[Document] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:  # pragma: no cover - check_node guarantees a node
                break
            marks: dict[PathKey, tuple[int, int]] = {}
            _record_marks(node, (), marks)  # first: it words a duplicate key best
            data = loader.construct_document(node)
            documents.append(Document(data, node.start_mark.line + 1, marks))
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        raise YamlSyntaxError(
            f"invalid YAML: unacceptable character #x{exc.character:04x} ({exc.reason})",
            line,
            column,
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        hint = _tab_at(text, mark) or _misaligned(exc)
        raise _invalid((exc.problem or str(exc)) + hint, mark) from None
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(f"invalid YAML: {exc}", None, None) from None
    finally:
        loader.dispose()
    return documents


_MARKER = _LineStart(r"---(?:[ \t]|$)")


def load_documents(text: str) -> list[Document]:
    """Every document's data and start line, without per-node marks (the fast path)."""
    text = _parseable(text)
    starts = _document_starts(text)
    implicit = _implicit_first_line(text)
    if implicit is not None and (not starts or implicit < starts[0]):
        starts.insert(0, implicit)
    datas = _fast_load(text, len(starts))
    if datas is None:
        return parse_documents(text)  # the slow path words any error with its mark
    return [Document(data, start) for data, start in zip(datas, starts, strict=True)]


def _fast_load(text: str, count: int) -> list[Any] | None:
    """The documents' data, or None when the fast parser cannot be trusted with this text."""
    if _yaml_rs is None or _yaml_rs_differs(text):
        check_shape(text)
        import yaml

        from evalward.resources.reading.yaml12 import CoreLoader  # lazy: see parse_documents

        try:
            datas = list(yaml.load_all(text, Loader=CoreLoader))
        except yaml.YAMLError:
            return None  # the slow path words and locates the error
        return datas if len(datas) == count else None
    if ("&" in text and "*" in text) or _DEEP_BLOCK.search(text):
        check_shape(text)  # yaml-rs copies what aliases name, and recurses on block nesting
    try:
        loaded = _rs_load(_yaml_rs, text, count)
    except Exception:  # any refusal (syntax, duplicate key): let PyYAML locate it
        return None
    if count == 0:
        return [] if loaded is None else None
    if count == 1:
        return [loaded]
    if isinstance(loaded, list) and len(loaded) == count:
        return loaded
    return None


_WHOLE_ONLY = _LineStart(r"(?:%|\.\.\.(?:[ \t]|$)|(?:---[ \t]+)?(?:[&!]\S*[ \t]+)*[|>])")
"""A directive, a document's end, or a document that is a block scalar: yaml-rs reads a text
holding one whole (it lets a block scalar at a document's root run on past `---`, where a
text read whole then falls back to PyYAML; read apart, its documents would load)."""


RS_CHUNK = 64 * 1024
"""Characters of documents yaml-rs reads in one parse at most (one document longer is read
alone): what a parse allocates, yaml-rs keeps for the rest of the process, so a file of
1,000 fixtures read whole held 6 MiB more than read a document at a time, and a parse per
document costs half as much again as one per file of twenty."""


def _rs_load(yaml_rs: ModuleType, text: str, count: int) -> Any:
    """yaml-rs's reading of `text`, `RS_CHUNK` of its documents at a time when the text is
    only documents between `---` markers (`_WHOLE_ONLY`; documents share nothing in YAML:
    each reads alike alone or beside others)."""
    # parse_datetime=False: YAML 1.2's core schema has no timestamps (and yaml-rs 0.1
    # would also turn *quoted* date-like strings into dates).
    if count < 2 or len(text) <= RS_CHUNK or _WHOLE_ONLY.search(text):
        return yaml_rs.loads(text, parse_datetime=False)
    cuts = [start for start, _ in _MARKER.spans(text)]
    if len(cuts) == count:  # what stands before the first marker is no document: it joins it
        cuts[0] = 0
    else:  # a first document without a marker
        cuts.insert(0, 0)
    if len(cuts) != count:
        return yaml_rs.loads(text, parse_datetime=False)
    ends = [*cuts[1:], len(text)]
    loaded: list[Any] = []
    first = 0  # the first document of the chunk being gathered
    for last, end in enumerate(ends):
        if last + 1 < count and ends[last + 1] - cuts[first] <= RS_CHUNK:
            continue  # the next document fits in this chunk too
        chunk = yaml_rs.loads(text[cuts[first] : end], parse_datetime=False)
        documents = last - first + 1
        if documents == 1:
            loaded.append(chunk)
        elif isinstance(chunk, list) and len(chunk) == documents:
            loaded.extend(chunk)
        else:
            raise ValueError("yaml-rs read a chunk of documents otherwise")  # PyYAML reads it
        first = last + 1
    return loaded


def check_shape(text: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH and aliases that expand past MAX_EXPANDED values.

    One pass over libyaml's events, which neither recurses nor expands aliases: it counts
    what the parsers, the validator and the mark recorder would walk, before they walk it.
    libyaml's own nesting limit (bundled with PyYAML 6.0.4 and later) can stop its scanner
    before the first event of a deep flow collection; the count is then made again with
    PyYAML's own parser, which has none, so the message and its place are evalward's on every
    PyYAML.
    """
    import yaml

    from evalward.resources.reading.yaml12 import CoreLoader  # lazy: see parse_documents

    try:
        _check_events(text, CoreLoader)
    except yaml.YAMLError as exc:
        if "nesting depth" not in str(exc):
            return  # a syntax error: the parser that follows words and locates it
        try:
            _check_events(text, yaml.SafeLoader)
        except yaml.YAMLError:
            return


def _check_events(text: str, loader: type[yaml.SafeLoader]) -> None:
    """`check_shape`'s count over the events `loader` parses; YAMLError as the parser raises.
    Each anchored node's size and height are kept, so that an alias counts as what it stands
    for: its values against MAX_EXPANDED, its nesting against MAX_DEPTH where it stands."""
    import yaml

    sizes: dict[str, tuple[int, int]] = {}
    stack: list[tuple[str | None, int, int]] = []
    plain = expanded = 0
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.AliasEvent):
            if any(anchor == event.anchor for anchor, _, _ in stack):
                raise _invalid(
                    f"the alias *{event.anchor} stands inside the value its anchor "
                    f"&{event.anchor} names: a value that holds itself, which no document can "
                    "give; write the inner value out",
                    event.start_mark,
                )
            size, height = sizes.get(str(event.anchor), (1, 0))
            expanded += size
            if expanded > MAX_EXPANDED + plain:
                raise _invalid(
                    f"aliases expand to more than {MAX_EXPANDED} values (an alias bomb?); "
                    "write the repeated values out, or alias fewer of them",
                    event.start_mark,
                )
            if len(stack) + height > MAX_DEPTH:
                raise _invalid(
                    f"collections nested more than {MAX_DEPTH} levels deep, through aliases; "
                    "flatten the document",
                    event.start_mark,
                )
        elif isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent):
            stack.append((event.anchor, 1, 1))
            if len(stack) > MAX_DEPTH:
                raise _invalid(
                    f"collections nested more than {MAX_DEPTH} levels deep; flatten the document",
                    event.start_mark,
                )
            continue
        elif isinstance(event, yaml.SequenceEndEvent | yaml.MappingEndEvent | yaml.ScalarEvent):
            if isinstance(event, yaml.ScalarEvent):
                anchor, size, height = event.anchor, 1, 0
            else:
                anchor, size, height = stack.pop()
            plain += 1
            if anchor is not None:
                sizes[anchor] = (size, height)
        else:
            continue
        if stack:  # what an alias, a scalar or a closed collection stands for counts in its parent
            parent, held, tallest = stack[-1]
            stack[-1] = (parent, held + size, max(tallest, height + 1))


def _tab_at(text: str, mark: yaml.Mark | yaml._yaml.Mark | None) -> str:
    """What to add where the parser stopped at a tab, which its words do not name."""
    if mark is None:
        return ""
    lines = text.split("\n")
    line = lines[mark.line] if 0 <= mark.line < len(lines) else ""
    if line[mark.column : mark.column + 1] != "\t":
        return ""
    return " (a tab: YAML indents with spaces, never tabs; replace it with spaces)"


def _misaligned(exc: yaml.MarkedYAMLError) -> str:
    """What to add where a line's indentation puts it in no block, which the parser's words
    ("did not find expected key") do not say: how far it is indented, and how far the block
    the parser was reading indents its keys or items."""
    block, line = exc.context_mark, exc.problem_mark
    if block is None or line is None:
        return ""
    at, since = f"line {line.line + 1}", f"from line {block.line + 1}"
    indented, blocks = counted(line.column, "space"), counted(block.column, "space")
    context, problem = exc.context, str(exc.problem)
    if context == "while parsing a block mapping" and problem == "did not find expected key":
        if line.column == block.column:
            return f" ({at} is indented as the keys of the mapping {since}, but is no `key: value`)"
        return (
            f" ({at} is indented {indented}, and the mapping it is in, {since}, indents its "
            f"keys {blocks}: YAML reads a block by its indentation, so give the keys of one "
            "mapping the same, and a value under its key more)"
        )
    if context == "while parsing a block collection" and "'-' indicator" in problem:
        where = (
            f"as the items of the list {since}, but does not start with `- `"
            if line.column == block.column
            else f"{indented}, and the list it is in, {since}, indents its items (`- `) {blocks}"
        )
        return (
            f" ({at} is indented {where}: indent a key of an item as its first key, after the "
            "`- `, or start a new item with `- `)"
        )
    return ""


def _invalid(problem: str, mark: yaml.Mark | yaml._yaml.Mark | None) -> YamlSyntaxError:
    """The error of invalid YAML, at `mark` (1-based) when the parser gave one."""
    if mark is None:
        return YamlSyntaxError(f"invalid YAML: {problem}", None, None)
    return YamlSyntaxError(f"invalid YAML: {problem}", mark.line + 1, mark.column + 1)


def _implicit_first_line(text: str) -> int | None:
    """The line of a first document that has no `---` marker, if there is one."""
    found = _first_content(text, 0, 0)
    if found is None:
        return None
    line, start = found
    return None if _MARKER.here.match(text, start) or text.startswith("...", start) else line


def _document_starts(text: str) -> list[int]:
    """The first content line after each `---` marker (a marker never occurs inside a scalar)."""
    starts = []
    line, counted = 1, 0
    for start, marker_end in _MARKER.spans(text):
        line += text.count("\n", counted, start)
        counted = start
        end = text.find("\n", marker_end)
        rest = text[marker_end : end if end >= 0 else len(text)].strip()
        below = end >= 0 and (not rest or rest.startswith("#"))  # none on the marker's line
        found = _first_content(text, end + 1, line) if below else None
        starts.append(found[0] if found is not None else line)
    return starts


def _first_content(text: str, position: int, before: int) -> tuple[int, int] | None:
    """(line, offset) of the first line from `position` that is not blank, a comment or a
    directive; lines are numbered on from `before`. Scans without copying the text."""
    line = before
    while position <= len(text):
        newline = text.find("\n", position)
        end = newline if newline >= 0 else len(text)
        line += 1
        stripped = text[position:end].strip()
        if stripped and not stripped.startswith(("#", "%")):
            return line, position
        if newline < 0:
            return None
        position = newline + 1
    return None


def _record_marks(node: yaml.Node, path: PathKey, marks: dict[PathKey, tuple[int, int]]) -> None:
    import yaml

    marks.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                key = str(key_node.value)
                line = key_node.start_mark.line + 1
                if key in seen:
                    raise YamlSyntaxError(
                        f"invalid YAML: duplicate key {key!r} (first at line {seen[key]})",
                        line,
                        key_node.start_mark.column + 1,
                    )
                seen[key] = line
                marks.setdefault((*path, key), (line, key_node.start_mark.column + 1))
                _record_marks(value_node, (*path, key), marks)  # the value's mark stays the key's
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _record_marks(item, (*path, index), marks)
