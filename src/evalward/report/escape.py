"""Make untrusted text (agent output, fixture text, judge prose) inert in GitHub markdown.

Agent output must not ping people, inject HTML, close our `<details>`, forge links, or fake
evalward's own sections. Inline text is HTML-escaped and has markdown syntax and @mentions
neutralised; blocks go into a code fence longer than any backtick run inside them.
"""

from __future__ import annotations

import html
import re

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_ZERO_WIDTH = "\u200b"
_AUTOLINK = re.compile(r"(?i)\b(?:https?|ftp)://|\bwww\.")
"""What GitHub turns into a link by itself; a zero-width space before its last character
keeps the text readable and unlinked."""


def inline(text: object, limit: int = 300) -> str:
    """One line of inert markdown: safe in a table cell or a sentence."""
    value = " ".join(str(text).split())
    if len(value) > limit:
        value = value[: limit - 1] + "…"
    value = html.escape(value, quote=False)
    value = _MD_SPECIAL.sub(r"\\\1", value)
    value = _AUTOLINK.sub(lambda m: m[0][:-1] + _ZERO_WIDTH + m[0][-1], value)
    return _MENTION.sub("@" + _ZERO_WIDTH, value)


def block(text: object, limit: int = 4000) -> str:
    """A fenced code block that no content can close early."""
    value = str(text)
    if len(value) > limit:
        value = value[:limit] + "\n… [truncated]"
    value = _MENTION.sub("@" + _ZERO_WIDTH, value)
    longest = max((len(m) for m in re.findall(r"`+", value)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{value}\n{fence}"
