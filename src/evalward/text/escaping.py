"""Make untrusted text (agent output, fixture text, judge prose) inert where it is shown.

The comment is shown in two places, each with its own pair of escapes (a `Sink`):

- `GITHUB`: markdown that GitHub renders (the PR comment, the job summary, comment.md).
  Agent output must not ping people, inject HTML, close our `<details>`, forge links, draw
  math, or fake evalward's own sections. Inline text is HTML-escaped and has markdown syntax,
  autolinks (every `://` and `www.`, whatever precedes it), every `@` and every `$`
  neutralised; blocks go into a code fence longer than any backtick run inside them.
- `TERMINAL`: the same markdown printed as text by the command line. Nothing renders it, so
  nothing is a link or a mention and a URL must survive being copied: text stays as it is,
  but for `|` (which would shift a table's columns) and control characters (an escape
  sequence would drive the terminal).

Both show bidirectional controls by name (`reveal_bidi`), and other control characters too:
an escape sequence would drive a terminal, and a NUL is text GitHub's API may refuse to
store, so one in an agent's reply could keep the whole comment from being posted. A
character's combining marks past the first few are counted, not drawn (`reveal_marks`).

GitHub Actions workflow commands (`::error file=…::message`) have escapes of their own
(`command_data`, `command_property`): a message cannot start a new command line. Every other
line of a job's log is text (`log_line`): the runner also obeys its older form, `##[name]…`,
anywhere in a line that is not a command, so that form is broken and the text kept on its
line.

Redaction (`security.py`) must find a secret in each of these escaped forms, so they live
here, below both the reports and logs that apply them and the redactor. An escape that the
text around a character decides (`GH-` before a digit, `://`, `www.`, `##[`) inserts a
zero-width space (`ZERO_WIDTH`) and nothing else: it can land inside a secret written right
after such text, so the redactor reads through one between any two characters.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from itertools import chain

from evalward.errors import printable as printable
from evalward.text.cuts import hidden

UNSHOWABLE = "backslashreplace"
"""How a character UTF-8 cannot hold is written: a file name's byte that is not UTF-8 (a
surrogate, `os.fsdecode`) that reached a text unescaped becomes `\\udcNN`, never a crash."""

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_REFERENCE = re.compile(r"(?i)(?:#|\bGH-)(?=[0-9])")
"""What GitHub turns into a link to an issue or pull request outside code, and a "mentioned"
event on it: `#123`, `GH-123`, `owner/repo#123`; a zero-width space before the number keeps
the text and breaks the reference."""
ZERO_WIDTH = "\u200b"
"""What an escape inserts where the text around a character decides (`GH-` before a
digit, `://`, `www.`, `##[`): the one character redaction reads through (`security.py`),
for it can land inside a secret."""
_BLOCK_START = re.compile(
    r"^(?:#{1,6}(?=[ \t]|$)|[+-](?=[ \t]|$)|[0-9]{1,9}(?=[.)](?:[ \t]|$))|[=-](?=[= \t-]*$))"
)
"""What opens a block where a line starts (a heading `# `, a list item `- `, `+ `, `1. `,
`1) `, a line of `=` or `-` that underlines the one above or draws a rule): a problem is
said `path:line: …`, one list item each, and a file named `# ✅ every affected Eval
passes.yaml` was a heading in it. A backslash before the punctuation keeps it as text; what
opens nothing (`1.00`, `-0.20`, `#123`) is left as it reads."""


def _unblocked(match: re.Match[str]) -> str:
    opener = match[0]
    return opener + "\\" if opener[0].isdigit() else "\\" + opener


_AUTOLINK = re.compile(r"(?i)://|www\.")
"""What GitHub turns into a link by itself (`https://…`, `ftp://…`, `www.…`), wherever it
stands: github.com's parser links an address glued to a digit or `_` (`2https://…`,
`my_www.…`), so no word boundary is asked for. A zero-width space before its last character
keeps the text readable and unlinked."""
_DOLLAR = "<span>$</span>"
"""A literal `$` in GitHub markdown, the form GitHub's docs give ("Writing mathematical
expressions"). GitHub renders `$…$` and `$$…$$` outside code as MathJax after markdown, so a
backslash escape, which markdown removes first, does not stop it: agent text could draw a
huge green "every Eval passes" or hide words in white, and evalward's own "cost $0.01 ≤
$0.05" would turn into math."""
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""C0 and C1 controls but tab and newline: ESC starts a sequence the terminal obeys, CR
overwrites the line shown."""


def reveal_bidi(text: str) -> str:
    """Bidirectional embedding, override and isolate controls (U+202A–U+202E, U+2066–U+2069)
    replaced by their names, e.g. `<U+202E>`.

    They change the order text is displayed in, not the text: an agent reply carrying U+202E
    shows a reviewer something other than what the agent said, and one left open runs on into
    the text after it — evalward's own verdict. They are shown by name rather than dropped:
    dropping would silently change what the reviewer reads, while the name shows that a
    control was there and where, which is itself worth seeing (the "Trojan Source" attack).
    The marks U+200E, U+200F and U+061C are kept: ordinary right-to-left text uses them, and
    a mark cannot reverse a run of letters, only place the neutral characters beside it.
    """
    if text.isascii():  # none of them is ASCII: most texts need no search (report.html's data)
        return text
    return _BIDI.sub(lambda m: f"<U+{ord(m[0]):04X}>", text)


MAX_MARKS = 4
"""Combining marks one character may carry as it is drawn: written text stacks a few
(Vietnamese two, pointed Hebrew up to four or five counting cantillation); "Zalgo" text
stacks dozens, drawn above and below the line over the lines around it, evalward's own
verdict among them."""


def reveal_marks(text: str) -> str:
    """Each run of more than `MAX_MARKS` combining marks cut to its first `MAX_MARKS`,
    followed by how many more there were (`<+37 combining marks>`): what the marks cover is
    readable again, and that they were there is shown, as a control's name shows it."""
    if text.isascii():
        return text
    in_plane_0, in_every_plane = _stacked_marks()
    stacked = in_every_plane if _BEYOND_PLANE_0.search(text) else in_plane_0
    return stacked.sub(
        lambda m: f"{m[0][:MAX_MARKS]}<+{len(m[0]) - MAX_MARKS} combining marks>", text
    )


_BEYOND_PLANE_0 = re.compile("[\U00010000-\U0010ffff]")


@cache
def _stacked_marks() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A run of more than `MAX_MARKS` non-spacing or enclosing marks (Unicode's `Mn`, `Me`),
    built once from this Python's Unicode tables (marks stand in planes 0, 1 and 14 only):
    of plane 0's marks alone, and of them all. The first is a table `re` looks a character
    up in at once, the second a list of ranges it walks: 20 times slower on a text that has
    no character past plane 0 to find."""
    ranges: list[tuple[int, int]] = []
    for code in chain(range(0x300, 0x20000), range(0xE0000, 0xE1000)):
        if unicodedata.category(chr(code)) not in ("Mn", "Me"):
            continue
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))

    def stack(of: list[tuple[int, int]]) -> re.Pattern[str]:
        marks = "".join(f"{chr(first)}-{chr(last)}" for first, last in of)
        return re.compile(f"[{marks}]{{{MAX_MARKS + 1},}}")

    return stack([r for r in ranges if r[1] < 0x10000]), stack(ranges)


def reveal_controls(text: str) -> str:
    """`reveal_bidi`, `reveal_marks`, and the other control characters but tab and newline by
    name: a line ending CRLF keeps its newline alone."""
    text = text.replace("\r\n", "\n")
    return _CONTROL.sub(lambda m: f"<U+{ord(m[0]):04X}>", reveal_marks(reveal_bidi(text)))


def _one_line(text: object, limit: int) -> str:
    """`text` on one line in at most `limit` characters, its secrets hidden before a cut
    (`cuts.hidden`)."""
    value = " ".join(str(text).split())
    if len(value) > limit:
        value = " ".join(hidden(value).split())
    return value[: limit - 1] + "…" if len(value) > limit else value


def inline(text: object, limit: int = 300) -> str:
    """One line of inert GitHub markdown: safe in a table cell, a sentence, or where a line
    (a list item, a quote, a paragraph) starts."""
    value = html.escape(reveal_controls(_one_line(text, limit)), quote=False)
    value = _MD_SPECIAL.sub(r"\\\1", value)
    value = _BLOCK_START.sub(_unblocked, value)
    value = _AUTOLINK.sub(lambda m: m[0][:-1] + ZERO_WIDTH + m[0][-1], value)
    value = _REFERENCE.sub(lambda m: m[0] + ZERO_WIDTH, value)
    # every `@`: before a letter it is a mention, and GitHub links `name@domain` whatever the
    # domain starts with (`billing@_evil.example`)
    value = value.replace("@", "@" + ZERO_WIDTH)
    # last: the span is HTML that nothing above may escape
    return value.replace("$", _DOLLAR)


def block(text: object, limit: int = 4000) -> str:
    """A fenced code block that no content can close early, and that pings nobody."""
    return _fenced(unmention(reveal_controls(_cut(text, limit))))


def code_span(text: object, limit: int = 80) -> str:
    """One line as inline code (a tool's name): between backtick runs longer than any inside
    it, where GitHub renders no markup, link or mention; the same on a terminal."""
    value = reveal_controls(_one_line(text, limit))
    longest = max((len(m) for m in re.findall(r"`+", value)), default=0)
    fence = "`" * (longest + 1)
    padded = f" {value} " if value.startswith("`") or value.endswith("`") or not value else value
    return f"{fence}{padded}{fence}"


def unmention(text: str) -> str:
    """`@name` that GitHub shows as written but does not turn into a mention."""
    return _MENTION.sub("@" + ZERO_WIDTH, text)


def terminal_inline(text: object, limit: int = 300) -> str:
    """One line of the comment as printed on a terminal: links and mentions as they are."""
    return reveal_controls(_one_line(text, limit)).replace("|", "\\|")


def terminal_block(text: object, limit: int = 4000) -> str:
    """A fenced block of the comment as printed on a terminal."""
    return _fenced(reveal_controls(_cut(text, limit)))


def _cut(text: object, limit: int) -> str:
    """`text` in at most `limit` characters and a line that says it was cut, its secrets
    hidden before the cut (`cuts.hidden`)."""
    value = str(text)
    if len(value) > limit:
        value = hidden(value)
    return value[:limit] + "\n… [truncated]" if len(value) > limit else value


def _fenced(value: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+", value)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{value}\n{fence}"


@dataclass(frozen=True)
class Sink:
    """Where the comment is shown, and the escapes (`md`, `code`) that make text inert there."""

    inline: Callable[..., str]
    block: Callable[..., str]


GITHUB = Sink(inline, block)
TERMINAL = Sink(terminal_inline, terminal_block)


def command_data(value: str) -> str:
    """A workflow command's message: `%`, CR and LF encoded as the runner expects."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def command_property(value: str) -> str:
    """A workflow command's property value (`file=`, `title=`): also `:` and `,` encoded."""
    return command_data(value).replace(":", "%3A").replace(",", "%2C")


def log_line(text: object) -> str:
    """Text as one line of a job's log that starts no runner command: line breaks and other
    controls shown by name (a line break would start a line the text chooses, and one that
    starts with `::` is a command), and a zero-width space inside each `##[`, the runner's
    older command form it obeys anywhere in a line. Every line the action logs passes here:
    one that `command` made stays one command (it has no line break, and `##[` inside it is
    shown, not obeyed)."""
    value = reveal_controls(str(text)).replace("\n", "<U+000A>")
    return value.replace("##[", "##" + ZERO_WIDTH + "[")


def log_text(text: str) -> str:
    """Lines of text from outside in a job's log, none a runner command (a traceback): each a
    `log_line`, and `::` broken wherever it stands."""
    return "\n".join(
        log_line(line).replace("::", ":" + ZERO_WIDTH + ":") for line in text.splitlines()
    )
