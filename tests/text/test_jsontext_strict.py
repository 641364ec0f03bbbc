"""A document that decides something (a service's state, a verdict) is read strictly: a key
given twice, `NaN`, an infinity or nesting past the limit is refused, a lone surrogate is
U+FFFD and an integer keeps every digit, whichever parser reads it (`jsontext._fast` reads it
in C where that gives the same document). Each is checked against the standard library's
parse with the same rules, on documents written as text, keys repeated and colons escaped."""

from __future__ import annotations

import json
import marshal
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalward.errors import DuplicateKey
from evalward.text import jsontext

pytestmark = pytest.mark.unit


def reference(raw: bytes, max_depth: int = 64) -> Any:
    """What the rules say `raw` is, by the standard library alone."""

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
        return dict(pairs)

    def finite(text: str) -> float:
        if not math.isfinite(value := float(text)):
            raise ValueError("out of range")
        return value

    def constant(name: str) -> float:
        raise ValueError(name)

    try:
        document = json.loads(
            raw, object_pairs_hook=unique, parse_float=finite, parse_constant=constant
        )
    except RecursionError:
        raise ValueError("too deep") from None
    jsontext.check_depth(document, max_depth)
    return jsontext._clean(document)


def outcome(read: Any, raw: bytes) -> tuple[str, bytes | str]:
    """The document as marshalled bytes (which tell `1` from `1.0` and `true` from `1`), or
    the kind of refusal."""
    try:
        return "read", marshal.dumps(read(raw), 2)
    except DuplicateKey as exc:
        return "twice", exc.key
    except ValueError:
        return "refused", ""


def strict(raw: bytes) -> Any:
    return jsontext.loads(raw, max_depth=64, unique_keys=True)


KEYS = st.sampled_from(["a", "b", "a:b", ":", "", "é", "\u2028", "\\", '"', "0"])
SCALARS = st.sampled_from(
    [
        "1", "-0", "1.0", "1e2", "1E-2", "0.1", "true", "false", "null", "1e999", "NaN",
        "18446744073709551615", "18446744073709551616", "-9223372036854775809",
        "123456789012345678901234567890", '"x:y"', '"\\u003a"', '"\\u003A:"', '"\\ud83d"',
        '"\\ud83d\\ude00"', '"\\\\u003a"', '"tab\\t"', '"\\/"', '"é"',
    ]
)  # fmt: skip


def key_text(key: str, escape: bool) -> str:
    text = json.dumps(key, ensure_ascii=False)
    return text.replace(":", "\\u003a") if escape else text


TEXTS = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4).map(lambda items: "[" + ",".join(items) + "]")
        | st.lists(st.tuples(KEYS, st.booleans(), inner), max_size=5).map(
            lambda pairs: "{" + ",".join(f"{key_text(k, e)}: {v}" for k, e, v in pairs) + "}"
        )
    ),
    max_leaves=25,
)


@settings(max_examples=600, deadline=None)
@given(TEXTS)
def test_a_strict_read_is_the_standard_librarys_with_the_same_rules(text: str) -> None:
    raw = text.encode("utf-8", "surrogatepass")
    assert outcome(strict, raw) == outcome(reference, raw)


@pytest.mark.parametrize(
    ("raw", "twice"),
    [
        (b'{"a": 1, "a": 2}', "a"),
        (b'{"a": "x:y", "a": "z"}', "a"),
        # the dropped pair's colon stands in for the one spelled as an escape
        (b'{"a": 1, "a": 2, "b": "\\u003a"}', "a"),
        (b'{"k\\u003a": 1, "k:": 2}', "k:"),
        (b'[{"x": {"y": [1, {"z": 0, "z": 0}]}}]', "z"),
    ],
)
def test_a_key_given_twice_is_refused_however_its_colons_are_spelled(
    raw: bytes, twice: str
) -> None:
    with pytest.raises(DuplicateKey) as refused:
        strict(raw)
    assert refused.value.key == twice


def test_what_the_fast_parse_would_read_otherwise_is_read_as_the_rules_say() -> None:
    assert strict(b"[18446744073709551616, -9223372036854775809]") == [2**64, -(2**63) - 1]
    assert type(strict(b"[123456789012345678901]")[0]) is int
    assert strict(b'["\\ud83d", "\\ud83d\\ude00"]') == ["\ufffd", "\U0001f600"]
    assert strict(b'\xef\xbb\xbf{"a": 1}') == {"a": 1}
    for refused in (b"[1e999]", b"[NaN]", b"[-Infinity]", b'{"a": 1,}', b"[1] [2]"):
        with pytest.raises(ValueError):
            strict(refused)


def test_nesting_past_the_limit_is_refused_at_every_size() -> None:
    assert strict(b"[" * 64 + b"]" * 64) == reference(b"[" * 64 + b"]" * 64)
    for depth in (65, 1025, 200_000):
        with pytest.raises(ValueError, match="nested"):
            strict(b"[" * depth + b"]" * depth)
    for empty, filled in ((b"{}", b'{"z": 1}'), (b"[]", b"[1]")):
        # containers 64 deep, then 65, the deepest empty or not, inside a larger document
        for depth, inner in ((64, empty), (64, filled), (65, empty), (65, filled)):
            text = b'[1, {"a": [2], "b": ' + b'{"a":' * (depth - 3) + inner
            text += b"}" * (depth - 3) + b"}, 3]"
            if depth <= 64:
                assert outcome(strict, text) == outcome(reference, text)
            else:
                with pytest.raises(ValueError, match="nested more than 64"):
                    strict(text)


def test_a_large_state_is_read_as_the_standard_library_reads_it() -> None:
    state = {
        "orders": {
            f"W{i:07d}": {
                "amount": i * 1.25,
                "items": [{"id": str(i), "n": i}] * 3,
                "ok": i % 2 == 0,
            }
            for i in range(3000)
        },
        "notes": ["a: b", "c:d"] * 100,
    }
    raw = json.dumps(state).encode()
    assert outcome(strict, raw) == outcome(reference, raw)
    spliced = raw[:-1] + b', "orders": {}}'
    assert outcome(strict, spliced) == ("twice", "orders")
