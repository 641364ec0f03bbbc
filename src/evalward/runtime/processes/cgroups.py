"""A cgroup for each run's processes, where the machine lets evalward make one (cgroup v2).

A process that leaves its session (`setsid`, a double fork) cannot be told from another
run's by its session, but it cannot leave its cgroup: only a process that may write the
cgroup file system (root's, and evalward is the only root process a run has) moves it. So
where evalward can make cgroups, it makes one for the job, under its own, and one in it for
each run; a program is moved into its run's cgroup as it starts, and whatever is in that
cgroup when the run ends is the run's. A GitHub Docker action gets a read-only cgroup file
system (no CAP_SYS_ADMIN): there the run's sessions and its agent user say what is the
run's (`strays`), and `RunGroups.make` says why.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

MOUNTS = Path("/proc/self/mountinfo")
OWN = Path("/proc/self/cgroup")
PREFIX = "evalward-"


@dataclass(frozen=True)
class RunGroup:
    """One run's cgroup: where it is, and its path as `/proc/<pid>/cgroup` names it."""

    folder: Path
    name: str
    origin: Path
    """evalward's own cgroup, where a program starts before it is moved into this one."""


class RunGroups:
    """The job's cgroup, whose children are its runs' cgroups; removed at `close`."""

    def __init__(self, folder: Path, name: str, origin: Path) -> None:
        self.folder = folder
        self.name = name
        self.origin = origin
        """evalward's own cgroup: the parent of the job's."""
        self._made = 0

    @classmethod
    def make(cls) -> RunGroups | str:
        """The job's cgroup, or why it cannot be made here."""
        found = _cgroup2()
        if isinstance(found, str):
            return found
        parent, own = found
        _remove_stale(parent)
        folder = parent / f"{PREFIX}{os.getpid()}"
        try:
            folder.mkdir(mode=0o755)
        except OSError as exc:
            return f"cannot make a cgroup in {parent}: {exc.strerror or exc}"
        if not os.access(folder / "cgroup.procs", os.W_OK):
            remove(folder)
            return f"cannot move processes into a cgroup in {parent}"
        return cls(folder, f"{own.rstrip('/')}/{folder.name}", parent)

    def new(self) -> RunGroup | None:
        """A cgroup for one more run (None when the cgroup file system refuses one)."""
        self._made += 1
        folder = self.folder / f"run-{self._made}"
        try:
            folder.mkdir(mode=0o755)
        except OSError:
            return None
        return RunGroup(folder, f"{self.name}/{folder.name}", self.origin)

    def close(self) -> None:
        """Remove every run's cgroup left and the job's (they are empty by now)."""
        with contextlib.suppress(OSError):
            for child in self.folder.iterdir():
                if child.is_dir():
                    remove(child)
        remove(self.folder)


def join(group: RunGroup, pid: int) -> None:
    """Move `pid` (and the threads of its process) into `group`."""
    with contextlib.suppress(OSError):
        (group.folder / "cgroup.procs").write_text(str(pid))


def processes_in(folder: Path) -> list[int]:
    """The processes in the cgroup at `folder` now."""
    try:
        text = (folder / "cgroup.procs").read_text()
    except OSError:
        return []
    return [int(pid) for pid in text.split()]


def cgroup_of(pid: int) -> str | None:
    """The cgroup v2 path of a process (None: gone, or in no v2 hierarchy)."""
    try:
        text = Path(f"/proc/{pid}/cgroup").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return next((line[3:] for line in text.splitlines() if line.startswith("0::")), None)


def remove(folder: Path, tries: int = 50) -> None:
    """Remove an emptied cgroup; a process just killed may take a moment to leave it."""
    for _ in range(tries):
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)


def _cgroup2() -> tuple[Path, str] | str:
    """Where evalward's own cgroup is in the file system, and its path; or why not."""
    try:
        own = next(
            (line[3:] for line in OWN.read_text().splitlines() if line.startswith("0::")), None
        )
        mounts = MOUNTS.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        return f"cannot read {exc.filename}"
    if own is None or not own.startswith("/"):
        return "evalward is in no cgroup v2"
    for line in mounts:
        fields = line.split(" - ", 1)
        if len(fields) < 2 or not fields[1].startswith("cgroup2 "):
            continue
        left = fields[0].split()
        root, point = left[3], Path(left[4])
        if own == root or own.startswith(root.rstrip("/") + "/"):
            return point / own[len(root) :].lstrip("/"), own
    return "no cgroup2 file system is mounted"


def _remove_stale(parent: Path) -> None:
    """Remove the cgroups of jobs that ended without removing theirs (empty by now)."""
    with contextlib.suppress(OSError):
        for folder in parent.iterdir():
            pid = folder.name.removeprefix(PREFIX)
            if folder.name.startswith(PREFIX) and pid.isdigit() and not _alive(int(pid)):
                for child in folder.iterdir():
                    if child.is_dir():
                        remove(child, tries=1)
                remove(folder, tries=1)


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()
