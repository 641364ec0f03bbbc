"""Fixture-run results stored under a content hash of everything that determines them.

The key covers the resolved agent (its definition and the contents of the files it
references), the fixture, the Eval's scoring and judge configuration, evalward's version and
the rep index. The side and the Eval's name are not part of it: a result computed for `main`
on a push is the same result a pull request's base side needs, so the baseline is free.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from evalward import __version__
from evalward.cache_mode import CacheMode
from evalward.fingerprint import FileIndex, agent_fingerprint
from evalward.plan import Checkout, PlannedRun, Side
from evalward.providers.registry import Providers
from evalward.results import FixtureResult


def run_key(material: dict[str, Any], rep: int) -> str:
    """A stable hash of a run's determining material (any JSON-serialisable mapping)."""
    canonical = json.dumps(
        {"evalward": __version__, "rep": rep, **material},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,  # every character escaped: a name's byte that is not UTF-8 too
        default=str,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResultCache:
    """A directory of results, one JSON file per key; a reader never takes part of one for
    a result (`put`)."""

    def __init__(self, directory: Path, mode: CacheMode = CacheMode.read_write) -> None:
        self.directory = directory
        self.mode = mode
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        return self.directory / "results" / key[:2] / f"{key}.json"

    @property
    def reads(self) -> bool:
        return self.mode.reads

    @property
    def writes(self) -> bool:
        return self.mode.writes

    def get(self, key: str) -> FixtureResult | None:
        if not self.reads:
            return None
        try:
            raw = self._path(key).read_text(encoding="utf-8")
            result = FixtureResult.model_validate_json(raw)
        except (OSError, ValidationError, ValueError):
            self.misses += 1
            return None
        self.hits += 1
        return result

    def contains(self, key: str) -> bool:
        return self.reads and self._path(key).is_file()

    def holds(self, keys: CacheKeys) -> Callable[[PlannedRun], bool] | None:
        """Whether this cache will answer a run (None: it answers none, so no key is made)."""
        return (lambda run: self.contains(keys.of(run))) if self.reads else None

    def put(self, key: str, result: FixtureResult) -> None:
        """Store a result. Errors and timed-out runs are never stored, so a flaky provider or
        a slow run is tried again next time (`timeoutSeconds` is not in the key); one replaces
        what the key held, so no older result outlives a run that errs."""
        if not self.writes:
            return
        path = self._path(key)
        if result.status.value == "error" or result.timed_out:
            path.unlink(missing_ok=True)
            return
        data = result.model_dump_json().encode("utf-8")
        try:
            _write_new(path, data)
        except FileExistsError:
            _replace(path, data)


def _write_new(path: Path, data: bytes) -> None:
    """A result for a key that holds none: written at its own name, created exclusively (so
    never over another writer's), the folder made only when missing. A run stores one result
    per fixture and creating a file is most of what that costs, so there is no temporary
    file to rename: a reader that meets this one half written reads JSON that does not
    parse, which is a miss, as no file at all would be; a writer killed halfway leaves such
    a file, which the next store of the key replaces."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    try:
        descriptor = os.open(path, flags, 0o600)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, flags, 0o600)
    try:
        _write_all(descriptor, data)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    finally:
        os.close(descriptor)


def _replace(path: Path, data: bytes) -> None:
    """A new result for a key that holds one: written aside (a new file of a random name,
    O_EXCL, owner-only, what tempfile.mkstemp does without its Python-level work), the old
    result removed, then renamed into place: ext4 flushes a file renamed over another to
    disk at once (`auto_da_alloc`), which cost more CPU than the rest of storing it. A
    reader between the two sees a miss, and runs the fixture again; none ever reads an older
    result after a newer one was stored."""
    temporary = path.with_name(f"{path.name}.{os.urandom(6).hex()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            _write_all(descriptor, data)
        finally:
            os.close(descriptor)
        path.unlink(missing_ok=True)
        temporary.replace(path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view) :]


class CacheKeys:
    """Result-cache keys: a hash of everything that determines a run's result (the module's
    docstring says what). What an Eval's runs share (its agent's fingerprint, its scoring,
    judge and model endpoints) is computed once per side and Eval, and each run's key once,
    however many stages ask for it."""

    def __init__(self, checkouts: dict[Side, Checkout], providers: Providers) -> None:
        self._checkouts = checkouts
        self._providers = providers
        self._indexes = {side: c.index or FileIndex(c.root) for side, c in checkouts.items()}
        self._agents: dict[tuple[Side, str], dict[str, Any]] = {}
        self._evals: dict[tuple[Side, str], dict[str, Any]] = {}
        self._keys: dict[PlannedRun, str] = {}

    def of(self, run: PlannedRun) -> str:
        if run not in self._keys:
            self._keys[run] = self._key(run)
        return self._keys[run]

    def agent(self, side: Side, name: str) -> dict[str, Any]:
        """The agent's fingerprint on one side (`fingerprint.agent_fingerprint`), once."""
        if (side, name) not in self._agents:
            located = self._checkouts[side].resources.agents[name]
            self._agents[(side, name)] = agent_fingerprint(located, self._indexes[side])
        return self._agents[(side, name)]

    def _key(self, run: PlannedRun) -> str:
        resources = self._checkouts[run.side].resources
        if (run.side, run.eval) not in self._evals:
            self._evals[(run.side, run.eval)] = self._shared(run.side, run.eval)
        material = {
            **self._evals[(run.side, run.eval)],
            "fixture": _dump(resources.fixtures[run.fixture].resource),
        }
        return run_key(material, run.rep)

    def _shared(self, side: Side, name: str) -> dict[str, Any]:
        """The material every run of an Eval on one side has in common."""
        resources = self._checkouts[side].resources
        eval_def = resources.evals[name].resource
        agent_name = eval_def.spec.target_agent
        calibration = resources.calibrations.get(eval_def.spec.judge.calibration or "")
        # Where the agent's and the judge's replies come from. An agent that calls models
        # itself (bring-your-own) names none: every provider's endpoint counts then.
        models = list(resources.agents[agent_name].resource.spec.models)
        if not models:
            models = list(self._providers.endpoints)
        models += eval_def.spec.judge.models
        checkout = self._checkouts[side]
        return {
            "providers": self._providers.identity_of(models),
            **({"side": side.value, "sha": checkout.sha} if self._providers.by_side else {}),
            "agent": self.agent(side, agent_name),
            "scoring": _dump(eval_def.spec.scoring),
            "judge": _dump(eval_def.spec.judge),
            "calibration": _dump(calibration.resource) if calibration else None,
        }


def _dump(model: BaseModel) -> Any:
    return model.model_dump(mode="json", by_alias=True)
