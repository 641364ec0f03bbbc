"""What evalward takes from the workspace before the pull request's programs run, as the
agent user, and gives back after (`Sandbox.give_back`): write access to the folders on the
way to its output and cache, and every permission of others on the runner's files."""

from __future__ import annotations

import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

from evalward.errors import ConfigError
from evalward.files.inside import link_on_the_way
from evalward.text.escaping import printable

RUNNER_FILES = (
    "GITHUB_OUTPUT",
    "GITHUB_STEP_SUMMARY",
    "GITHUB_ENV",
    "GITHUB_PATH",
    "GITHUB_STATE",
    "GITHUB_EVENT_PATH",
)
"""The runner's files: writing one sets outputs, the summary or later steps' environment."""


def protect(
    workspace: Path,
    folders: Iterable[Path],
    runner_files: Mapping[str, str],
    kept_from_others: Iterable[Path] = (),
) -> dict[Path, int]:
    """Take away what the agent user could otherwise write, before any agent starts; returns
    the modes it changed, to give back once no agent runs (`Sandbox.give_back`).

    The directories evalward writes (output, cache) are created now, by evalward, and none of
    them, nor a directory on the way from the workspace to them, stays writable by others. A
    symbolic link on that way is refused, and so is a file where a folder must be: the
    checkout comes from the pull request, and a link would let it choose where evalward
    writes. The runner's files keep their owner (the runner reads them after the step) and
    lose every permission for others while agents run, as do `kept_from_others` (a file of
    git's configuration that keeps the checkout's token, the runner's temp folder).
    """
    taken: dict[Path, int] = {}
    for folder in folders:
        if not folder.is_relative_to(workspace):
            try:
                folder.mkdir(mode=0o755, parents=True, exist_ok=True)
            except OSError as exc:  # a file there or on the way, /proc, a read-only disk
                raise ConfigError(
                    f"{printable(str(folder))}: evalward cannot make its folder there "
                    f"({exc.strerror or exc}); point `output-dir`/`cache-dir` at a folder it "
                    "may make (it is created if missing)"
                ) from None
            _drop(folder, 0o002, taken)
            continue
        relative = folder.relative_to(workspace)
        link = link_on_the_way(workspace, folder)
        if link is not None:
            raise ConfigError(
                f"{printable(str(link.relative_to(workspace)))} is a symbolic link in the "
                f"checkout, and evalward writes to {printable(relative.as_posix())} through "
                "it: the commit under test would choose where evalward's files go. Remove the "
                "link, or point `output-dir`/`cache-dir` at a real directory."
            )
        # the workspace, then each folder below it on the way, `folder` last
        for step in [*(workspace / p for p in reversed(relative.parents)), folder]:
            try:
                step.mkdir(mode=0o755, exist_ok=True)
            except (FileExistsError, NotADirectoryError):
                raise ConfigError(
                    f"{printable(str(step.relative_to(workspace)))} is a file in the checkout, "
                    f"and evalward needs a folder there to write {printable(relative.as_posix())}. "
                    "Remove it, or point `output-dir`/`cache-dir` at a directory outside the "
                    "repository."
                ) from None
            _drop(step, 0o002, taken)
    for name in RUNNER_FILES:
        value = runner_files.get(name, "")
        if value and Path(value).is_file():
            _drop(Path(value), 0o007, taken)
    for path in kept_from_others:
        if path.exists():
            _drop(path, 0o007, taken)
    return taken


def _drop(path: Path, bits: int, taken: dict[Path, int]) -> None:
    mode = path.lstat().st_mode
    if not stat.S_ISLNK(mode) and mode & bits:
        taken.setdefault(path, stat.S_IMODE(mode))
        path.chmod(stat.S_IMODE(mode) & ~bits)
