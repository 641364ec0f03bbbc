"""The patterns of `regex` assertions: compiled once, each run by the engine that is safe for it.

The `regex` module runs a match with a timeout, so a pathological pattern cannot hang a run,
but compiling a pattern with it costs about 0.1 ms, and suites give most fixtures a pattern
of their own (bench/regex_engines.py). The standard library's `re` compiles in a third of
that and matches faster, but a match cannot be stopped, and its character classes are not
`regex`'s outside ASCII (`\\w` differs on 30,000 code points, `\\s` on the four ASCII
separators 0x1C-0x1F). So `re` runs a search only where it is provably the same search and
provably quick:

- the pattern is ASCII and made only of literals, `.`, character classes, anchors and
  `\\b` (not `\\B`, which the two read differently in an empty text), groups,
  alternatives, quantifiers on a single character or class, lookarounds without a
  quantifier, and the flags i, m, s and x (no backreference, no quantified group, no
  possessive or atomic construct), and `re` compiles it without a warning;
- the text is ASCII without 0x1C-0x1F;
- the backtracking bound: a search tries every position, and at each, every count of each of
  the pattern's `k` variable quantifiers and every alternative, so it takes at most
  (n + 1)^(k + 1) x paths x length steps on n characters; that must be under MAX_STEPS
  (about 0.1 s at `re`'s pace), far inside the 1 s the timeout allows.

Anything else is searched by `regex` with the timeout. Validity is `regex`'s: a pattern that
`re` refuses is compiled by `regex` at load, which says why it is invalid, as before.
"""

from __future__ import annotations

import functools
import re
import warnings
from dataclasses import dataclass
from re import _compiler as sre_compiler  # type: ignore[attr-defined]
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import regex

MAX_STEPS = 10**8
"""The backtracking bound under which `re` searches (its worst case: about 0.1 s)."""

_FLAGS = re.IGNORECASE | re.MULTILINE | re.DOTALL | re.VERBOSE | re.UNICODE
_CHARACTER = {sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN}
_ANCHORS = {
    sre.AT_BEGINNING,
    sre.AT_BEGINNING_STRING,
    sre.AT_END,
    sre.AT_END_STRING,
    sre.AT_BOUNDARY,
}
"""`\\B` is not among them: `re` and `regex` disagree on it in an empty text."""
_NOT_PLAIN = re.compile(r"[^\x00-\x1b\x20-\x7f]")


@dataclass(frozen=True)
class Pattern:
    """One pattern: `re`'s compilation when it is in the safe subset, `regex`'s on demand."""

    source: str
    quick: re.Pattern[str] | None
    repeats: int = 0
    paths: int = 1

    def search(self, text: str, timeout: float) -> re.Match[str] | regex.Match[str] | None:
        """The first match in `text`; TimeoutError when `regex` ran out of time."""
        if self.quick is not None and self.quick_on(text):
            return self.quick.search(text)
        return _compiled(self.source).search(text, timeout=timeout)

    def quick_on(self, text: str) -> bool:
        """Whether `re` searches `text`: plain ASCII, and short enough for the bound."""
        if self.quick is None:
            return False
        steps = (len(text) + 1) ** (self.repeats + 1) * self.paths * max(len(self.source), 1)
        return steps <= MAX_STEPS and text.isascii() and not _NOT_PLAIN.search(text)


@functools.lru_cache(maxsize=4096)
def compiled_pattern(pattern: str) -> Pattern:
    """`pattern` ready to search; ValueError says why it does not compile. Cached, as suites
    repeat patterns; a `regex` assertion also keeps its own (`RegexAssertion.compiled`), so
    a suite of more patterns than the cache holds still compiles each once."""
    quick = _quick(pattern)
    if quick is not None:
        return quick
    import regex  # lazy: 10 ms of start-up that a suite whose patterns `re` runs never needs

    try:
        _compiled(pattern)
    except regex.error as exc:
        raise ValueError(f"invalid regular expression: {exc}") from None
    return Pattern(pattern, None)


@functools.lru_cache(maxsize=4096)
def _compiled(pattern: str) -> regex.Pattern[str]:
    """`regex`'s compilation. Bounded: one holds about 2 KB, so a suite of more distinct
    patterns than this compiles some of them twice rather than holding them all."""
    import regex  # lazy: see compiled_pattern

    return regex.compile(pattern)


def _quick(pattern: str) -> Pattern | None:
    """The pattern compiled by `re`, when it is in the subset where `re` is safe."""
    if not pattern.isascii():
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            parsed = sre_parse.parse(pattern)
            if parsed.state.flags & ~_FLAGS:
                return None
            shape = _shape(list(parsed))
            if shape is None:
                return None
            # compiled from the tree already parsed, rather than parsed a second time
            return Pattern(pattern, sre_compiler.compile(parsed), *shape)
    except (re.error, Warning, RecursionError, OverflowError, ValueError, TypeError):
        return None


def _shape(items: list[tuple[Any, Any]]) -> tuple[int, int] | None:
    """(variable quantifiers, alternative paths) of a sequence, or None outside the subset."""
    repeats, paths = 0, 1
    for op, value in items:
        if op in _CHARACTER or (op is sre.AT and value in _ANCHORS):
            continue
        if op is sre.SUBPATTERN:
            _group, add, remove, inner = value
            if (add | remove) & ~_FLAGS:
                return None
            shape = _shape(list(inner))
        elif op is sre.BRANCH:
            shapes = [_shape(list(alternative)) for alternative in value[1]]
            if any(s is None for s in shapes):
                return None
            known = [s for s in shapes if s is not None]
            shape = (max(s[0] for s in known), sum(s[1] for s in known))
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            low, high, inner = value
            if len(inner) != 1 or inner[0][0] not in _CHARACTER:
                return None  # a quantified group can backtrack exponentially
            shape = (int(low != high), 1)
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            shape = _shape(list(value[1]))
            if shape is None or shape[0]:
                return None
        else:
            return None  # backreferences, conditionals, atomic and possessive constructs
        if shape is None:
            return None
        repeats, paths = repeats + shape[0], paths * shape[1]
    return repeats, paths
