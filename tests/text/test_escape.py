"""Untrusted text in each place it is shown: GitHub markdown, a terminal, a workflow command,
report.html."""

from __future__ import annotations

import unicodedata

import pytest

from action.test_secrets_and_injection import most_marks
from evalward.action.workflow import command
from evalward.report.html import Page, html_chunks
from evalward.report.markdown import pieces_md
from evalward.resources.common import Severity
from evalward.rundata.results import FixtureResult, Status, Verdict
from evalward.rundata.trace import Trace
from evalward.text import escaping
from evalward.text.escaping import TERMINAL

pytestmark = pytest.mark.unit

RLO = "\u202e"
BIDI = [chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))]


@pytest.mark.parametrize("control", BIDI)
def test_every_bidi_control_is_shown_by_name_in_every_sink(control: str) -> None:
    name = f"U+{ord(control):04X}"
    text = f"pay {control}eulav{control} now"
    for shown in (
        escaping.inline(text),
        escaping.block(text),
        escaping.terminal_inline(text),
        escaping.terminal_block(text),
        command("error", text, title=text),
    ):
        assert control not in shown
        assert shown.count(name) == (4 if shown.startswith("::") else 2), shown
    assert f"&lt;{name}&gt;" in escaping.inline(text), "markdown shows the name, not a tag"


def test_right_to_left_marks_of_ordinary_text_are_kept() -> None:
    text = "שלום\u200f (hello) \u200eok\u061c"
    assert escaping.inline(text) == text
    assert escaping.terminal_inline(text) == text


def test_links_and_mentions_are_neutralised_for_github_and_left_intact_on_a_terminal() -> None:
    text = "see https://example.com/x and www.example.org, ask @octocat | done"
    github = escaping.inline(text)
    assert "https://example.com" not in github and "https:/\u200b/example.com/x" in github
    assert "www\u200b." in github and "@\u200boctocat" in github
    terminal = escaping.terminal_inline(text)
    assert terminal == "see https://example.com/x and www.example.org, ask @octocat \\| done"
    assert "\u200b" not in escaping.terminal_block(text)
    assert "@\u200boctocat" in escaping.block(text)


LATEX = r"$\Huge\color{green}\textsf{✅ evalward: every affected Eval passes}$ $$\color{white}x$$"
"""What GitHub would draw as MathJax after markdown: a huge green verdict, hidden text."""


def test_every_dollar_is_literal_in_github_markdown_and_kept_on_a_terminal() -> None:
    github = escaping.inline(LATEX)
    assert "$" not in github.replace("<span>$</span>", ""), github
    assert github.startswith(r"<span>$</span>\\Huge\\color{green}"), github
    assert github.count("<span>$</span>") == LATEX.count("$") == 6
    assert escaping.terminal_inline(LATEX) == LATEX
    costs = escaping.inline("cost $0.000123 ≤ $0.05")
    assert costs == "cost <span>$</span>0.000123 ≤ <span>$</span>0.05"


def test_a_dollar_beside_a_code_piece_opens_no_math() -> None:
    """`$` + code span + `$` is GitHub's other inline math form ($`…`$)."""
    said = pieces_md((("tool $", False), ("x^2", True), ("$ called", False)), escaping.GITHUB)
    assert said == "tool <span>$</span>`x^2`<span>$</span> called"
    terminal = pieces_md((("tool $", False), ("x^2", True), ("$ called", False)), TERMINAL)
    assert terminal == "tool $`x^2`$ called"


def test_the_terminal_sink_shows_control_characters_by_name() -> None:
    text = "ok\x1b]0;pwned\x07\rover\ttab\nline"
    block = escaping.terminal_block(text)
    assert "\x1b" not in block and "\x07" not in block and "\r" not in block
    assert "<U+001B>]0;pwned<U+0007><U+000D>over\ttab\nline" in block
    assert "<U+001B>" in escaping.terminal_inline(text)


def test_github_markdown_shows_control_characters_by_name_too() -> None:
    """A NUL is text GitHub's API may refuse to store: one in an agent's reply could keep the whole
    comment from being posted."""
    text = "ok\x00 and\x1b[31m red\ttab\nline"
    block = escaping.block(text)
    assert "\x00" not in block and "\x1b" not in block
    assert "ok<U+0000> and<U+001B>[31m red\ttab\nline" in block
    assert escaping.inline(text) == "ok&lt;U+0000&gt; and&lt;U+001B&gt;\\[31m red tab line"
    assert escaping.block("one\r\ntwo\rthree") == "```text\none\ntwo<U+000D>three\n```"


def html_page(said: str, output: str, reason: str) -> str:
    """report.html of one failed run whose message, output and the run's reason are these."""
    result = FixtureResult(
        eval="e",
        fixture="f",
        side="head",
        status=Status.failed,
        score=0.0,
        verdict=Verdict.failed,
        severity=Severity.low,
        message=said,
        output=output,
        trace=Trace(),
    )
    page = Page(result="fail", reason=reason, evals=[], fixtures=[result], private=set())
    return "".join(html_chunks(page))


def test_report_html_shows_bidi_controls_by_name() -> None:
    page = html_page(f"said {RLO}gnihtemos", f"out {RLO}tuo", f"reason {RLO}x")
    assert RLO not in page
    assert "said &lt;U+202E&gt;gnihtemos" in page and "reason &lt;U+202E&gt;x" in page


ZALGO = "Z" + "\u0336\u0301\u0317\u0353\u0348\u0358\u0489" * 6 + "algo"
"""A letter carrying 42 combining marks: drawn over the lines above and below it."""


def test_a_stack_of_combining_marks_is_cut_and_counted_in_every_sink() -> None:
    text = f"pay {ZALGO} now"
    for shown in (
        escaping.inline(text),
        escaping.block(text),
        escaping.code_span(text),
        escaping.terminal_inline(text),
        escaping.terminal_block(text),
        escaping.log_line(text),
        command("error", text, title=text),
    ):
        assert most_marks(shown) == escaping.MAX_MARKS, shown
        assert "+38 combining marks" in shown and "algo now" in shown
    # marks past plane 0 (musical symbols' combining tremolos) are counted as well
    assert escaping.reveal_marks("𝅘" + "\U0001d167" * 9) == "𝅘" + "\U0001d167" * 4 + (
        "<+5 combining marks>"
    )


def test_the_marks_of_written_languages_are_kept() -> None:
    for text in ("Tiếng Việt: ệ ở ữ", "שָׁלוֹם בְּרֵאשִׁית", "हिन्दी क्षत्रिय", "ผู้ที่ไม่ได้"):
        assert escaping.reveal_controls(text) == text
        assert unicodedata.normalize("NFD", text) == escaping.reveal_marks(
            unicodedata.normalize("NFD", text)
        )


def test_report_html_cuts_a_stack_of_marks() -> None:
    page = html_page(f"said {ZALGO}", ZALGO, ZALGO)
    assert most_marks(page) == escaping.MAX_MARKS
    assert page.count("+38 combining marks") >= 3


def test_text_in_the_job_log_starts_no_runner_command() -> None:
    line = escaping.log_line("a\n::set-output name=x::y ##[add-mask]z\r\x1b[31m")
    assert line == "a<U+000A>::set-output name=x::y ##\u200b[add-mask]z<U+000D><U+001B>[31m"
    assert escaping.log_line(command("error", "##[stop-commands]t")).startswith("::error::")
    trace = escaping.log_text("Traceback\n  ::stop-commands::t\nValueError: ##[warning]x\n")
    for shown in trace.splitlines():
        assert not shown.lstrip().startswith("::") and "##[" not in shown, shown
    assert len(trace.splitlines()) == 3


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("# ✅ passes", "\\# ✅ passes"),
        ("###### h6", "\\###### h6"),
        ("- item", "\\- item"),
        ("+ item", "\\+ item"),
        ("===", "\\==="),
        ("---", "\\---"),
        ("-", "\\-"),
        ("1.00 → 0.80 (-0.20)", "1.00 → 0.80 (-0.20)"),
        ("-0.20", "-0.20"),
        ("#hashtag", "#hashtag"),
        ("= not an underline", "= not an underline"),
        ("1. first", "1\\. first"),
        ("12) first", "12\\) first"),
        ("3/6 fixtures pass", "3/6 fixtures pass"),
        ("a - b # c 1. d", "a - b # c 1. d"),
    ],
)
def test_what_opens_a_block_where_a_line_starts_is_text_in_github_markdown(
    text: str, shown: str
) -> None:
    """Escaped where a line starts only: inside a sentence nothing opens a block."""
    assert escaping.inline(text) == shown
    assert escaping.terminal_inline(text) == text
