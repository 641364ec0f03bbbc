"""`regex` assertions searched by `re` where that is provably the same search and provably
quick (resources/checks/patterns.py): random patterns of that subset, on random texts, ASCII or
not, find exactly what the `regex` module finds, and every pattern outside it, or text
outside plain ASCII, goes to `regex` and its timeout."""

from __future__ import annotations

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from evalward.resources.checks.patterns import MAX_STEPS, compiled_pattern

pytestmark = pytest.mark.hostile

CHARACTERS = ["a", "b", "A", "K", "1", " ", r"\.", r"\?", "#", r"\d", r"\w", r"\s", r"\W",
              r"\D", r"\S", ".", "[ab1]", "[^a ]", "[a-z]", r"[\d\s]", "[A-Z0-9_]"]  # fmt: skip
ANCHORS = ["^", "$", r"\b", r"\B", r"\A", r"\Z"]
QUANTIFIERS = ["", "", "*", "+", "?", "{1,3}", "{2}", "*?", "+?", "??"]
FLAGS = ["", "", "(?i)", "(?m)", "(?s)", "(?im)"]


@st.composite
def sequences(draw: st.DrawFn, depth: int = 0) -> str:
    parts: list[str] = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["char", "char", "char", "anchor", "group", "alt", "look"]))
        if kind == "char":
            parts.append(draw(st.sampled_from(CHARACTERS)) + draw(st.sampled_from(QUANTIFIERS)))
        elif kind == "anchor":
            parts.append(draw(st.sampled_from(ANCHORS)))
        elif depth < 2 and kind == "group":
            opener = draw(st.sampled_from(["(", "(?:", "(?i:"]))
            parts.append(opener + draw(sequences(depth + 1)) + ")")
        elif depth < 2 and kind == "alt":
            parts.append(f"(?:{draw(sequences(depth + 1))}|{draw(sequences(depth + 1))})")
        elif kind == "look":
            body = "".join(draw(st.lists(st.sampled_from(CHARACTERS), min_size=1, max_size=3)))
            parts.append(draw(st.sampled_from(["(?=", "(?!", "(?<=", "(?<!"])) + body + ")")
    return "".join(parts)


patterns = st.builds(lambda flags, body: flags + body, st.sampled_from(FLAGS), sequences())
texts = st.text(
    alphabet=st.sampled_from([*"aAbBkK1 .?#_\n", "\x1c", "é", "\u212a", "\u0661", "ß"]),
    max_size=30,
)


def found(match: object) -> tuple[int, int] | None:
    return None if match is None else match.span()  # type: ignore[attr-defined]


@settings(max_examples=1500, deadline=None)
@given(patterns, texts)
def test_re_finds_what_regex_finds_wherever_it_searches(pattern: str, text: str) -> None:
    expected = regex.compile(pattern)  # every pattern of the subset is valid for `regex` too
    compiled = compiled_pattern(pattern)
    assert found(compiled.search(text, timeout=5)) == found(expected.search(text, timeout=5))
    if compiled.quick_on(text):
        assert compiled.quick is not None
        assert text.isascii() and "\x1c" not in text


def test_the_usual_assertion_patterns_are_searched_by_re() -> None:
    for pattern in (
        r"order #17\b.*day \d+",
        r"(?i)^answer: where is order #17\?",
        r"#17\? It was due on day 18\.$",
        r"(?:order|parcel) #0*17(?!\d)",
    ):
        assert compiled_pattern(pattern).quick_on(
            "answer: Where is order #17? It was due on day 18."
        )


def test_what_re_could_not_stop_or_would_read_differently_goes_to_regex() -> None:
    # quantified groups and backreferences can backtrack exponentially: never `re`
    for pattern in (r"(a+)+$", r"^(a|aa)+$", r"(ab)\1", r"(?>a+)b", r"a++b", r"é", r"\B"):
        assert compiled_pattern(pattern).quick is None, pattern
    # text `re` reads differently (\s on 0x1C, \w outside ASCII) is searched by `regex`
    words = compiled_pattern(r"\w+\s")
    assert words.quick_on("plain text") and not words.quick_on("caf\u00e9 ")
    assert not words.quick_on("a\x1cb")
    assert found(words.search("caf\u00e9\x1c", timeout=1)) == found(
        regex.search(r"\w+\s", "caf\u00e9\x1c")
    )
    # the backtracking bound: three variable quantifiers on a long text are `regex`'s
    nested = compiled_pattern(r"a.*b.*c.*d")
    assert nested.quick_on("a" * 30)
    assert not nested.quick_on("a" * 10_000)
    assert MAX_STEPS < 10_001**4
