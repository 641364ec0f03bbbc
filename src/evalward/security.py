"""Keep secrets out of everything evalward writes: comments, summaries, files and logs."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping

_SECRET_NAME = re.compile(r"(_KEY|_TOKEN|SECRET|PASSWORD|_PAT)$|SECRET|PASSWORD", re.IGNORECASE)
_MIN_SECRET_LENGTH = 6
REDACTED = "***"
_STREAM_BATCH = 64 * 1024


def looks_secret(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret."""
    return _SECRET_NAME.search(name) is not None or name == "INPUT_GITHUB_TOKEN"


class Redactor:
    """Replaces every secret-looking environment value with `***`."""

    def __init__(self, secrets: list[str]) -> None:
        values = {s for s in secrets if len(s) >= _MIN_SECRET_LENGTH}
        unique = sorted({form for s in values for form in _forms(s)}, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(s) for s in unique)) if unique else None
        self._longest = len(unique[0]) if unique else 0

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Redactor:
        return cls([env[n].strip() for n in env if looks_secret(n)])

    def __call__(self, text: str) -> str:
        if self._pattern is None:
            return text
        return self._pattern.sub(REDACTED, text)

    def stream(self, chunks: Iterable[str], batch: int = _STREAM_BATCH) -> Iterator[str]:
        """Redact text that is written as it is produced (a large report), giving the same
        text as redacting it whole: a secret split across two chunks is still caught.

        Text is held back only while a secret could still be completing: a match starting
        before the last `longest - 1` characters is decided by what is already here.
        """
        if self._pattern is None:
            yield from chunks
            return
        # Each flush rescans the `longest - 1` characters it holds back: batches at least that
        # long keep the work linear however long a secret's escaped form is.
        batch = max(batch, self._longest)
        pending: list[str] = []
        size = 0
        for chunk in chunks:
            pending.append(chunk)
            size += len(chunk)
            if size < batch + self._longest:
                continue
            text = "".join(pending)
            emitted, rest = self._redact_settled(text)
            pending, size = [rest], len(rest)
            yield emitted
        yield self("".join(pending))

    def _redact_settled(self, text: str) -> tuple[str, str]:
        """Redact the part of `text` no later text can change; return it and the rest."""
        assert self._pattern is not None
        settled = len(text) - (self._longest - 1)
        out: list[str] = []
        position = 0
        for match in self._pattern.finditer(text):
            if match.start() >= settled:
                break
            out += (text[position : match.start()], REDACTED)
            position = match.end()
        end = max(position, settled)
        out.append(text[position:end])
        return "".join(out), text[end:]


def _escapes() -> list[Callable[[str], str]]:
    from evalward.report.escape import inline
    from evalward.report.workflow import _data, _property

    return [
        lambda s: json.dumps(s)[1:-1],
        lambda s: json.dumps(s, ensure_ascii=False)[1:-1],
        html.escape,
        lambda s: html.escape(s, quote=False),
        lambda s: inline(s, limit=len(s) * 8),
        _data,
        _property,
    ]


def _forms(secret: str) -> set[str]:
    """A secret as it appears once escaped for JSON, HTML/XML, markdown or a workflow command
    (and escaped twice, e.g. JSON inside HTML): the text redacted is the text written."""
    escapes = _escapes()
    once = {secret} | {escape(secret) for escape in escapes}
    return once | {escape(form) for form in once for escape in escapes}
