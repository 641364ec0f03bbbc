"""Where evalward cuts a text from outside short, the secrets in it are hidden first.

A cut can fall inside a secret a text holds (a key a model echoed, a proxy's password an
installer printed): what it shows, the secret's first characters, is no form of the secret,
and redacting the written text whole (`security.Redactor`) cannot find it. Starring, after
the fact, whatever stands before a cut's `…` and starts a secret would not do either: a pull
request's agent can write a guess and `…` of its own, and the one guess starred would be the
right one, a character of the key a run. So the process's redactor is lent here as the
process's host is made (`host.Host`), and every cut of a text from outside (`cap_chars`,
`escaping.inline`, `escaping.block`, …) hides the secrets of the whole text before it cuts:
a cut shows no part of a secret, and what is shown never depends on a guess being right.
"""

from __future__ import annotations

from collections.abc import Callable


def _shown(text: str) -> str:
    return text


_hide: list[Callable[[str], str]] = [_shown]
"""The redactor of the process's secrets: none until the entry point lends one."""


def hide_before_cuts(redact: Callable[[str], str]) -> None:
    """Have every cut from now on hide what `redact` hides (the process's secrets)."""
    _hide[0] = redact


def hidden(text: str) -> str:
    """`text` with the process's secrets hidden: call it on the whole text, before a cut."""
    return _hide[0](text)


def cap_chars(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, its cut marked `…`: a text from outside may hold
    a secret where the cut falls, so a text too long has its secrets hidden before it is cut
    (`hidden`)."""
    if len(text) <= limit:
        return text
    text = hidden(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"
