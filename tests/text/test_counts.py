"""A count and a list cut short (`text/counts.py`), written alike in every message."""

from __future__ import annotations

import pytest

from evalward.text.counts import and_others, counted, first_few

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("count", "noun", "said"),
    [
        (1, "more run", "1 more run"),
        (0, "regression", "0 regressions"),
        (12345, "model call", "12,345 model calls"),
    ],
)
def test_a_count_is_singular_for_one_alone(count: int, noun: str, said: str) -> None:
    assert counted(count, noun) == said


def test_a_long_list_names_its_first_few_and_counts_the_rest() -> None:
    names = [f"eval-{n}" for n in range(1, 1008)]
    assert first_few(names, 3) == "eval-1, eval-2, eval-3 and 1,004 more"
    assert first_few(names[:3], 3) == "eval-1, eval-2, eval-3"
    assert first_few([], 3) == ""
    # only the first few written, the whole list counted
    assert first_few(names[:2], 2, total=10) == "eval-1, eval-2 and 8 more"


def test_the_one_thing_named_counts_the_others_after_it() -> None:
    assert and_others(1) == ""
    assert and_others(0) == ""
    assert and_others(3) == " (and 2 more)"
    assert and_others(2, "such files") == " (and 1 more such files)"
