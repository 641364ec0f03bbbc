"""A provider's reply read field by field (`providers/reply_fields.py`): the strict reader
refuses a field of another shape naming it and what was found, the lenient one (for a reply
the proxy only passes on) reads it as absent and never refuses."""

from __future__ import annotations

import math

import pytest

from evalward.errors import ProviderError
from evalward.providers.reply_fields import SHOWN_CHARS, LenientReader, WireReader, shown

pytestmark = pytest.mark.unit

STRICT = WireReader("openai")
LENIENT = LenientReader("openai")


@pytest.mark.parametrize(
    ("read", "value", "expected", "found"),
    [
        (STRICT.mapping, [1], "an object", "[1]"),
        (STRICT.array, {"a": 1}, "a list", '{"a": 1}'),
        (STRICT.text, 7, "a string", "7"),
        (STRICT.name, "", "a non-empty string", '""'),
        (STRICT.count, -1, "a whole number ≥ 0", "-1"),
        (STRICT.count, 1.5, "a whole number ≥ 0", "1.5"),
        (STRICT.count, True, "a whole number ≥ 0", "true"),
        (STRICT.count, "12", "a whole number ≥ 0", '"12"'),
    ],
)
def test_the_strict_reader_names_the_field_and_what_it_found(
    read: object, value: object, expected: str, found: str
) -> None:
    with pytest.raises(ProviderError) as raised:
        read(value, "choices[0].message")  # type: ignore[operator]
    assert str(raised.value) == (
        f"openai: malformed reply: choices[0].message should be {expected}, got {found}"
    )


def test_absent_fields_read_as_empty_and_counts_as_whole_numbers() -> None:
    assert STRICT.optional_mapping(None, "x") == {}
    assert STRICT.optional_array(None, "x") == []
    assert STRICT.optional_text(None, "x") == ""
    assert STRICT.count(None, "usage.prompt_tokens") == 0
    assert STRICT.count(12.0, "usage.prompt_tokens") == 12
    with pytest.raises(ProviderError):
        STRICT.count(math.inf, "usage.prompt_tokens")


def test_the_lenient_reader_reads_another_shape_as_absent() -> None:
    assert LENIENT.mapping([1], "x") == {}
    assert LENIENT.array([{"a": 1}, "stray", 3, {"b": 2}], "x") == [{"a": 1}, {"b": 2}]
    assert LENIENT.array("not a list", "x") == []
    assert LENIENT.text(7, "x") == "7"
    assert LENIENT.text(None, "x") == ""
    assert LENIENT.name(None, "x") == ""
    assert LENIENT.count(-5, "x") == 0
    assert LENIENT.count("many", "x") == 0
    assert LENIENT.count(3, "x") == 3
    assert LENIENT.wrong("x", "a string", 1, "fallback") == "fallback"
    with pytest.raises(ProviderError):
        STRICT.wrong("x", "a string", 1, "fallback")


def test_what_was_found_is_quoted_short() -> None:
    long = "x" * 500
    quoted = shown(long)
    assert len(quoted) == SHOWN_CHARS
    assert quoted.endswith("…")
    assert shown({"k": object()}).startswith('{"k": "<object object at')
