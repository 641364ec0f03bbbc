"""Retry policy for provider calls: exponential backoff with jitter, honouring Retry-After."""

from __future__ import annotations

import random
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

import httpx

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 30.0

    def delay(self, attempt: int, response: httpx.Response | None) -> float:
        """Seconds to wait before retry number `attempt` (1-based)."""
        hinted = retry_after_seconds(response) if response is not None else None
        if hinted is not None:
            return min(hinted, self.max_delay)
        backoff = self.base_delay * (2 ** (attempt - 1))
        return float(min(backoff * (0.5 + random.random() / 2), self.max_delay))  # noqa: S311


def retry_after_seconds(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(float(value) / 1000, 0.0)
        except ValueError:
            pass
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        import datetime as dt

        when = parsedate_to_datetime(value)
        return max((when - dt.datetime.now(dt.UTC)).total_seconds(), 0.0)
    except (TypeError, ValueError):
        return None
