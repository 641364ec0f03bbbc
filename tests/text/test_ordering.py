"""Names sorted as a person reads them (`text/ordering.py`): runs of digits by their value."""

from __future__ import annotations

import pytest

from evalward.text.ordering import natural_key

pytestmark = pytest.mark.unit


def test_digits_compare_as_numbers_and_the_rest_as_text() -> None:
    names = ["case-10", "case-2", "case-1", "Case-3", "case-2b", "case-2a", "x9y10", "x9y9"]
    assert sorted(names, key=natural_key) == [
        "Case-3",
        "case-1",
        "case-2",
        "case-2a",
        "case-2b",
        "case-10",
        "x9y9",
        "x9y10",
    ]


def test_names_equal_in_value_keep_one_order_whatever_they_are_given_in() -> None:
    assert sorted(["case-2", "case-02", "case-002"], key=natural_key) == sorted(
        ["case-002", "case-2", "case-02"], key=natural_key
    )
    assert natural_key("case-02") != natural_key("case-2")


def test_a_name_of_digits_alone_or_of_none_sorts() -> None:
    assert sorted(["100", "20", "3", "", "abc"], key=natural_key) == ["", "3", "20", "100", "abc"]
