"""The merge base's resources, parsed from only what a change touched when that is safe."""

from __future__ import annotations

import posixpath
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from evalward.definitions.loader import load_changed_resources, load_resources, needs_full_load
from evalward.errors import ResourceError
from evalward.files.committed import RepoFiles
from evalward.git import Git
from evalward.resources import ResourceSet
from evalward.resources.repo_config import RepoConfig


@dataclass(frozen=True)
class LoadedBase:
    """The merge base's resources and the folder they were loaded from: a whole checkout of
    it (`whole`), or an overlay of the YAML files the change touched."""

    resources: ResourceSet
    root: Path
    whole: bool


def load_base(
    git: Git,
    merge_base: str,
    head: ResourceSet,
    differs: set[str],
    stack: ExitStack,
    config: RepoConfig,
) -> LoadedBase:
    """The merge base's resources, parsing only what the change touched.

    A resource is the head's only while everything it was made from is unchanged: its file
    and every file it reads (`ResourceSet.reads`). Then it is reused; the base versions of
    the changed YAML files are read from git into a small overlay directory and parsed. When
    the change touches what an unchanged resource reads (the overlay holds none of that), a
    symbolic link, `evalward.yaml` or a `.gitattributes` (which decides what the head's
    checkout wrote), the base is checked out and loaded whole; the caller checks one out
    later with what the base side's runs read (`plan/reach.py`).
    """
    door = RepoFiles.at_commit(git, git.resolve(merge_base))
    wanted = sorted(p for p in differs if p.endswith((".yaml", ".yml")))
    if not (
        needs_full_load(differs)
        or head.depending_on(differs)
        or any(posixpath.basename(p) == ".gitattributes" for p in differs)
        or _linked(head)
        or door.links_among(wanted)
    ):
        overlay = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="evalward-base-")))
        for path, content in door.contents(wanted).items():
            target = overlay / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        try:
            base = load_changed_resources(
                overlay, head, differs, config, check_files=False, door=door
            )
        except ResourceError:
            pass  # e.g. an AgentV file whose references the overlay lacks: load it whole
        else:
            return LoadedBase(base, overlay, whole=False)
    root = stack.enter_context(git.worktree(merge_base))
    door = RepoFiles.at_commit(git, door.commit or merge_base, root)
    return LoadedBase(load_resources(root, config=config, door=door), root, whole=True)


def _linked(resources: ResourceSet) -> bool:
    """Whether a resource file is a symbolic link: its content can change while its path does
    not, so the overlay (which reuses unchanged paths) cannot be trusted with it."""
    files = {
        located.file
        for kind in (resources.agents, resources.fixtures, resources.evals, resources.calibrations)
        for located in kind.values()
    }
    return any((resources.root / file).is_symlink() for file in files | resources.agentv_files)
