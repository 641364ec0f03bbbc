"""Which lines changed (text/line_diff.py): difflib's own answer where the texts are small
enough to match line by line, and past that, an answer that still turns one text into the
other, found in time that does not grow with how often lines repeat."""

from __future__ import annotations

import difflib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalward.text.line_diff import MAX_CELLS, grouped, opcodes

pytestmark = pytest.mark.unit

LINES = st.lists(st.sampled_from(["\n", "a\n", "b\n", "Rule 1\n", "Rule 2\n"]), max_size=40)


def _applied(old: list[str], new: list[str], ops: list[tuple[str, int, int, int, int]]) -> None:
    """`ops` cover both texts in order, and say `new` from `old`: equal blocks are equal."""
    i = j = 0
    for tag, i1, i2, j1, j2 in ops:
        assert (i1, j1) == (i, j)
        if tag == "equal":
            assert old[i1:i2] == new[j1:j2]
        i, j = i2, j2
    assert (i, j) == (len(old), len(new))


@given(LINES, LINES)
def test_small_texts_are_matched_as_difflib_matches_them(old: list[str], new: list[str]) -> None:
    for autojunk in (True, False):
        expected = difflib.SequenceMatcher(None, old, new, autojunk=autojunk).get_opcodes()
        assert opcodes(old, new, autojunk=autojunk) == expected


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.sampled_from(["\n", "a\n", "b\n"]), min_size=600, max_size=700),
    LINES,
    st.integers(min_value=0, max_value=600),
)
def test_long_texts_still_say_one_from_the_other(
    old: list[str], inserted: list[str], at: int
) -> None:
    """600 lines or more a side (over `MAX_CELLS`), lines that repeat, a change anywhere."""
    new = old[:at] + inserted + old[at + len(inserted) // 2 :]
    assert len(old) * len(new) > MAX_CELLS
    _applied(old, new, opcodes(old, new, autojunk=False))


def test_a_small_change_in_a_long_text_is_found_where_it_is() -> None:
    old = [line for n in range(1_000) for line in (f"Rule {n}\n", "\n")]
    new = list(old)
    new[1000:1001] = ["Rule 500, changed\n", "and a line more\n"]
    differ = [op for op in opcodes(old, new, autojunk=False) if op[0] != "equal"]
    assert differ == [("replace", 1000, 1001, 1000, 1002)]


def test_a_long_changed_region_is_one_block_whole() -> None:
    """The base's paragraphs, and a head that keeps their first lines and pads the rest with
    lines the base repeats: one block, from the first line that differs to the last."""
    old = [line for n in range(300) for line in (f"Rule {n}\n", "\n")]
    new = old[:4] + ["-\n", "\n"] * 100_000 + ["NEVER REFUND\n"]
    ops = opcodes(old, new, autojunk=False)
    assert ops == [("equal", 0, 4, 0, 4), ("replace", 4, 600, 4, len(new))]


def test_the_groups_are_a_unified_diffs_hunks() -> None:
    old = [f"{n}\n" for n in range(40)]
    new = [*old[:5], "five\n", *old[6:30], *old[31:]]
    groups = list(grouped(old, new, context=2, autojunk=True))
    expected = list(difflib.SequenceMatcher(None, old, new).get_grouped_opcodes(2))
    assert groups == expected and len(groups) == 2
    assert list(grouped(old, old, context=2, autojunk=True)) == []
