"""An environment on disk, once its installer is done: sealed and recorded (`finish`), kept
in the cache (`persist`) and restored from it (`restore`). Everything read from a kept entry
is read as a file anyone may have put there (`safe_files`)."""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import shutil
import stat
import threading
from pathlib import Path
from typing import Any

from evalward.errors import AgentRunError, UnsafeFile
from evalward.files.safe_files import read_regular
from evalward.runtime.environments.environment_limits import EnvironmentLimits, over
from evalward.runtime.environments.install_watch import measure
from evalward.runtime.environments.installers import CONFIG_STOP, remove_tree
from evalward.runtime.isolation.agent_users import AgentUser
from evalward.runtime.isolation.seal import SealBudget, seal

RECORD = "environment.json"
"""In each environment: its key and what it was built from (an agent can read it)."""
MAX_RECORD_BYTES = 1024 * 1024
"""The largest record read back from a kept entry."""


def everything(folder: Path) -> list[Path]:
    return [
        Path(at) / name for at, folders, files in os.walk(folder) for name in (*folders, *files)
    ]


def copy_source(source: Path, target: Path, not_copied: frozenset[str]) -> None:
    """The installer's own copy of the checkout: it may write (a build's `egg-info`, npm's
    `node_modules`) where the agent's working copy is read-only."""

    def ignore(folder: str, names: list[str]) -> set[str]:
        relative = Path(folder).relative_to(source)
        left_out = set()
        for name in names:
            mode = (Path(folder) / name).lstat().st_mode
            special = not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode))
            if special or (relative / name).as_posix() in not_copied:
                left_out.add(name)
        return left_out

    shutil.copytree(source, target, symlinks=True, ignore=ignore)


def finish(
    build: Path,
    sealed: Path,
    user: AgentUser | None,
    material: dict[str, Any],
    limits: EnvironmentLimits,
    stop: threading.Event,
) -> None:
    """Lock the installer out of `build`, drop its copy, caches and uv stop, and seal what it
    installed into `sealed` (refused over its `limits`) with a record of what it is (`material`,
    its `key` first); only the side's user may enter it. `build` is left to remove.

    What it installed is measured before a byte is copied (each file by its size, holes
    included: the copy writes them), so an environment over its size is refused without
    being written again; the seal's own count, as it copies, is the bound that holds."""
    owner = os.geteuid()
    os.chown(build, owner, -1)
    build.chmod(0o700)
    for scratch in ("src", "home"):
        remove_tree(build / scratch)
    (build / CONFIG_STOP).unlink(missing_ok=True)
    entries, size = measure(build, limits.files.value)
    over(entries, size, limits)
    builder = user.uid if user else owner
    seal(build, sealed, {builder}, owner, budget=_budget(limits, stop))
    record = {"key": material["key"], "built": dt.datetime.now(dt.UTC).isoformat(), **material}
    sealed.chmod(0o700)
    (sealed / RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    (sealed / RECORD).chmod(0o444)
    _open_to(sealed, user)


def _open_to(folder: Path, user: AgentUser | None) -> None:
    if user is None:
        folder.chmod(0o555)
    else:
        os.chown(folder, os.geteuid(), user.gid)
        folder.chmod(0o550)


def kept_state(kept: Path, key: str) -> str:
    """Whether the cache's entry `kept` can be restored: "ok" when it can, "" when nothing is
    kept, else why not. Its record is read as a file anyone may have put there (a FIFO would
    hold the job for good)."""
    if not os.path.lexists(kept):
        return ""
    try:
        record = json.loads(read_regular(kept / RECORD, MAX_RECORD_BYTES))
    except FileNotFoundError:
        return f"it has no {RECORD}"
    except UnsafeFile as exc:
        return f"its {RECORD} {exc.reason}"
    except (OSError, ValueError) as exc:
        return f"{RECORD} is unreadable ({exc})"
    if not isinstance(record, dict) or record.get("key") != key:
        return f"{RECORD} is another environment's"
    return "ok"


def _budget(limits: EnvironmentLimits | None, stop: threading.Event) -> SealBudget:
    """A seal's budget: `limits`, and `stop` (set when the run is cancelled: a thread cannot
    be, and the process waits for it before it exits)."""

    def check(entries: int, size: int) -> None:
        if stop.is_set():
            raise AgentRunError("the run was cancelled")
        if limits is not None:
            over(entries, size, limits)

    return check


def persist(live: Path, cache: Path, key: str, stop: threading.Event) -> None:
    """A copy in the cache, writable by its owner (the runner's user gets it back, and a
    later checkout on a self-hosted runner must be able to clean it); replaced atomically."""
    cache.mkdir(parents=True, exist_ok=True)
    partial = cache / f".partial-{secrets.token_hex(6)}"
    try:
        owner = os.geteuid()
        seal(live, partial, {owner}, owner, take=False, budget=_budget(None, stop))
        for path in (partial, *everything(partial)):
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | 0o200)
        remove_tree(cache / key)
        partial.rename(cache / key)
    finally:
        remove_tree(partial)


def restore(
    kept: Path,
    target: Path,
    user: AgentUser | None,
    limits: EnvironmentLimits,
    stop: threading.Event,
) -> None:
    """The cache's copy, sealed again as a build is (its owner's files only, its links
    checked, within its `limits`)."""
    partial = target.with_name(f".restore-{secrets.token_hex(6)}")
    try:
        owner = os.geteuid()
        keeper = os.lstat(kept).st_uid
        budget = _budget(limits, stop)
        seal(kept, partial, {keeper, owner}, owner, take=False, budget=budget)
        _open_to(partial, user)
        partial.rename(target)
    finally:
        remove_tree(partial)
