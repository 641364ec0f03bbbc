"""How a run uses a cache — of results (`result_cache`) or of model replies
(`providers.cache`) — the one vocabulary of the `cache` input, `--no-cache` and
`evalward.yaml`'s `cache.mode`."""

from __future__ import annotations

from enum import StrEnum


class CacheMode(StrEnum):
    read_write = "read-write"
    read_only = "read-only"
    refresh = "refresh"
    """Reuse nothing, store everything anew: replaces what the cache held (`--no-cache`,
    scheduled runs)."""
    off = "off"

    @property
    def reads(self) -> bool:
        return self in (CacheMode.read_write, CacheMode.read_only)

    @property
    def writes(self) -> bool:
        return self in (CacheMode.read_write, CacheMode.refresh)
