"""The docs stay whole: no merge leaves a conflict marker, and every link resolves.

A merge once left conflict markers in a page and the next one cut the page to a sixth of
itself; the sections other pages linked to were gone and nothing failed. These tests read
every file git tracks, so such a merge fails here: a marker anywhere, a link from a page (or
a docstring, a comment, a message naming `docs/PAGE.md#section`) to a file that is not there
or to a heading its page no longer has.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from pathlib import Path, PurePosixPath

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
# This file names made-up pages in its own examples.
THIS_FILE = Path(__file__).resolve().relative_to(ROOT).as_posix()

# Built from parts so that this file holds no marker line itself.
MARKER_LINE = re.compile(rb"^(?:%s|%s|%s)(?: |$)" % (b"<" * 7, b">" * 7, rb"\|" * 7), re.MULTILINE)
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
SETEXT_UNDERLINE = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")
HTML_ANCHOR = re.compile(r"""<a\s[^>]*\b(?:id|name)\s*=\s*["']([^"']+)["']""", re.IGNORECASE)
# `[text](target "title")`; the text may span lines and hold one level of brackets.
INLINE_LINK = re.compile(
    r"\[(?:[^\[\]]|\[[^\[\]]*\])*\]"  # the text
    r"\(\s*<?([^()\s<>]*)>?(?:\s+\"[^\"]*\")?\s*\)"  # (target "title")
)
REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$", re.MULTILINE)
# A page's section named outside markdown: `docs/mcp.md#bounds` in a docstring or a message.
NAMED_SECTION = re.compile(r"((?:[\w.-]+/)*[\w.-]+\.md)#([\w-]+)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def tracked_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
    ).stdout
    return [name for name in listed.decode("utf-8", "surrogateescape").split("\0") if name]


def text_of(name: str) -> str | None:
    path = ROOT / name
    if not path.is_file():
        return None
    data = path.read_bytes()
    if b"\0" in data:
        return None
    return data.decode("utf-8", "replace")


def prose_lines(markdown: str) -> list[str]:
    """The page's lines with fenced code blanked (kept as empty lines, so numbers hold)."""
    lines = markdown.splitlines()
    fence: str | None = None
    for number, line in enumerate(lines):
        opened = FENCE.match(line)
        if fence is None and opened:
            fence = opened.group(1)
            lines[number] = ""
        elif fence is not None:
            if line.strip().startswith(fence[0] * len(fence)) and not line.strip().strip(fence[0]):
                fence = None
            lines[number] = ""
    return lines


def without_inline_code(line: str) -> str:
    return re.sub(r"(`+)(?:(?!\1).)+?\1", "", line)


def heading_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text lower-cased, punctuation dropped."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text)
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors_of(markdown: str) -> set[str]:
    lines = prose_lines(markdown)
    headings: list[str] = []
    for number, line in enumerate(lines):
        if match := ATX_HEADING.match(line):
            headings.append(match.group(1))
        elif (
            SETEXT_UNDERLINE.match(line)
            and number > 0
            and lines[number - 1].strip()
            and not lines[number - 1].lstrip().startswith(("|", "-", "*", ">", "#"))
            and not SETEXT_UNDERLINE.match(lines[number - 1])
        ):
            headings.append(lines[number - 1].strip())
    anchors: set[str] = set()
    seen: Counter[str] = Counter()
    for heading in headings:
        slug = heading_slug(heading)
        anchors.add(f"{slug}-{seen[slug]}" if seen[slug] else slug)
        seen[slug] += 1
    anchors.update(HTML_ANCHOR.findall(markdown))
    return anchors


def links_of(markdown: str) -> list[tuple[int, str]]:
    """Every link target of a page's prose, with the line it starts on."""
    lines = [without_inline_code(line) for line in prose_lines(markdown)]
    prose = re.sub(r"<!--.*?-->", lambda m: "\n" * m[0].count("\n"), "\n".join(lines), flags=re.S)
    found = [
        (prose.count("\n", 0, match.start(1)) + 1, match.group(1))
        for pattern in (INLINE_LINK, REFERENCE_DEFINITION)
        for match in pattern.finditer(prose)
    ]
    return sorted(found)


class Pages:
    """Anchors of the repository's markdown pages, read once each."""

    def __init__(self) -> None:
        self._anchors: dict[str, set[str]] = {}

    def anchors(self, name: str) -> set[str]:
        if name not in self._anchors:
            self._anchors[name] = anchors_of((ROOT / name).read_text(encoding="utf-8"))
        return self._anchors[name]


def resolve(source: str, target: str) -> str:
    base = PurePosixPath("/") if target.startswith("/") else PurePosixPath("/", source).parent
    parts: list[str] = []
    for part in (base / target.lstrip("/")).parts[1:]:
        if part == "..":
            if parts:
                parts.pop()
        elif part != ".":
            parts.append(part)
    return "/".join(parts)


def broken_link(pages: Pages, source: str, target: str) -> str | None:
    """Why a link from `source` to `target` leads nowhere, or None when it resolves."""
    if SCHEME.match(target) or target.startswith("//"):
        return None
    path, _, fragment = target.partition("#")
    name = resolve(source, path) if path else source
    where = ROOT / name
    if not where.exists():
        return f"{name} does not exist"
    on_page = where.is_file() and name.endswith(".md")
    if fragment and on_page and fragment not in pages.anchors(name):
        return f"{name} has no section #{fragment}"
    return None


def test_no_tracked_file_holds_a_merge_conflict_marker() -> None:
    marked = []
    for name in tracked_files():
        path = ROOT / name
        if not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data:
            continue
        for match in MARKER_LINE.finditer(data):
            line = data.count(b"\n", 0, match.start()) + 1
            marked.append(f"{name}:{line}")
    assert not marked, f"merge conflict markers left in: {marked}"


def test_every_link_of_every_page_leads_to_a_file_and_section_that_exist() -> None:
    pages = Pages()
    broken = []
    for name in tracked_files():
        if not name.endswith(".md") or (markdown := text_of(name)) is None:
            continue
        for line, target in links_of(markdown):
            if why := broken_link(pages, name, target):
                broken.append(f"{name}:{line}: ({target}): {why}")
    assert not broken, "\n".join(broken)


def test_every_section_code_and_config_name_exists() -> None:
    """A docstring, comment, message or help text naming `docs/PAGE.md#section` is a link too."""
    pages = Pages()
    broken = []
    for name in tracked_files():
        if name.endswith(".md") or name == THIS_FILE or (text := text_of(name)) is None:
            continue
        for match in NAMED_SECTION.finditer(text):
            page, fragment = match.groups()
            candidates = [resolve(name, page), page]
            existing = [c for c in candidates if (ROOT / c).is_file()]
            line = text.count("\n", 0, match.start()) + 1
            if not existing:
                broken.append(f"{name}:{line}: {page} does not exist")
            elif all(fragment not in pages.anchors(c) for c in existing):
                broken.append(f"{name}:{line}: {existing[0]} has no section #{fragment}")
    assert not broken, "\n".join(broken)


def test_every_docs_page_is_linked_from_another_page() -> None:
    """A page no other page links to is one a reader never finds, and a merge can drop it."""
    names = [name for name in tracked_files() if name.endswith(".md")]
    linked: set[str] = set()
    for name in names:
        if (markdown := text_of(name)) is None:
            continue
        for _, target in links_of(markdown):
            path = target.partition("#")[0]
            if path and not SCHEME.match(target) and resolve(name, path) != name:
                linked.add(resolve(name, path))
    orphans = [n for n in names if n.startswith("docs/") and n.count("/") == 1 and n not in linked]
    assert not orphans, orphans


def test_the_checker_finds_what_it_must() -> None:
    """The checks above read what GitHub renders, not what merely looks like a link."""
    page = "\n".join(
        [
            "# Agents evalward can run",
            "## Bring-your-own: `runtime.command`",
            "## The model proxy: agents never hold a provider key",
            "## Example",
            "## Example",
            "```yaml",
            "# not a heading",
            "see [a](gone.md)",
            "```",
            "Read [the",
            "proxy](#the-model-proxy-agents-never-hold-a-provider-key) and `[x](code.md)`.",
            "<!-- [hidden](hidden.md) -->",
            '[ref]: other.md#there "title"',
        ]
    )
    assert anchors_of(page) == {
        "agents-evalward-can-run",
        "bring-your-own-runtimecommand",
        "the-model-proxy-agents-never-hold-a-provider-key",
        "example",
        "example-1",
    }
    assert links_of(page) == [
        (11, "#the-model-proxy-agents-never-hold-a-provider-key"),
        (13, "other.md#there"),
    ]
    marker = b"<" * 7 + b" HEAD\n"
    assert MARKER_LINE.search(b"text\n" + marker)
    assert not MARKER_LINE.search(b"Title\n=======\n")
    assert resolve("docs/mcp.md", "../README.md") == "README.md"
    assert resolve("docs/mcp.md", "agent-protocols.md") == "docs/agent-protocols.md"
