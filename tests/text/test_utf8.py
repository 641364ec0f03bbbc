"""Text from outside made writable as UTF-8 (`text/utf8.py`): a lone surrogate becomes U+FFFD,
a pair stays the one character it spells, and nothing else changes."""

from __future__ import annotations

import json

import pytest

from evalward.text.utf8 import writable

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain ascii", "plain ascii"),
        ("café ✓ 🎉", "café ✓ 🎉"),
        (json.loads('"a\\ud800b"'), "a\ufffdb"),
        (json.loads('"\\udfff end"'), "\ufffd end"),
        (json.loads('"\\ud83c\\udf89"'), "🎉"),  # a pair, high then low: one character
        (json.loads('"\\udf89\\ud83c"'), "\ufffd\ufffd"),  # low then high: two lone halves
    ],
)
def test_each_lone_surrogate_becomes_a_replacement_character(text: str, expected: str) -> None:
    assert writable(text) == expected
    writable(text).encode("utf-8")  # what the run's record writer does with it


def test_text_that_was_writable_is_returned_as_it_was() -> None:
    text = "ünïcode"
    assert writable(text) is text
