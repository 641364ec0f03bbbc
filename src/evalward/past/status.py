"""Seed 003's Eval status, kept between runs beside the results runs already leave.

Seed 003 keeps on each Eval: `phase` (Pending / Running / Passed / Failed / Stale), `lastRunAt`,
`lastResult`, `lastScore`, `passingFixtures` / `failingFixtures` / `totalFixtures`,
`fixtureResults`, `judgeAgreement` and `targetAgentGeneration`. evalward has no cluster to hold
them, so each Eval's status is one JSON file, `<eval>.json`, in one of two stores:

- the default branch's, `status/` in the result cache directory (`.evalward/cache`, which
  `actions/cache` keeps between runs and pull requests restore from their base branch), written
  by the action on a push to the default branch and on a `schedule`, beside the score log
  (`trend.py`) and under the same trust rule: a cache the checkout could fill is not read;
- the local one, `.evalward/status/`, written by `evalward run`: a run on a laptop is not the
  default branch's status and does not pretend to be.

`Stale` and `Pending` are never stored: they are what a record means against the checkout it is
read in (`current`). A record is Stale when its Eval's target agent is no longer the one that
ran: another fingerprint (its definition and every file it depends on, as the result cache
keys them) or another `metadata.generation`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from evalward.files.safe_files import read_regular
from evalward.past.history import SAFE_NAME, unreadable, write_atomically
from evalward.plan.fingerprint import FileIndex, agent_fingerprint
from evalward.resources import Agent, Located, ResourceSet
from evalward.text.counts import and_others

STATUS_DIR = "status"
"""The default branch's status: this folder of the result cache directory."""
LOCAL_STATUS_DIR = Path(".evalward") / "status"
"""Local runs' status (`evalward run`), under the repository root."""
SCHEMA_VERSION = 1
MAX_FILE_BYTES = 4 * 1024 * 1024
MESSAGE_CHARS = 300


class Phase(StrEnum):
    pending = "Pending"
    running = "Running"
    passed = "Passed"
    failed = "Failed"
    stale = "Stale"


class _Record(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", defer_build=True
    )


class FixtureStatus(_Record):
    """One row of `fixtureResults`, compact: the agent's output and the judge's verdict stay in
    the run's results.json and report."""

    name: str = Field(max_length=253)
    score: float = Field(ge=0, le=1)
    result: str = Field(max_length=20)
    severity: str = Field(max_length=20)
    message: str = Field(default="", max_length=MESSAGE_CHARS + 1)


class Attempt(_Record):
    """A run that started (`running`) or ended without a result (`interrupted`)."""

    at: str = Field(max_length=40)
    commit: str = Field(default="", pattern=r"^[0-9a-f]{0,64}$")
    event: str = Field(default="", max_length=40)
    run_url: str = Field(default="", max_length=500)
    reason: str = Field(default="", max_length=500)


class ScheduledRun(_Record):
    """The last scheduled run's score and result, which the next scheduled run compares with."""

    at: str = Field(max_length=40)
    commit: str = Field(default="", pattern=r"^[0-9a-f]{0,64}$")
    last_score: str = Field(pattern=r"^[01]\.\d\d$")
    last_result: str = Field(pattern=r"^(Pass|Fail)$")


class EvalStatus(_Record):
    """One Eval's status file. `phase` is Running while a run is on, else the last run's
    Passed/Failed (Pending before any run finished); `current` adds Stale."""

    schema_version: int = SCHEMA_VERSION
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=253)
    target_agent: str = Field(default="", max_length=253)
    phase: Phase = Phase.pending
    last_run_at: str | None = Field(default=None, max_length=40)
    last_result: str | None = Field(default=None, pattern=r"^(Pass|Fail)$")
    last_score: str | None = Field(default=None, pattern=r"^[01]\.\d\d$")
    passing_fixtures: int = Field(default=0, ge=0)
    failing_fixtures: int = Field(default=0, ge=0)
    total_fixtures: int = Field(default=0, ge=0)
    fixture_results: list[FixtureStatus] = Field(default_factory=list)
    judge_agreement: float | None = None
    target_agent_generation: int | str | None = None
    """The agent's `metadata.generation` at the last run, else `fp:` and its fingerprint's
    first 12 hex digits."""
    agent_fingerprint: str = Field(default="", max_length=64)
    commit: str = Field(default="", pattern=r"^[0-9a-f]{0,64}$")
    branch: str = Field(default="", max_length=255)
    event: str = Field(default="", max_length=40)
    run_url: str = Field(default="", max_length=500)
    running: Attempt | None = None
    interrupted: Attempt | None = None
    """The latest run that ended without a result for this Eval, and why (cleared by one
    that records a result)."""
    last_scheduled_run: ScheduledRun | None = None

    def document(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)

    @property
    def finished_phase(self) -> Phase:
        """The phase of the record's last finished run (a run killed earlier left Running)."""
        if self.last_result is None:
            return Phase.pending
        return Phase.passed if self.last_result == "Pass" else Phase.failed


@dataclass(frozen=True)
class AgentIdentity:
    """What the Stale check compares: the agent's fingerprint and `metadata.generation`."""

    fingerprint: str
    generation: int | None

    @property
    def target_generation(self) -> int | str:
        return self.generation if self.generation is not None else f"fp:{self.fingerprint[:12]}"


def identity_of(located: Located[Agent], fingerprint: dict[str, Any]) -> AgentIdentity:
    """The identity of an agent whose fingerprint is already known (the result cache's)."""
    material = json.dumps(fingerprint, sort_keys=True, separators=(",", ":"), default=str)
    return AgentIdentity(
        hashlib.sha256(material.encode("utf-8")).hexdigest(),
        located.resource.metadata.generation,
    )


def identities(resources: ResourceSet, agents: Iterable[str]) -> dict[str, AgentIdentity]:
    """The identities of `agents` (those defined in `resources`), against its root's files:
    each a hash of `fingerprint.agent_fingerprint` (what the result cache keys runs by), and
    its `metadata.generation`."""
    index = FileIndex(resources.root)
    defined = {name: resources.agents[name] for name in agents if name in resources.agents}
    return {
        name: identity_of(located, agent_fingerprint(located, index))
        for name, located in sorted(defined.items())
    }


class StatusStore:
    """A directory of status files, one per Eval, each written atomically."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.problems: list[str] = []
        """Status files that could not be read, and why (a bad file counts as none)."""

    def path(self, name: str) -> Path | None:
        return self.directory / f"{name}.json" if SAFE_NAME.fullmatch(name) else None

    def read(self, name: str) -> EvalStatus | None:
        """The Eval's record, or None: missing, or unreadable (noted in `problems`)."""
        path = self.path(name)
        if path is None or (not path.exists() and not path.is_symlink()):
            return None
        try:
            record = EvalStatus.model_validate_json(read_regular(path, MAX_FILE_BYTES))
            if record.name != name:
                raise ValueError(f"it holds the status of {record.name!r}")
            if record.schema_version != SCHEMA_VERSION:
                raise ValueError(f"schemaVersion {record.schema_version}, not {SCHEMA_VERSION}")
        except (OSError, ValueError, ValidationError) as exc:
            self.problems.append(f"{path}: ignored ({_unreadable(exc)})")
            return None
        return record

    def write(self, record: EvalStatus) -> None:
        path = self.path(record.name)
        if path is None:
            return
        write_atomically(path, json.dumps(record.document(), ensure_ascii=False, indent=1) + "\n")


def _unreadable(exc: OSError | ValueError | ValidationError) -> str:
    """What is wrong with a status file, in words: not a file it reads, not JSON (where), or
    JSON of another shape (which field, and what it holds instead of what)."""
    if isinstance(exc, OSError):
        return unreadable(exc)
    if not isinstance(exc, ValidationError):
        return str(exc)
    first = exc.errors(include_url=False)[0]
    if first["type"] == "json_invalid":
        try:  # for Python's words and place, as the history's and every other file's say it
            json.loads(first["input"])
        except json.JSONDecodeError as bad:
            return unreadable(bad)
        except ValueError:
            pass
        return f"not JSON: {first.get('ctx', {}).get('error', first['msg'])}"
    if first["type"] == "model_type":
        return "JSON, but not an Eval status: expected an object"
    field = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"])
    also = and_others(exc.error_count())
    said = first["msg"]
    if first["type"] == "string_pattern_mismatch":  # the pattern is no words for a reader
        said = "a value of a form evalward does not write there"
    return f"JSON, but not an Eval status: {field.lstrip('.')}: {said[:1].lower()}{said[1:]}{also}"


@dataclass(frozen=True)
class StatusRow:
    """An Eval's status as it reads against the checkout: Pending, Running, Passed, Failed or
    Stale, and why it is Stale."""

    name: str
    agent: str
    phase: Phase
    record: EvalStatus | None
    stale_because: str = ""

    def document(self) -> dict[str, Any]:
        base = self.record.document() if self.record else EvalStatus(name=self.name).document()
        base.update({"name": self.name, "targetAgent": self.agent, "phase": self.phase.value})
        if self.stale_because:
            base["staleReason"] = self.stale_because
        base.pop("schemaVersion", None)
        return base


def current(
    name: str, agent: str, record: EvalStatus | None, identity: AgentIdentity | None
) -> StatusRow:
    """What a record means now, for an Eval that targets `agent`, whose identity in the
    checkout is `identity` (None: the agent is not defined)."""
    if record is not None and record.running is not None:
        return StatusRow(name, agent, Phase.running, record)
    if record is None or record.last_result is None:
        return StatusRow(name, agent, Phase.pending, record)
    why = _stale(agent, record, identity)
    return StatusRow(name, agent, Phase.stale if why else record.finished_phase, record, why)


def _stale(agent: str, record: EvalStatus, identity: AgentIdentity | None) -> str:
    ran = f"the run of {record.last_run_at or '?'}"
    if record.target_agent and record.target_agent != agent:
        return f"the Eval now targets {agent}; {ran} was of {record.target_agent}"
    if identity is None:
        return f"its agent {agent} is not defined in this checkout"
    recorded = record.target_agent_generation
    now = identity.generation
    if isinstance(recorded, int) and now is not None and recorded != now:
        return f"agent {agent} is at generation {now}; {ran} was at generation {recorded}"
    if isinstance(recorded, int) and now is None:
        return f"agent {agent} has no metadata.generation; {ran} was at generation {recorded}"
    if not isinstance(recorded, int) and now is not None:
        return f"agent {agent} is at generation {now}; at {ran} it had none"
    if identity.fingerprint != record.agent_fingerprint:
        return f"agent {agent} changed since {ran} (its definition or a file it depends on)"
    return ""


def status_rows(resources: ResourceSet, store: StatusStore | None) -> list[StatusRow]:
    """Every Eval of `resources`, with its record in `store` (None: no record) read against
    them."""
    names = sorted(resources.evals)
    targets = {n: resources.evals[n].resource.spec.target_agent for n in names}
    known = identities(resources, targets.values()) if store is not None else {}
    return [
        current(n, targets[n], store.read(n) if store else None, known.get(targets[n]))
        for n in names
    ]
