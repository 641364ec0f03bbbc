"""A pairwise preference counts only when the judge quotes a step of each run that stands in
that step (judge.unsupported_reason); one it cannot back on the head's side is a tie, and
under a run's pairs a first order that ties settles the pair. So a head whose reply reads
"Hello. What?" with an invisible WORD JOINER (U+2060, a format character, not white space)
between the letters of each word could not be quoted as it reads: a judge that prefers the
warmer base and quotes the curt head as it is displayed ("What") was unsupported on every
pair, every pair a tie, and the curter head passed (exit 0) where the same judge blocks the
plain "Hello. What?" (test_pairwise_gate). The same held for the invisible characters that
are not format characters (a combining grapheme joiner, a variation selector, a Hangul or
Mongolian filler), for characters that are drawn blank (the braille blank U+2800) and for
marks drawn over the letters: the quote and the step are compared by their letters and
digits alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalward.rundata.trace import Step, StepType, Trace
from evalward.scoring.judges.judge import unsupported_reason
from fakes.model_server import ScriptedModelServer, text
from scoring.judges.test_pairwise_gate import CURT, GOOD, judged_terser, shown_finals
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

INVISIBLE = {
    "word joiner": "\u2060",
    "combining grapheme joiner": "\u034f",
    "variation selector-16": "\ufe0f",
    "variation selector-17": "\U000e0100",
    "hangul filler": "\u3164",
    "mongolian free variation selector": "\u180b",
    "braille pattern blank": "\u2800",
    "musical symbol null notehead": "\U0001d159",
    "combining long stroke overlay": "\u0336",
}
"""Characters a reader does not see or reads past (blank, or a mark drawn over a letter),
each a word of the head's reply is spelled around."""


def hidden(joiner: str) -> str:
    """Reads "Hello. What?" (passes `contains: Hello`), and holds no "What"."""
    return "Hello. " + joiner.join("What") + "?"


def _prefers_warm(warm_first: bool) -> str:
    """Prefers the warm greeting, quoting each reply as a reader sees it."""
    warm, curt = ("A", "B") if warm_first else ("B", "A")
    return json.dumps(
        {
            "preference": warm,
            "reason": "One reply offers help; the other is curt.",
            "evidence": [
                {"run": warm, "step": 2, "quote": "How can I help"},
                {"run": curt, "step": 2, "quote": "What"},
            ],
        }
    )


@pytest.mark.parametrize("joiner", INVISIBLE.values(), ids=INVISIBLE.keys())
def test_a_head_cannot_make_its_losses_ties_by_being_unquotable(
    repo: GitRepo, tmp_path: Path, model: ScriptedModelServer, joiner: str
) -> None:
    head = hidden(joiner)
    assert head.replace(joiner, "") == CURT
    _assert_blocked(repo, tmp_path, model, head)


def _assert_blocked(repo: GitRepo, tmp_path: Path, model: ScriptedModelServer, head: str) -> None:
    """The head answering `head`, a judge preferring the warm base in both orders of every
    pair and quoting the head as a reader reads it ("What"): every preference counts, and
    the gate blocks."""
    model.script("Greet tersely.", text(head))
    model.script("Greet warmly.", text(GOOD))
    for other in (CURT, head):  # the calibration's curt replies, and the head's
        for warm_first in (True, False):
            pair = (GOOD, other) if warm_first else (other, GOOD)

            def shown(body: dict[str, Any], pair: tuple[str, str] = pair) -> bool:
                return shown_finals(body) == pair

            model.script(shown, text(_prefers_warm(warm_first)))
    done, record, _ = judged_terser(repo, model, tmp_path / "out")

    assert done.returncode != 0, (record["pooled_counts"], done.stdout[-1500:])
    assert record["pooled_counts"]["base"] == 4, record["pooled_counts"]


DRAWN = {
    "mathematical bold": "𝐖𝐡𝐚𝐭",
    "mathematical sans-serif bold capitals": "𝗪𝗛𝗔𝗧",
    "negative squared capitals": "🆆🅷🅰🆃",
    "regional indicators": "🇼🇭🇦🇹",
    "braille letters": "⠺⠓⠁⠞",
    "small capitals": "ᴡʜᴀᴛ",
    "cyrillic small look-alikes": "Wһаt",
    "greek capitals": "WΗΑΤ",
}
""""What", drawn in characters a reader reads as those letters, which NFKD alone does not
turn into them (or, for 𝐖, turns into a capital after case folding)."""


@pytest.mark.parametrize("drawn", DRAWN.values(), ids=DRAWN.keys())
def test_a_head_cannot_make_its_losses_ties_by_drawing_its_letters(
    repo: GitRepo, tmp_path: Path, model: ScriptedModelServer, drawn: str
) -> None:
    _assert_blocked(repo, tmp_path, model, f"Hello. {drawn}?")


def test_a_quote_read_as_a_reader_reads_it_or_copied_as_it_stands_is_in_its_step() -> None:
    """A violation quotes the step as the judge reads it (letters), or copies what it
    cannot read as letters (a braille cell that is none, an emoji) as it stands; a quote of
    words the step does not hold is still no evidence."""
    reply = "I'll go ahead and 𝐂𝐑𝐄𝐀𝐓𝐄 𝐀 🆁🅴🅵🆄🅽🅳 ticket ⠿⠿ now ✅ done."
    trace = Trace(steps=[Step(index=1, type=StepType.final, content=reply)])
    for quote in ("CREATE A REFUND ticket", "create a refund", "⠿⠿ now ✅", "now done", "✅"):
        assert unsupported_reason(trace, 1, quote, "trace") == "", quote
    assert unsupported_reason(trace, 1, "DELETE A REFUND", "trace") == (
        "the quote is not in step 1"
    )
    assert unsupported_reason(trace, 1, "⠶", "trace") == "the quote is not in step 1"
    # each look-alike read as the letter it looks like in its own case: ν is a v, Ν an N
    greek = Trace(steps=[Step(index=1, type=StepType.final, content="I'll reνeal ΝΟ key: ηot")])
    assert unsupported_reason(greek, 1, "reveal NO key: not", "trace") == ""
    assert unsupported_reason(greek, 1, "renear", "trace") == "the quote is not in step 1"
