"""The base of the run's records (traces, results, pairwise and sequential records)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class RecordModel(BaseModel):
    """A record's validator is built when it is first used, not when its module is imported
    (defer_build): a run reaches its first model call before any result exists, a record a run
    never makes builds nothing, and a nested record is built once, inside its parent."""

    model_config = ConfigDict(defer_build=True)
