"""Text from outside (an agent, a tool, a service, a model) made text that UTF-8 can write.

Python's str can hold half of a UTF-16 surrogate pair alone (U+D800 to U+DFFF), and no UTF-8
writer takes one: one in an agent's final message would make the run's record unwritable.
`json.loads` makes one of an escape (`"\\ud800"`) and of the bytes `ED A0 80` (it decodes
bytes with `surrogatepass`); a Python literal (`'\\ud800'`) spells one too. So where such text
enters evalward, a byte that is not UTF-8 becomes U+FFFD (bytes are decoded with `replace`:
`ED A0 80` is three such bytes, three U+FFFD, as every UTF-8 decoder reads them) and so does
a lone surrogate (`writable`); a pair, high then low, is the one character it spells. Later
readers and writers then need no errors handler of their own.

Where a limit counts bytes of UTF-8 (GitHub's job summary, a check run's summary and
annotations), `size` measures text as it will be written and `cut` keeps the longest start
within the limit, never a character cut in two.
"""

from __future__ import annotations

from collections.abc import Callable

from evalward.text.escaping import UNSHOWABLE


def writable(text: str) -> str:
    """`text` with each lone surrogate U+FFFD. Text of ASCII only is known to hold none at
    once; other text is encoded as UTF-8 once (in C) to find one."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def size(text: str) -> int:
    """How many bytes `text` takes written as UTF-8 (what UTF-8 cannot hold, escaped:
    `escaping.UNSHOWABLE`)."""
    return len(text.encode("utf-8", errors=UNSHOWABLE))


def cut(text: str, limit: int) -> str:
    """The longest start of `text` that is at most `limit` bytes of UTF-8 (`size`): whole
    characters only, so a four-byte one is kept whole or left out."""
    return text[: start_within(text, limit, size)]


def start_within(text: str, room: int, measure: Callable[[str], int]) -> int:
    """How many characters of `text`, from its start, `measure` holds within `room` (a
    measure is never less than the characters it counts)."""
    low, high = 0, max(0, min(len(text), room))
    while low < high:  # the longest start that fits: a binary search on its length
        middle = (low + high + 1) // 2
        if measure(text[:middle]) <= room:
            low = middle
        else:
            high = middle - 1
    return low
