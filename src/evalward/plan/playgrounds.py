"""Which playground a planned run gets, from which tree, and what of it a cache key covers.

A fixture's `playground` wins over its Eval's. It is made from the tree its definition came
from: under `gate-config: base` a definition of the base branch (what gates) is provisioned
from the base branch's tree (`Checkout.world`), never from the pull request's, so a pull
request cannot change the seeds, the service or the snapshots its agent is judged by; a
fixture or Eval the pull request adds comes with its own tree.
"""

from __future__ import annotations

import secrets
from typing import Any

from evalward.errors import GitError, NotCommitted, TreeError
from evalward.files.committed import RepoFiles, entries_digest
from evalward.plan.plan import Checkout, Plan, PlannedRun
from evalward.resources import ResourceSet
from evalward.resources.checks.state_assertions import STATE_TYPES, StateSnapshotAssertion
from evalward.resources.playground import Playground
from evalward.rundata.sides import Side
from evalward.runtime.playground.base import PlaygroundSource
from evalward.runtime.playground.service import watched_files


def defined_playground(
    resources: ResourceSet, eval_name: str, fixture: str
) -> tuple[str, Playground, str] | None:
    """(the name of what defines it, its playground, "EvalFixture" or "Eval") for a run."""
    spec = resources.fixtures[fixture].resource.spec
    if spec.playground is not None:
        return spec.playground.name or fixture, spec.playground, "EvalFixture"
    found = resources.evals[eval_name].resource.spec.playground
    if found is not None:
        return found.name or eval_name, found, "Eval"
    return None


def snapshot_files(resources: ResourceSet, fixture: str) -> list[str]:
    """The files a fixture's `stateSnapshot` criteria compare its playground's state with
    (in groups and on scripted turns too)."""
    return [
        a.snapshot
        for a in resources.fixtures[fixture].resource.spec.leaf_assertions
        if isinstance(a, StateSnapshotAssertion) and a.snapshot is not None
    ]


def source_of(checkout: Checkout, run: PlannedRun) -> PlaygroundSource | None:
    """The playground to provision for `run`, or None when it has none."""
    defined = defined_playground(checkout.resources, run.eval, run.fixture)
    if defined is None:
        return None
    name, spec, kind = defined
    owner = run.fixture if kind == "EvalFixture" else run.eval
    if checkout.world is not None and f"{kind}/{owner}" in checkout.world_names:
        return PlaygroundSource(
            name, spec, checkout.world, checkout.world_files, checkout.side.value
        )
    return PlaygroundSource(name, spec, checkout.root, checkout.files, checkout.side.value)


def uses_playgrounds(plan: Plan, resources: ResourceSet, side: Side) -> bool:
    return any(
        defined_playground(resources, run.eval, run.fixture) is not None
        for run in plan.for_side(side)
        if run.eval in resources.evals and run.fixture in resources.fixtures
    )


def world_names(gating: ResourceSet) -> frozenset[str]:
    """What the gating tree defines: its playgrounds are provisioned from it."""
    return frozenset(
        [f"EvalFixture/{name}" for name in gating.fixtures]
        + [f"Eval/{name}" for name in gating.evals]
    )


WHOLE_TREE = "."
"""What a playground whose service names no `watch` is made from besides its named files:
its program may import or read any file of the tree it runs from (which `plan/reach.py`
copies whole for it)."""


class PlaygroundKeys:
    """What a run's cache key covers of its playground: the definition, and the content of
    every file it is made from (seeds, snapshot files; for a service, the files it names and
    every file its `watch` matches, or every file of its tree without one: `WHOLE_TREE`).
    Each file is hashed once per job and tree, each definition dumped once: the runs of an
    Eval share them."""

    def __init__(self) -> None:
        self._hashes: dict[tuple[RepoFiles, str], str] = {}
        self._watched: dict[tuple[RepoFiles, tuple[str, ...]], str] = {}
        self._definitions: dict[int, tuple[Playground, dict[str, Any]]] = {}

    def of(self, checkout: Checkout, run: PlannedRun) -> dict[str, Any] | None:
        source = source_of(checkout, run)
        if source is None:
            return None
        spec = source.spec
        paths = [*spec.paths(), *snapshot_files(checkout.resources, run.fixture)]
        if spec.reads_everything:
            paths.append(WHOLE_TREE)
        elif spec.service is not None:
            paths += spec.service.named()
        key: dict[str, Any] = {
            "definition": self._definition(spec),
            "files": {path: self._hash(source.door, path) for path in sorted(set(paths))},
        }
        if spec.watched():
            key["watched"] = self._watch(source.door, spec)
        return key

    def _watch(self, door: RepoFiles, spec: Playground) -> str:
        """One hash of every file its services' `watch` matches in `door`'s tree."""
        key = (door, tuple(spec.watched()))
        if key not in self._watched:
            try:
                self._watched[key] = entries_digest(watched_files(spec, door))
            except (TreeError, OSError, GitError) as exc:  # starting the service says so too
                self._watched[key] = _unknown(exc)
        return self._watched[key]

    def _definition(self, spec: Playground) -> dict[str, Any]:
        # by identity: the loaded definition lives as long as the job, which keeps it here
        known = self._definitions.get(id(spec))
        if known is None or known[0] is not spec:
            known = self._definitions[id(spec)] = (
                spec,
                spec.model_dump(mode="json", by_alias=True),
            )
        return known[1]

    def _hash(self, door: RepoFiles, path: str) -> str:
        if (door, path) not in self._hashes:
            self._hashes[(door, path)] = _tree_hash(door, path)
        return self._hashes[(door, path)]


def missing_seeds(source: PlaygroundSource) -> list[tuple[str, str, str]]:
    """(part, seed, why) for each seed of a playground that is not a file or folder its
    side may read (files/committed.py): on a commit, one the commit holds."""
    missing: list[tuple[str, str, str]] = []
    for kind, part in source.spec.parts().items():
        for seed in part.seeds():
            try:
                source.door.place(seed)
            except NotCommitted as exc:
                missing.append((kind, seed, exc.reason))
    return missing


def state_without_playground(resources: ResourceSet, eval_name: str, fixture: str) -> list[int]:
    """The indexes of a fixture's state criteria when neither it nor its Eval names a
    playground for them to read."""
    if defined_playground(resources, eval_name, fixture) is not None:
        return []
    assertions = resources.fixtures[fixture].resource.spec.assertions
    return [i for i, a in enumerate(assertions) if isinstance(a, STATE_TYPES)]


def _tree_hash(door: RepoFiles, path: str) -> str:
    """A hash of a file, or of every file under a folder (modes, git's blob ids and paths),
    as the side's door reads them: alike on a commit and on a working tree (`digest`); what
    cannot be hashed (past the door's bounds), `_unknown`."""
    try:
        return door.digest(path)
    except (TreeError, OSError, GitError) as exc:  # provisioning says so too, for the run
        return _unknown(exc)


def _unknown(exc: Exception) -> str:
    """The key of files that cannot be hashed: what they hold is not known, so it is one no
    other job's run has and no result stands for."""
    return f"unreadable: {exc} ({secrets.token_hex(16)})"
