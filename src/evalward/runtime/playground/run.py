"""One run inside its playground: provision, read the state before, run the agent, read the
state after, tear down — the teardown whatever happened, cancellation included.

A playground that cannot be provisioned or read makes the run's trace end in an error that
names it; every other run, with its own playground, is unaffected.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from evalward.errors import PlaygroundError
from evalward.resources.checks.assertions import Assertion
from evalward.resources.checks.state_assertions import SqlAssertion, StateSnapshotAssertion
from evalward.rundata.playground_state import PlaygroundRun, PlaygroundState
from evalward.rundata.trace import StepType, Trace
from evalward.runtime.playground.base import LivePlayground, PlaygroundSource
from evalward.runtime.playground.provision import PlaygroundSetting, provision
from evalward.runtime.playground.state import capture


@dataclass(frozen=True)
class StateNeeds:
    """What a fixture's state criteria read beyond the state itself (of its every check:
    `EvalFixtureSpec.leaf_assertions`)."""

    queries: tuple[str, ...] = ()
    snapshots: tuple[str, ...] = ()

    @classmethod
    def of(cls, assertions: Sequence[Assertion]) -> StateNeeds:
        return cls(
            tuple(dict.fromkeys(a.query for a in assertions if isinstance(a, SqlAssertion))),
            tuple(
                dict.fromkeys(
                    a.snapshot
                    for a in assertions
                    if isinstance(a, StateSnapshotAssertion) and a.snapshot is not None
                )
            ),
        )


async def run_in_playground(
    source: PlaygroundSource,
    needs: StateNeeds,
    run: Callable[[Mapping[str, str]], Awaitable[Trace]],
    setting: PlaygroundSetting,
) -> tuple[Trace, PlaygroundRun | None]:
    """`run` (given the variables that tell the agent where its playground is) in a fresh
    playground; the trace and the playground's state before and after."""
    try:
        live = await provision(source, setting)
    except PlaygroundError as exc:
        return _failed(f"the playground could not be provisioned: {exc}"), None
    outcome: tuple[Trace, PlaygroundRun | None] | None = None
    try:
        outcome = await _inside(live, needs, run)
    finally:
        try:
            await live.close()
        except PlaygroundError as exc:
            # with no outcome, an exception is on its way out (a cancellation): it goes on
            if outcome is not None and outcome[0].error is None:
                outcome[0].add(StepType.error, content=f"the playground's teardown: {exc}")
    return outcome


async def _inside(
    live: LivePlayground, needs: StateNeeds, run: Callable[[Mapping[str, str]], Awaitable[Trace]]
) -> tuple[Trace, PlaygroundRun | None]:
    try:
        initial = await _initial(live)
    except PlaygroundError as exc:
        return _failed(f"the playground's initial state could not be read: {exc}"), None
    trace = await run(dict(live.env))
    try:
        final = await capture(live, needs.queries, needs.snapshots)
    except PlaygroundError as exc:
        if trace.error is None:
            trace.add(StepType.error, content=f"the playground's final state: {exc}")
        return trace, None
    compared = live.templates.compared if live.templates is not None else None
    return trace, PlaygroundRun(initial, final, compared)


async def _initial(live: LivePlayground) -> PlaygroundState:
    """The state before the agent runs. A playground whose every part is a copy of its
    template (a database) starts the same in every run: its state is read once from the
    templates (evalward's own, out of any agent's reach), the runs that start during that
    read waiting for it, and kept for all (not so with a service, whose state is its own,
    or files: `PlaygroundPart.fresh`). Each run's state after it shares the rows its agent
    left alone with it (`sqlite_changes.py`)."""
    templates = live.templates
    if templates is None:
        return await capture(live)
    key = (live.source.world, live.name, tuple(live.source.spec.paths()))
    under_way = templates.initial_reads.get(key)
    if under_way is not None:
        await under_way.wait()
    state = templates.initial_states.get(key)
    if state is not None:
        return state
    fresh = [found for part in live.parts if (found := part.fresh(live, templates)) is not None]
    if templates.folder is None or len(fresh) < len(live.parts):
        return await capture(live)
    reader = LivePlayground(live.source, templates.folder, None, live.kill_grace, fresh)
    if under_way is not None:  # the first read failed: this one says why
        return await capture(reader)
    read = templates.initial_reads[key] = asyncio.Event()
    try:
        state = templates.initial_states[key] = await capture(reader)
    finally:
        read.set()
    templates.compared.keep(state.document.get("db"))
    return state


def _failed(message: str) -> Trace:
    trace = Trace()
    trace.add(StepType.error, content=message)
    return trace
