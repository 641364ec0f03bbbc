"""Fixture-run results stored under a content hash of everything that determines them.

The key covers the resolved agent (its definition and the contents of the files it
references), the fixture, the Eval (its name, which a bring-your-own agent's request carries,
its scoring and judge configuration and its timeout), evalward's version and the rep index.
The side is not part of it: a result computed for `main` on a push is the same result a pull
request's base side needs, so the baseline is free. Nor is a result of one Eval another's:
an agent told which Eval it runs under may behave under one alone.

But a result computed on the head side of a comparison is kept apart: the pull request's
other programs ran in the same turn, and a baseline must never be one they could have
touched. The head reads a result the base (or a push) computed, then its own; the base reads
only what a base or a push computed (`CacheKeys.read`).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from evalward import __version__
from evalward.errors import printable, why_refused
from evalward.plan.fingerprint import FileIndex, agent_fingerprint
from evalward.plan.plan import Checkout, PlannedRun
from evalward.plan.playgrounds import PlaygroundKeys
from evalward.plan.result_cache_db import BUSY_SECONDS, ResultStore
from evalward.providers.registry import Providers
from evalward.resources.models import EvalFixture
from evalward.rundata.cache_mode import CacheMode
from evalward.rundata.pairwise_record import PairAgreement
from evalward.rundata.results import FixtureResult
from evalward.rundata.sides import Side

_Stored = TypeVar("_Stored", bound=BaseModel)


def _canonical(value: Any) -> str:
    """Stable JSON text of any JSON-serialisable value: keys sorted, no spaces, every
    character escaped (a name's byte that is not UTF-8 too), so no line break in it."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)


class ResultCache:
    """Results by key in a directory, as JSON in one database (`result_store`): a reader
    never takes part of a result for one."""

    def __init__(self, directory: Path, mode: CacheMode = CacheMode.read_write) -> None:
        self.mode = mode
        self._store = ResultStore(directory / "results", create=self.writes)

    @property
    def reads(self) -> bool:
        return self.mode.reads

    @property
    def writes(self) -> bool:
        return self.mode.writes

    def get(self, key: str) -> FixtureResult | None:
        return self._read(key, FixtureResult)

    def contains(self, key: str) -> bool:
        return self.reads and self._store.contains(key)

    def holds(self, keys: CacheKeys) -> Callable[[PlannedRun], bool] | None:
        """Whether this cache will answer a run (None: it answers none, so no key is made
        before the runs need theirs: 1,000 keys were 20 ms before a first run's first call)."""
        if not self.reads or self._store.empty():
            return None
        return lambda run: any(self.contains(key) for key in keys.read(run))

    def put(self, key: str, result: FixtureResult) -> None:
        """Store a result. Errors and timed-out runs are never stored, so a flaky provider or
        a slow run is tried again next time; one replaces what the key held, so no older
        result outlives a run that errs."""
        if not self.writes:
            return
        if result.status.value == "error" or result.timed_out:
            self._store.remove(key)
        else:
            self._store.put(key, result.model_dump_json())

    def replace(self, key: str, result: FixtureResult) -> None:
        """Store `result` where `key` holds one already, and nowhere else: a base run judged
        after it was stored unjudged (`flows.base_judging`) is kept only where its first
        result was (a run a head program could have reached never is)."""
        if self.writes and self._store.contains(key):
            self.put(key, result)

    def agreement(self, key: str) -> PairAgreement | None:
        """A pairwise judge's calibration replay kept under `key` (`pairwise_panel`'s key:
        the judge, the calibration and the prompt), or None."""
        return self._read(key, PairAgreement)

    def _read(self, key: str, model: type[_Stored]) -> _Stored | None:
        """What `key` holds as a `model`, or None: unread, absent or not one (a read that
        fails is a miss)."""
        raw = self._store.get(key) if self.reads else None
        try:
            return None if raw is None else model.model_validate_json(raw)
        except (ValidationError, ValueError):
            return None

    def unkept(self, root: Path) -> str | None:
        """What to say of a store the machine refused and the run went on without
        (`ResultStore.refused`), its database named from `root` where it is under it
        (None: nothing was refused). What was stored is committed first: a refusal of the
        last results is said too, not lost unsaid at the process's end (any other error of
        that commit is as silent as it was there: the run is over, and this is its cache)."""
        with contextlib.suppress(OSError):
            self._store.commit()
        refused = self._store.refused
        if refused is None:
            return None
        path = self._store.path
        shown = os.path.relpath(path, root) if path.is_relative_to(root) else str(path)
        if refused.errno == errno.EBUSY:
            fix = (
                f"Another run held the database past {BUSY_SECONDS:.0f} s: let it finish "
                "(or end it) so that a rerun reuses them"
            )
        else:
            fix = "Free space (or raise the file size limit) so that a rerun reuses them"
        return (
            f"the result cache ({printable(shown)}) could not be written: "
            f"{why_refused(refused)}. The runs were made; nothing was stored for a rerun "
            f"from then on. {fix}"
        )

    def keep_agreement(self, key: str, measured: PairAgreement) -> None:
        """Keep a replay every pair of which was answered: one with errors says nothing of
        the judge, and is replayed next time."""
        if self.writes and not measured.errors:
            self._store.put(key, measured.model_dump_json())


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
        self._evals: dict[tuple[Side, str], str] = {}
        self._keys: dict[PlannedRun, str] = {}
        self._playgrounds = PlaygroundKeys()

    def of(self, run: PlannedRun) -> str:
        """Where the run's result is kept: a head run of a comparison apart from the rest."""
        key = self._material(run)
        if run.side is Side.head and Side.base in self._checkouts:
            return hashlib.sha256(f"{key}\nhead of a comparison".encode()).hexdigest()
        return key

    def read(self, run: PlannedRun) -> list[str]:
        """Where the run's result may be found, first to last: a head run of a comparison
        takes a result no pull request's program ran beside, else its own."""
        own = self.of(run)
        shared = self._material(run)
        return [shared, own] if own != shared else [own]

    def _material(self, run: PlannedRun) -> str:
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
        """A hash of the Eval's shared material, the fixture and the rep, each as canonical
        JSON text (which holds no line break) on a line of its own."""
        shared = self._evals.get((run.side, run.eval))
        if shared is None:
            shared = self._evals[(run.side, run.eval)] = _canonical(
                {"evalward": __version__, **self._shared(run.side, run.eval)}
            )
        definition = self._checkouts[run.side].resources.fixtures[run.fixture].resource
        fixture = _fixture_text(definition)
        conversation = definition.spec.conversation
        user = conversation.user if conversation is not None else None
        if user is not None and user.model:  # where its own simulated user's replies come from
            fixture += "\n" + _canonical(self._providers.identity_of([user.model]))
        embedders = [a.model for a in definition.spec.leaf_assertions if a.type == "similar"]
        if embedders:  # where its `similar` assertions' embeddings come from
            fixture += "\n" + _canonical(self._providers.identity_of(embedders))
        world = self._playgrounds.of(self._checkouts[run.side], run)
        if world is not None:  # the playground's definition and seeds
            fixture += "\n" + _canonical(world)
        removed = self._checkouts[run.side].removed_tools.get((run.eval, run.fixture))
        if removed:  # the base's checks a head agent's renamed tool fails (never a cached pass)
            fixture += "\n" + _canonical(sorted(tool.name for tool in removed))
        return hashlib.sha256(f"{shared}\n{fixture}\n{run.rep}".encode()).hexdigest()

    def _shared(self, side: Side, name: str) -> dict[str, Any]:
        """The material every run of an Eval on one side has in common, once (the Eval's
        name, the agent's fingerprint, the scoring, judge and model endpoints, and the
        timeout: a run that finished within another Eval's longer one did not within this
        one's, and an agent's request names its Eval, so a pass under one is not another's)."""
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
        models += [m for m in [eval_def.spec.simulated_user.model] if m]
        checkout = self._checkouts[side]
        return {
            "eval": name,
            "providers": self._providers.identity_of(models),
            **({"side": side.value, "sha": checkout.sha} if self._providers.by_side else {}),
            "agent": self.agent(side, agent_name),
            "scoring": _dump(eval_def.spec.scoring),
            "judge": _dump(eval_def.spec.judge),
            "simulatedUser": _dump(eval_def.spec.simulated_user),
            "calibration": _dump(calibration.resource) if calibration else None,
            "timeoutSeconds": eval_def.spec.execution.timeout_seconds,
        }


def _dump(model: BaseModel) -> Any:
    return model.model_dump(mode="json", by_alias=True)


def _fixture_text(definition: EvalFixture) -> str:
    """A fixture's definition as JSON text on one line, by pydantic's serializer: what each
    run's key takes (1,000 fixtures: 6 ms, where sorted JSON of its dump took 14). Its keys
    are in the model's order and a mapping's in its file's, so a fixture whose file lists a
    mapping in another order misses its cached results once. Its text is always UTF-8: files
    are decoded with replacement and JSON from outside has its lone surrogates replaced
    (`text.jsontext`)."""
    return definition.model_dump_json(by_alias=True)
