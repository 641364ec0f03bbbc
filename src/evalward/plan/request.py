"""The one request a front end hands the phases (`flows.session.run`): the action and the
command line each build one (`action.run.main`, `cli.run.main`), so nothing below builds a
client or reads a front end's settings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evalward.plan.progress import RunProgress
from evalward.plan.run_setup import RunSetup

PartCheck = Callable[[Path], None]
"""A front end's own rule for a part's file: it raises ConfigError to refuse it (the action
refuses a part the checkout brings)."""


@dataclass(frozen=True)
class ShardParts:
    """A merge's input: the shards' part files, the key that sealed them, and a check of each
    part before it is read."""

    paths: tuple[Path, ...]
    key: str | None
    check: PartCheck | None = None


@dataclass(frozen=True)
class RunRequest:
    """A run as its front end asks for it: the set-up, the progress it shows, and a merge's
    parts (None: the runs themselves)."""

    setup: RunSetup
    progress: RunProgress
    parts: ShardParts | None = None
