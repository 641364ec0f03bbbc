"""Keep secrets out of everything evalward writes: comments, summaries, files and logs."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Mapping

_SECRET_NAME = re.compile(r"(_KEY|_TOKEN|SECRET|PASSWORD|_PAT)$|SECRET|PASSWORD", re.IGNORECASE)
_MIN_SECRET_LENGTH = 6
REDACTED = "***"


class Redactor:
    """Replaces every secret-looking environment value with `***`."""

    def __init__(self, secrets: list[str]) -> None:
        values = {s for s in secrets if len(s) >= _MIN_SECRET_LENGTH}
        unique = sorted({form for s in values for form in _forms(s)}, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(s) for s in unique)) if unique else None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Redactor:
        names = [n for n in env if _SECRET_NAME.search(n) or n == "INPUT_GITHUB_TOKEN"]
        return cls([env[n].strip() for n in names])

    def __call__(self, text: str) -> str:
        if self._pattern is None:
            return text
        return self._pattern.sub(REDACTED, text)


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
