"""The sandbox readied before the first program from a checkout starts, behind the door every
front end hands its `RunSetup` through (`session`): the store of agents' environments and its
limits, the sides kept apart, and, with the user switch, the workspace guarded.

The front end says what (`SandboxSetup`, from its settings); how is decided here once, so no
front end builds a runtime object of its own.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from evalward.git import Git
from evalward.runtime.environments.environment import EnvironmentStore
from evalward.runtime.environments.environment_limits import input_limits
from evalward.runtime.isolation.sandbox import Sandbox
from evalward.runtime.isolation.shared_places import AGENTS_PLACE
from evalward.runtime.isolation.workspace_guard import protect


@dataclass(frozen=True)
class EnvironmentBounds:
    """What one agent's environment may take to build: the action's `environment-*` inputs."""

    timeout_seconds: float = 600
    max_size_mb: float = 2048
    max_files: int = 200_000


@dataclass(frozen=True)
class SandboxSetup:
    """How the front end asks for its sandbox to be readied."""

    workspace: Path
    """The checkout the agent user must not write, and whose folders it must not read."""
    written: tuple[Path, ...]
    """evalward's own folders in it (output, cache): made now, by evalward, and kept from the
    agent user."""
    environments: Path | None
    """Where agents' environments are kept between jobs (None: built for this job alone)."""
    reuse: bool
    keep: bool
    scope: str
    """The event the environments are built for: a pull request's are never reused."""
    bounds: EnvironmentBounds
    log: Callable[[str], None]
    warn: Callable[[str], None]
    """A warning, as the front end shows one (the action: a workflow annotation)."""
    default_branch: bool = False
    """Whether the base is the repository's default branch, as the event says: its base
    turns go beside other jobs' bases of that branch; any other's only beside its own
    commit's (`side_turns`)."""


def ready(sandbox: Sandbox, setup: SandboxSetup, git: Git, env: Mapping[str, str]) -> None:
    """Before the first program from a checkout starts: the store of agents' environments,
    how runs' processes are tracked and the sides kept apart (said in the log), and, with the
    user switch, what the agent user must not write or read taken from the workspace
    (`workspace_guard.protect`), given back when the run ends. Without it, a credential the
    checkout keeps in its git configuration is named: every process of the job can read it."""
    if sandbox.environments is None:
        bounds = setup.bounds
        sandbox.use_environments(
            EnvironmentStore(
                setup.environments,
                reuse=setup.environments is not None and setup.reuse,
                keep=setup.environments is not None and setup.keep,
                scope=setup.scope,
                log=setup.log,
                limits=input_limits(bounds.timeout_seconds, bounds.max_size_mb, bounds.max_files),
            )
        )
    sandbox.keep_apart(setup.log, default_branch=setup.default_branch)
    persisted = git.credential_settings()
    if sandbox.user is not None:
        kept = [*(git.credential_files() if persisted else []), *_runner_temp(setup, env)]
        sandbox.give_back(protect(setup.workspace, setup.written, env, kept))
        sandbox.close_to_others(setup.workspace)
        if persisted:
            setup.warn(
                f"the checkout keeps a credential in its git configuration ({persisted[0]}): "
                "evalward keeps the files that hold it from the pull request's programs "
                "while they run, and every other process of this job can read it. Check out "
                "with `persist-credentials: false`."
            )
    elif persisted:
        setup.warn(
            f"the checkout keeps a credential in its git configuration ({persisted[0]}), "
            "which every process in this job can read, the pull request's programs "
            "too (`agent-isolation: off`). Check out with `persist-credentials: false`."
        )


def _runner_temp(setup: SandboxSetup, env: Mapping[str, str]) -> list[Path]:
    """The runner's temp folder, where other steps leave what they keep (actions/checkout
    v6 its token), unless evalward's own folders are in it: no agent needs it."""
    value = env.get("RUNNER_TEMP", "")
    temp = Path(value) if value else None
    if temp is None or not temp.is_absolute() or not temp.is_dir():
        return []
    ours = [setup.workspace, *setup.written, Path(tempfile.gettempdir()), AGENTS_PLACE]
    if any(path.is_relative_to(temp) for path in ours):
        return []
    return [temp]
