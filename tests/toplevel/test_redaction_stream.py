"""Redacting a report written in pieces gives the text that redacting it whole gives."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalward.security import REDACTED, Redactor

pytestmark = pytest.mark.unit

SECRETS = ["sk-live-0123456789", 'tok&<en>"42', "abcabcab"]
REDACTOR = Redactor(SECRETS)
PLAIN = Redactor(["sk-live-0123456789"])
"""One secret with no escaped forms: the longest form is the secret itself, so the hold-back
is exactly as long as a secret can still be completing."""


def sized(text: str, sizes: list[int]) -> list[str]:
    """`text` cut into chunks of the given sizes, taken in turn until it is used up."""
    chunks, position = [], 0
    while position < len(text):
        size = sizes[len(chunks) % len(sizes)]
        chunks.append(text[position : position + size])
        position += size
    return chunks


@settings(max_examples=400, deadline=None)
@given(
    parts=st.lists(
        st.one_of(
            st.text(alphabet="abcsk-0123456789&<>\"' \n", max_size=40),
            st.integers(min_value=1, max_value=50).map(lambda n: "x" * n),
            st.sampled_from([*SECRETS, "sk-live-0123456789"[:-1], "abcabcabcab"]),
            st.sampled_from(["sk-\u200blive-01234\u200b56789", "abc\u200babcab", "\u200b"]),
            st.sampled_from(["…", "\\u2026", "\n… [truncated]", "sk-live-01", "tok&<", "abca"]),
        ),
        max_size=30,
    ),
    sizes=st.lists(st.integers(min_value=1, max_value=45), min_size=1, max_size=8),
    batch=st.integers(min_value=0, max_value=60),
)
def test_any_chunking_redacts_like_the_whole_text(
    parts: list[str], sizes: list[int], batch: int
) -> None:
    text = "".join(parts)
    for redactor in (REDACTOR, PLAIN):
        assert "".join(redactor.stream(sized(text, sizes), batch=batch)) == redactor(text)


def test_a_secret_across_the_batch_edge_and_the_chunk_edge_is_caught() -> None:
    secret = SECRETS[0]
    for offset in range(-len(secret), 2):
        text = "x" * (64 * 1024 + offset) + secret + "y" * 70_000 + secret
        chunks = sized(text, [997])
        streamed = "".join(REDACTOR.stream(chunks))
        assert secret not in streamed
        assert streamed == REDACTOR(text)
        assert streamed.count(REDACTED) == 2


def test_nothing_to_redact_passes_chunks_through() -> None:
    chunks = ["a" * 10, "b" * 70_000, "c"]
    assert list(Redactor([]).stream(chunks)) == chunks
