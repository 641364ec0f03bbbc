"""One run's updates to an Eval status store (`status.py`), and what a scheduled run's
summary says about the previous scheduled run.

A run marks the Evals it is about to run Running; as it ends it records each Eval's result
(seed 003's fields) with its target agent's identity as it ran. An Eval the run ends without a
result for (cancelled, over budget, every run's provider unavailable) goes back to its record
from before, with `interrupted` saying when and why: a partial score is never recorded as the
Eval's. A run killed between the two leaves Running, with when and where it started, which is
what is known.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from dataclasses import KW_ONLY, dataclass, field

from evalward.past.status import (
    MESSAGE_CHARS,
    AgentIdentity,
    Attempt,
    EvalStatus,
    FixtureStatus,
    Phase,
    ScheduledRun,
    StatusStore,
)
from evalward.rundata.results import EvalResult
from evalward.text import utf8
from evalward.text.cuts import cap_chars


@dataclass(frozen=True)
class RunSource:
    """Which run writes a status: its event, commit, branch and when it started."""

    event: str
    """`push`, `schedule` (the action) or `local` (`evalward run`)."""
    commit: str
    """The commit that ran; anything but a SHA is left out."""
    started: dt.datetime
    branch: str = ""
    run_url: str = ""

    def __post_init__(self) -> None:
        sha = self.commit.strip().lower()
        object.__setattr__(self, "commit", sha if re.fullmatch(r"[0-9a-f]{1,64}", sha) else "")
        object.__setattr__(self, "branch", self.branch[:255])
        object.__setattr__(self, "run_url", self.run_url[:500])

    @property
    def at(self) -> str:
        return self.started.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class SinceScheduled:
    """A scheduled run's score and result beside the previous scheduled run's."""

    eval: str
    score: str
    result: str
    previous: ScheduledRun | None

    @property
    def delta(self) -> float | None:
        if self.previous is None:
            return None
        return round(float(self.score) - float(self.previous.last_score), 2)

    @property
    def previous_date(self) -> str:
        return self.previous.at[:10] if self.previous else ""


@dataclass
class StatusRun:
    """One run's updates to a store: Running when it starts, each Eval's result when it ends,
    and, for an Eval it ends without a result for, the record as it was with why."""

    store: StatusStore | None
    """None: no store (every method does nothing)."""
    source: RunSource
    _: KW_ONLY
    writes: bool = True
    """False: the store is only read (the previous scheduled run), never written."""
    previous: dict[str, EvalStatus | None] = field(default_factory=dict, init=False)
    _open: dict[str, str] = field(default_factory=dict, init=False)

    def start(self, evals: Mapping[str, str]) -> None:
        """Mark `evals` (name → target agent) Running."""
        if self.store is None or not self.writes:
            return
        for name, agent in evals.items():
            record = self.previous_of(name) or EvalStatus(name=name, target_agent=agent)
            running = self._attempt()
            self.store.write(record.model_copy(update={"phase": Phase.running, "running": running}))
            self._open[name] = agent

    def since_scheduled(self, results: Iterable[EvalResult]) -> list[SinceScheduled]:
        """Each head-side result beside the previous scheduled run's, as its store had it."""
        found: list[SinceScheduled] = []
        for result in results:
            if self.store is None or result.side != "head" or not self.store.path(result.eval):
                continue
            previous = self.previous_of(result.eval)
            scheduled = previous.last_scheduled_run if previous else None
            found.append(
                SinceScheduled(result.eval, result.last_score, result.last_result, scheduled)
            )
        return found

    def finish(
        self,
        results: Iterable[EvalResult],
        agents: Mapping[str, AgentIdentity],
        *,
        private: set[tuple[str, str]] | None = None,
        unfinished: Mapping[str, str] | None = None,
    ) -> None:
        """Record each head-side result whose Eval finished (not in `unfinished`, Eval → why),
        with its agent's identity as it ran; then `close` the Evals left open."""
        if self.store is None or not self.writes:
            return
        unfinished = unfinished or {}
        hidden = private or set()
        for result in results:
            if result.side != "head" or result.eval in unfinished:
                continue
            identity = agents.get(result.agent)
            if identity is None or self.store.path(result.eval) is None:
                continue
            record = self._result(result, identity, hidden, self.previous_of(result.eval))
            self.store.write(record)
            self._open.pop(result.eval, None)
        for name, why in unfinished.items():
            if name in self._open:
                self._end(name, why)
        self.close("the run ended without a result for this Eval")

    def close(self, reason: str) -> None:
        """Every Eval still marked Running by this run: back to its record before, with why."""
        for name in list(self._open):
            self._end(name, reason)

    def _end(self, name: str, reason: str) -> None:
        agent = self._open.pop(name)
        if self.store is None:
            return
        record = self.previous_of(name) or EvalStatus(name=name, target_agent=agent)
        interrupted = self._attempt().model_copy(update={"reason": cap_chars(reason, 500)})
        update = {"phase": record.finished_phase, "running": None, "interrupted": interrupted}
        self.store.write(record.model_copy(update=update))

    def previous_of(self, name: str) -> EvalStatus | None:
        if name not in self.previous:
            self.previous[name] = self.store.read(name) if self.store is not None else None
        return self.previous[name]

    def _attempt(self) -> Attempt:
        source = self.source
        return Attempt(
            at=source.at, commit=source.commit, event=source.event, run_url=source.run_url
        )

    def _result(
        self,
        result: EvalResult,
        identity: AgentIdentity,
        private: set[tuple[str, str]],
        previous: EvalStatus | None,
    ) -> EvalStatus:
        source = self.source
        scheduled = previous.last_scheduled_run if previous else None
        if source.event == "schedule":
            scheduled = ScheduledRun(
                at=source.at,
                commit=source.commit,
                last_score=result.last_score,
                last_result=result.last_result,
            )
        return EvalStatus(
            name=result.eval,
            target_agent=result.agent,
            phase=Phase(result.phase),
            last_run_at=source.at,
            last_result=result.last_result,
            last_score=result.last_score,
            passing_fixtures=result.passing,
            failing_fixtures=result.failing,
            total_fixtures=result.total,
            fixture_results=[
                FixtureStatus(
                    name=row.name,
                    score=row.score,
                    result=row.result.value,
                    severity=row.severity.value,
                    message=""
                    if (result.eval, row.name) in private
                    else _cut(row.message, MESSAGE_CHARS),
                )
                for row in result.fixture_results
            ],
            judge_agreement=result.judge_agreement,
            target_agent_generation=identity.target_generation,
            agent_fingerprint=identity.fingerprint,
            commit=source.commit,
            branch=source.branch,
            event=source.event,
            run_url=source.run_url,
            last_scheduled_run=scheduled,
        )


def _cut(text: str, limit: int) -> str:
    # a lone surrogate cannot be written: U+FFFD, as everywhere
    return cap_chars(utf8.writable(text), limit)
