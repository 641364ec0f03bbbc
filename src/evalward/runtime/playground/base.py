"""What every part of a playground answers (`PlaygroundPart`: one module per `PartKind`, found
by `registry.py`), one run's provisioned playground (`LivePlayground`), and the job's
templates (`Templates`). What the definition alone says of a part is its settings' in
resources/playground.py.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import functools
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from evalward.errors import NotCommitted, PlaygroundError, TreeError
from evalward.files.committed import RepoFiles
from evalward.files.trees import FOLDER, TreeBounds, remove_tree
from evalward.resources.playground import PartKind, PartSettings, Playground
from evalward.rundata.playground_state import KeptPairs, PlaygroundState
from evalward.runtime.isolation.sandbox import Sandbox
from evalward.runtime.playground.service_environment import ServiceEnvironments

SEED_LIMIT = 64 * 1024 * 1024
"""The largest seed or snapshot read as text (a repository's file: `safe_files`)."""
SEED_BOUNDS = TreeBounds(depth=128, entries=100_000, seconds=120.0)
"""A files seed is copied (and the copy given to the agent user) within these."""
STATE_LIMIT = 8 * 1024 * 1024
"""Bytes of state read at most: the service's reply, the folder's files together."""
STATE_CHARS = 4 * STATE_LIMIT
"""Characters of the whole state (as JSON) at most; a database's are counted while it is read."""

SettingsT = TypeVar("SettingsT", bound=PartSettings)


@dataclass(frozen=True)
class PlaygroundSource:
    """A playground to provision: its definition, its name, and the tree it is made from
    (`world`, where its service runs) with the door its seeds are read through (`files`:
    that tree's commit; None, the working tree at `world`), for a run of `side` (both sides'
    runs of a base-defined playground are made from one tree, by different users)."""

    name: str
    spec: Playground
    world: Path
    files: RepoFiles | None = field(default=None, compare=False)
    side: str = ""

    @functools.cached_property
    def door(self) -> RepoFiles:
        """The one door to its seeds and snapshots (files/committed.py)."""
        return self.files if self.files is not None else RepoFiles.working_tree(self.world)


class PlaygroundPart(abc.ABC, Generic[SettingsT]):
    """One part of one run's playground (a new one per run), made from its settings."""

    kind: ClassVar[PartKind]
    """Its key in the registry: the field of `Playground` that defines it."""
    shares_env: ClassVar[bool] = False
    """The variables it tells the agent are given to the playground's programs too."""
    laid_out: ClassVar[tuple[str, ...]] = ()
    """What `lay_out` makes directly in the run's folder (a folder as `name/`): a run's
    folder holding nothing else is removed by these names, without a walk."""

    def __init__(self, spec: SettingsT) -> None:
        self.spec = spec

    def seed(self, live: LivePlayground, where: Path) -> Any:
        """Load its seed into a template at `where` (a folder of evalward's own), once per job
        and seed: what each run's part is laid out from (`Templates.of`). PlaygroundError
        when the seed does not load. A part without a template is never asked."""
        raise NotImplementedError(f"a {self.kind} part has no template")

    @abc.abstractmethod
    def lay_out(self, live: LivePlayground) -> dict[str, str]:
        """Make its files in the run's folder, as evalward, before the folder is given to the
        agent user; the variables that tell the agent where they are."""

    async def start(
        self, live: LivePlayground, env: Mapping[str, str], shared: Mapping[str, str]
    ) -> dict[str, str]:
        """Start what runs beside the agent, once the folder is the agent user's, with the
        environment programs draw from (`env`, no secret) and the other parts' `shared`
        variables; the variables that tell the agent where it is."""
        return {}

    @abc.abstractmethod
    async def capture(
        self, live: LivePlayground, state: PlaygroundState, queries: list[str]
    ) -> None:
        """Read its part of the state into `state` (and the answers to `queries` it can
        give), as evalward and never as the agent, within bounds."""

    async def tear_down(self, live: LivePlayground) -> str:
        """End what it started; what is left of it ("" for nothing). Its files go with the
        folder."""
        return ""

    def fresh(self, live: LivePlayground, templates: Templates) -> PlaygroundPart[SettingsT] | None:
        """This part as every run's starts, readable where no agent reaches (its template),
        so the state before a run is read once; None when each run's is its own."""
        return None


@dataclass
class LivePlayground:
    """A provisioned playground: where its parts are, and what the agent is told of them."""

    source: PlaygroundSource
    folder: Path
    sandbox: Sandbox | None
    kill_grace: float
    parts: list[PlaygroundPart[Any]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    templates: Templates | None = None
    environments: ServiceEnvironments | None = None
    """The job's services' built environments (None: a service's is not built)."""

    @property
    def name(self) -> str:
        return self.source.name

    def error(self, what: str) -> PlaygroundError:
        return PlaygroundError(f"playground {self.name!r}: {what}")

    async def close(self) -> None:
        """Tear down each part (a service's process group) and remove the folder (whatever
        the agent left in it: `files.trees`). PlaygroundError, naming what is left, when it
        cannot."""
        parts, self.parts = self.parts, []
        left = [what for part in reversed(parts) if (what := await part.tear_down(self))]
        names = [name for part in parts for name in part.laid_out]
        try:
            _remove_named(self.folder, names)
        except OSError:
            # Something else is in it, or something it made is not as made: walked in a
            # thread, so that a large tree an agent left holds up no other run.
            try:
                await asyncio.to_thread(remove_tree, self.folder)
            except TreeError as exc:
                raise self.error(f"its folder could not be removed: {exc}") from None
        if left:
            raise self.error("; ".join(left))


def _remove_named(folder: Path, names: list[str]) -> None:
    """Remove each name (an empty folder's, or a file's or link's), then the folder, opened
    without following a link. OSError at the first that is not as it was made.

    A few calls, made on the event loop as the folder's making was (`provision`): in a
    thread, the hand-over there and back cost each run more CPU than the calls (a SQLite
    playground's run one at a time added 1.09 ms of CPU with it, 0.62 without:
    docs/benchmarks.md)."""
    top = os.open(folder, FOLDER)
    try:
        for name in names:
            (os.rmdir if name.endswith("/") else os.unlink)(name.rstrip("/"), dir_fd=top)
    finally:
        os.close(top)
    folder.rmdir()


@dataclass(frozen=True)
class _Refused:
    why: str


FRESH_STATES_KEPT = 8
"""Playgrounds whose fresh service's state (and its tag) a job keeps in its `Templates`:
each up to STATE_LIMIT bytes and what they parse to, so a job of many playgrounds holds a
few, not all."""
_K = TypeVar("_K")
_V = TypeVar("_V")


def keep_latest(table: dict[_K, _V], key: _K, value: _V) -> None:
    """Put `value` in `table` as its newest entry, the one kept longest ago going once
    FRESH_STATES_KEPT are kept."""
    table.pop(key, None)
    if len(table) >= FRESH_STATES_KEPT:
        del table[next(iter(table))]
    table[key] = value


@dataclass
class Templates:
    """The job's templates: each part's seed of each tree loaded once (or the error loading
    it gave), in a folder of evalward's own; each run's part is a copy. `close` removes it."""

    folder: Path | None = None
    prepared: dict[tuple[str, Path, tuple[str, ...]], Any] = field(default_factory=dict)
    """Each template by part, tree and seeds: what its `seed` made, or why it did not load."""
    initial_states: dict[tuple[Path, str, tuple[str, ...]], PlaygroundState] = field(
        default_factory=dict
    )
    """The state of a fresh playground whose every part is a template's copy, by tree, name
    and paths: the same for each of its runs, so it is read once (`run.py`)."""
    fresh_states: dict[tuple[Path, str, str], tuple[bytes, Any]] = field(default_factory=dict)
    """The state each service answered as it started, by tree, playground and source: its
    bytes and the document read from them (`service.py`)."""
    state_tags: dict[tuple[str, Path, str, str], tuple[Playground, str, Any, int]] = field(
        default_factory=dict
    )
    """The strong ETag each service answered its state with as it started, by side, tree,
    playground and source, with the playground's definition, the document read with it and
    its bytes' count: what a later read's `304 Not Modified` stands for, and what its delta
    patches (`state_tags.py`, `state_delta.py`). Never shared between sides: a service of
    one side vouches for nothing the other side reads."""
    state_reads: dict[tuple[str, Path, str, str], tuple[Playground, asyncio.Event]] = field(
        default_factory=dict
    )
    """The first read of each service's fresh state, by the same key, set once answered:
    what the other runs starting with it wait for (`state_tags.first_read`)."""
    initial_reads: dict[tuple[Path, str, tuple[str, ...]], asyncio.Event] = field(
        default_factory=dict
    )
    """Each read of `initial_states` under way, set when it ends: the runs that start
    during it wait for it (`run.py`)."""
    compared: KeptPairs = field(default_factory=KeptPairs)
    """Which records of the documents kept here were found alike, for each run's state
    criteria (rundata/playground_state.py)."""

    def of(self, live: LivePlayground, part: PlaygroundPart[Any]) -> Any:
        """The template of `part`, made by its `seed` on its first run; PlaygroundError, for
        each run, when its seed does not load."""
        key = (part.kind, live.source.world, tuple(part.spec.seeds()))
        found = self.prepared.get(key)
        if found is None:
            if self.folder is None:
                self.folder = Path(tempfile.mkdtemp(prefix="evalward-templates-"))
            try:
                found = part.seed(live, self.folder / str(len(self.prepared)))
            except PlaygroundError as exc:
                found = _Refused(str(exc).removeprefix(f"playground {live.name!r}: "))
            self.prepared[key] = found
        if isinstance(found, _Refused):
            raise live.error(found.why)
        return found

    def close(self) -> None:
        """Remove the templates (a folder evalward made and no agent reached: one it cannot
        remove is left in the temporary folder, for the system to clean)."""
        folder, self.folder = self.folder, None
        self.prepared.clear()
        self.initial_states.clear()
        self.initial_reads.clear()
        self.fresh_states.clear()
        self.state_tags.clear()
        self.state_reads.clear()
        self.compared.clear()
        if folder is not None:
            with contextlib.suppress(TreeError):
                remove_tree(folder)


def seed_place(live: LivePlayground, seed: str) -> str:
    """The repository path of a seed (a file or folder) of the gate's side: one of its
    commit's (files/committed.py), never a file another program left in the workspace."""
    try:
        return live.source.door.place(seed)[0]
    except NotCommitted as exc:
        raise live.error(f"the seed {seed!r} {exc.reason}") from None


def seed_text(live: LivePlayground, seed: str) -> str:
    """The text of a seed file of the gate's side, read through the door."""
    try:
        return live.source.door.text(seed, SEED_LIMIT)
    except NotCommitted as exc:
        raise live.error(f"cannot read the seed {seed!r}: it {exc.reason}") from None
