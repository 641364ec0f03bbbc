"""What a `regex` assertion costs per fixture, engine by engine, on P6's user suite patterns.

1,000 distinct patterns (bench/synth.py's USER_PATTERNS, one per fixture), each compiled as
the fixture loads and searched once in the model's answer. Prints CPU microseconds per
fixture for: the `regex` module as evalward used it before (compiled to validate at load,
then `regex.search(pattern, ...)` at match, whose own cache holds 500 patterns), the same
module with each pattern compiled once and reused, that without the timeout (the timeout's
own cost), what evalward does (resources/checks/patterns.py: `re` where that is provably the same
search and provably quick, `regex` with its timeout elsewhere), the standard library's `re`
alone (no time bound: for comparison), and google-re2 when it is installed
(`pip install google-re2`), with the number of patterns it refuses.

    python bench/regex_engines.py [--patterns 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from collections.abc import Callable

import regex
from synth import USER_PATTERNS

from evalward.resources.checks import patterns

ANSWER = "answer: Where is order #{index}? It was due on day {day}."


def cases(count: int) -> list[tuple[str, str]]:
    out = []
    for index in range(count):
        day = index % 28 + 1
        pattern = USER_PATTERNS[index % len(USER_PATTERNS)].format(index=index, day=day)
        out.append((pattern, ANSWER.format(index=index, day=day)))
    return out


def before(work: list[tuple[str, str]]) -> int:
    for pattern, _ in work:
        regex.compile(pattern)
    return sum(regex.search(p, text, timeout=1.0) is not None for p, text in work)


def compiled_once(work: list[tuple[str, str]], timeout: float | None = 1.0) -> int:
    compiled = [(regex.compile(pattern), text) for pattern, text in work]
    return sum(c.search(text, timeout=timeout) is not None for c, text in compiled)


def evalward_patterns(work: list[tuple[str, str]]) -> int:
    patterns.compiled_pattern.cache_clear()
    patterns._compiled.cache_clear()
    compiled = [(patterns.compiled_pattern(pattern), text) for pattern, text in work]
    return sum(c.search(text, timeout=1.0) is not None for c, text in compiled)


def standard_re(work: list[tuple[str, str]]) -> int:
    compiled = [(re.compile(pattern), text) for pattern, text in work]
    return sum(c.search(text) is not None for c, text in compiled)


def google_re2(work: list[tuple[str, str]]) -> int:
    import re2  # type: ignore[import-not-found]

    options = re2.Options()
    options.log_errors = False
    matched = 0
    for pattern, text in work:
        try:
            compiled = re2.compile(pattern, options)
        except re2.error:
            continue
        matched += compiled.search(text) is not None
    return matched


def measure(
    name: str, run: Callable[[list[tuple[str, str]]], int], args: argparse.Namespace
) -> None:
    times = []
    for _ in range(args.repeat):
        work = cases(args.patterns)
        regex.purge()
        re.purge()
        start = time.process_time()
        matched = run(work)
        times.append(time.process_time() - start)
    per = statistics.median(times) / args.patterns * 1e6
    print(f"  {name:52s} {per:6.1f} us   ({matched} of {args.patterns} matched)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--patterns", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"regex assertion, CPU per fixture (median of {args.repeat}), {args.patterns} patterns")
    measure("regex: compiled to validate, then regex.search", before, args)
    measure("regex: compiled once, reused", compiled_once, args)
    measure("regex: compiled once, no timeout", lambda w: compiled_once(w, None), args)
    measure("evalward: re where provably safe, else regex", evalward_patterns, args)
    measure("re (no time bound; not a drop-in, see docs)", standard_re, args)
    try:
        measure("google-re2 (refuses lookarounds)", google_re2, args)
    except ImportError:
        print("  google-re2: not installed")


if __name__ == "__main__":
    main()
