"""Provision a playground for one run, and tear it down whatever happened.

Every run (each rep, each side) gets its own: a new folder in which each of its parts lays
itself out (a copy of the files seed, a database copied from its seed's template, the
service's data folder), handed to the agent user of the run's side, then what runs beside
the agent started (the service, on a port evalward picks, waited for). Seeds and programs
come from the gate's side (`world`: the tree the fixture's definition came from, the base
commit under `gate-config: base`), so a pull request cannot change the world its agent is
judged in. `LivePlayground.close` tears each part down and removes the folder.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from evalward.errors import PlaygroundError, TreeError, refused_write
from evalward.files.trees import walk
from evalward.runtime.agents.process import DEFAULT_KILL_GRACE
from evalward.runtime.isolation.sandbox import Sandbox
from evalward.runtime.playground.base import (
    SEED_BOUNDS,
    LivePlayground,
    PlaygroundSource,
    Templates,
)
from evalward.runtime.playground.registry import parts_of
from evalward.runtime.playground.service_environment import ServiceEnvironments


@dataclass(frozen=True)
class PlaygroundSetting:
    """What provisioning needs beyond the playground: the environment programs draw from
    (with no secret: `limited_env` builds theirs), the run side's sandbox, the kill grace."""

    env: Mapping[str, str] = field(default_factory=dict)
    sandbox: Sandbox | None = None
    kill_grace: float = DEFAULT_KILL_GRACE
    templates: Templates | None = None
    """The job's templates: each seed loaded once, each run's part (a database) a copy."""
    environments: ServiceEnvironments | None = None
    """The job's services' environments: each built once per side."""


async def provision(source: PlaygroundSource, setting: PlaygroundSetting) -> LivePlayground:
    """A fresh playground for one run; PlaygroundError (naming it) when it cannot be made,
    with nothing left behind. With `templates`, a part that has one is a copy of it; with
    `environments`, a service's `environment` is built (once) for it."""
    sandbox = setting.sandbox
    if sandbox is not None and sandbox.unavailable:
        raise PlaygroundError(f"playground {source.name!r}: {sandbox.unavailable}")
    where = sandbox.root if sandbox is not None and sandbox.user is not None else None
    folder = Path(tempfile.mkdtemp(prefix="evalward-playground-", dir=where))
    parts = parts_of(source.spec)
    live = LivePlayground(
        source,
        folder,
        sandbox,
        setting.kill_grace,
        parts,
        templates=setting.templates,
        environments=setting.environments,
    )
    live.env["EVALWARD_PLAYGROUND"] = source.name
    try:
        shared: dict[str, str] = {}  # what the parts that share it tell the others' programs
        for part in parts:
            told = part.lay_out(live)
            live.env |= told
            shared |= told if part.shares_env else {}
        _hand_over(live.folder, sandbox)
        for part in parts:
            live.env |= await part.start(live, setting.env, shared)
    except (OSError, TreeError) as exc:  # the machine's refusal: a full disk, a user it
        await _close_quietly(live)  # cannot give to
        if isinstance(exc, OSError) and refused_write(exc):
            raise exc  # it stops the run, said as such (exit 3): never the agent's failure
        raise live.error(f"cannot be made: {exc}") from None
    except BaseException:
        await _close_quietly(live)
        raise
    return live


async def _close_quietly(live: LivePlayground) -> None:
    """Tear down a playground on the way out of an error: that error is the one to tell."""
    with contextlib.suppress(PlaygroundError):
        await live.close()


def _hand_over(folder: Path, sandbox: Sandbox | None) -> None:
    """Give the folder to the agent user of the run's side (no other user may enter it)."""
    folder.chmod(0o700)
    user = sandbox.user if sandbox is not None else None
    if user is None:
        return
    os.chown(folder, user.uid, user.gid)
    for entry in walk(folder, SEED_BOUNDS):
        os.chown(entry.name, user.uid, user.gid, dir_fd=entry.folder_fd, follow_symlinks=False)
