"""What a playground adds to a run: provisioning, reading its state before and after, and
tearing it down, for the refund desk's SQLite database and its fake CRM service.

    python bench/playgrounds.py [--runs 20] [--only sqlite|service]
    python bench/playgrounds.py --in-flight 32 [--runs 640] [--writes]

The first form times each kind one run at a time. `--in-flight` runs `--runs` runs of an
agent that waits 50 ms (as a model call would) with that many in flight, each in the SQLite
playground as a run of `evalward run` has it (the job's template, the state before and after
with one `sql` criterion's query, the run's record, teardown), then the same runs without
one, and prints the CPU and wall the playground added per run; `--writes`: the agent adds a
row to the database first (its state is then read whole).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import sqlite3
import statistics
import time
from collections.abc import Mapping
from pathlib import Path

from evalward.resources.playground import Playground
from evalward.rundata.trace import Trace

try:
    from evalward.runtime.playground.base import PlaygroundSource, Templates
    from evalward.runtime.playground.provision import provision
    from evalward.runtime.playground.run import PlaygroundSetting, StateNeeds, run_in_playground
    from evalward.runtime.playground.state import capture
except ImportError:  # a source from before the playground's parts (`speed.py --before`)
    from evalward.runtime.playground_run import (
        PlaygroundSetting,
        StateNeeds,
        run_in_playground,
    )
    from evalward.runtime.playground_state import capture

    from evalward.runtime.playground import (
        PlaygroundSource,
        Templates,
        provision,
    )

ROOT = Path(__file__).resolve().parents[1]
KINDS = {
    "sqlite": Playground.model_validate({"sqlite": {"seed": "examples/refund-desk/shop/seed.sql"}}),
    "service": Playground.model_validate(
        {
            "service": {
                "start": [
                    "python3",
                    "examples/refund-desk/crm/server.py",
                    "--port",
                    "{port}",
                    "--seed",
                    "{seed}",
                ],
                "seed": "examples/refund-desk/crm/seed.json",
                "ready": "/health",
            }
        }
    ),
}
QUERY = "SELECT count(*) FROM refunds"
AGENT_SECONDS = 0.05


async def once(spec: Playground) -> float:
    started = time.perf_counter()
    source, env = PlaygroundSource("bench", spec, ROOT), {"PATH": "/usr/bin:/bin"}
    if "setting" in inspect.signature(provision).parameters:
        live = await provision(source, PlaygroundSetting(env))
    else:  # a source from before provision took its PlaygroundSetting (`speed.py --before`)
        live = await provision(source, env=env)
    try:
        await capture(live)
        await capture(live, [QUERY] if spec.sqlite else [])
    finally:
        await live.close()
    return (time.perf_counter() - started) * 1000


async def main(runs: int, only: str | None) -> None:
    for name, spec in KINDS.items():
        if only and name != only:
            continue
        times = [await once(spec) for _ in range(runs)]
        print(
            f"{name}: median {statistics.median(times):.1f} ms, max {max(times):.1f} ms "
            f"over {runs} runs (provision, two state reads, teardown)"
        )


async def in_flight(
    runs: int, parallel: int, writes: bool, playground: bool
) -> tuple[float, float]:
    """CPU (every thread's) and wall of `runs` runs, `parallel` in flight."""
    templates = Templates()
    setting = PlaygroundSetting({"PATH": "/usr/bin:/bin"}, templates=templates)
    source = PlaygroundSource("shop", KINDS["sqlite"], ROOT)
    slots = asyncio.Semaphore(parallel)
    agents_cpu = [0.0]
    """What the agent's own writes took (the agent's work, not the playground's)."""

    async def agent(env: Mapping[str, str]) -> Trace:
        if writes:
            started = time.thread_time()
            db = sqlite3.connect(env["EVALWARD_SQLITE_PATH"])
            db.execute("INSERT INTO refunds (order_id, amount, reason) VALUES ('A-1', 1, 'x')")
            db.commit()
            db.close()
            agents_cpu[0] += time.thread_time() - started
        await asyncio.sleep(AGENT_SECONDS)
        return Trace()

    async def one() -> None:
        async with slots:
            if not playground:
                await asyncio.sleep(AGENT_SECONDS)
                return
            trace, run = await run_in_playground(source, StateNeeds((QUERY,)), agent, setting)
            assert run is not None, trace.error
            run.record()

    try:
        await one()  # the template, loaded once per job: not counted
        cpu, wall = time.process_time(), time.perf_counter()
        agents_cpu[0] = 0.0
        await asyncio.gather(*(one() for _ in range(runs)))
        return time.process_time() - cpu - agents_cpu[0], time.perf_counter() - wall
    finally:
        templates.close()


def added(runs: int, parallel: int, writes: bool, rounds: int = 5) -> None:
    """Runs with and without the playground alternated, `rounds` each; medians."""
    found: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for _ in range(rounds):
        for playground in (True, False):
            found[playground].append(asyncio.run(in_flight(runs, parallel, writes, playground)))
    cpu = {k: statistics.median(c for c, _ in v) for k, v in found.items()}
    wall = {k: statistics.median(w for _, w in v) for k, v in found.items()}
    print(
        f"SQLite playground, {runs} runs of a {AGENT_SECONDS * 1000:.0f} ms agent"
        f"{' that writes a row' if writes else ''}, {parallel} in flight: "
        f"+{(cpu[True] - cpu[False]) / runs * 1000:.2f} ms CPU per run, "
        f"+{(wall[True] / wall[False] - 1) * 100:.1f} % wall "
        f"({wall[True]:.2f} s vs {wall[False]:.2f} s)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int)
    parser.add_argument("--only", choices=sorted(KINDS))
    parser.add_argument("--in-flight", type=int, metavar="N")
    parser.add_argument("--writes", action="store_true")
    args = parser.parse_args()
    if args.in_flight:
        added(args.runs or 640, args.in_flight, args.writes)
    else:
        asyncio.run(main(args.runs or 20, args.only))
