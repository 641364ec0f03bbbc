"""Letters drawn with other characters (`text/lookalikes.py`): each read as the one Latin
letter it looks like, in the case it looks like it in, and nothing else mapped."""

from __future__ import annotations

import string

import pytest

from evalward.text.lookalikes import CAPITAL_LOOKALIKES, LOOKALIKES

pytestmark = pytest.mark.unit


def test_every_look_alike_is_read_as_one_small_latin_letter_or_a_capital_one() -> None:
    assert set(LOOKALIKES.values()) <= set(string.ascii_lowercase)
    assert set(CAPITAL_LOOKALIKES.values()) <= set(string.ascii_uppercase)
    assert not any(chr(code).isascii() for code in (*LOOKALIKES, *CAPITAL_LOOKALIKES))


@pytest.mark.parametrize(
    ("drawn", "read"),
    [
        ("⠺⠓⠁⠞", "what"),
        ("🆆🅷🅰🆃", "what"),
        ("🇼🇭🇦🇹", "what"),
        ("ᴡʜᴀᴛ", "what"),
        ("һаνе", "have"),
    ],
    ids=["braille", "negative squared", "regional indicators", "small capitals", "cyrillic"],
)
def test_a_word_drawn_in_small_look_alikes_reads_as_its_letters(drawn: str, read: str) -> None:
    assert drawn.translate(LOOKALIKES) == read


def test_capitals_are_read_before_case_folding_would_lose_their_look() -> None:
    # Н is an H to a reader, its small н is not an h: read as a capital, then folded
    assert "НΕΝ".translate(CAPITAL_LOOKALIKES).casefold() == "hen"
    assert "н" not in "".join(chr(code) for code in LOOKALIKES)
