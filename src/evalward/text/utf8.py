"""Text from outside (an agent, a tool, a service, a model) made text that UTF-8 can write.

Python's str can hold half of a UTF-16 surrogate pair alone (U+D800 to U+DFFF), and no UTF-8
writer takes one: one in an agent's final message would make the run's record unwritable.
`json.loads` makes one of an escape (`"\\ud800"`) and of the bytes `ED A0 80` (it decodes
bytes with `surrogatepass`); a Python literal (`'\\ud800'`) spells one too. So where such text
enters evalward, a byte that is not UTF-8 becomes U+FFFD (bytes are decoded with `replace`:
`ED A0 80` is three such bytes, three U+FFFD, as every UTF-8 decoder reads them) and so does
a lone surrogate (`writable`); a pair, high then low, is the one character it spells. Later
readers and writers then need no errors handler of their own.
"""

from __future__ import annotations


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
