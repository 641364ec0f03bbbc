"""Keep secrets out of everything evalward writes: comments, summaries, files and logs."""

from __future__ import annotations

import re
from collections.abc import Mapping

_SECRET_NAME = re.compile(r"(_KEY|_TOKEN|SECRET|PASSWORD|_PAT)$|SECRET|PASSWORD", re.IGNORECASE)
_MIN_SECRET_LENGTH = 6
REDACTED = "***"


class Redactor:
    """Replaces every secret-looking environment value with `***`."""

    def __init__(self, secrets: list[str]) -> None:
        unique = sorted({s for s in secrets if len(s) >= _MIN_SECRET_LENGTH}, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(s) for s in unique)) if unique else None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Redactor:
        names = [n for n in env if _SECRET_NAME.search(n) or n == "INPUT_GITHUB_TOKEN"]
        return cls([env[n].strip() for n in names])

    def __call__(self, text: str) -> str:
        if self._pattern is None:
            return text
        return self._pattern.sub(REDACTED, text)
