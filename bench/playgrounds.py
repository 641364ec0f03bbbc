"""What a playground adds to a run: provisioning, reading its state before and after, and
tearing it down, for the refund desk's SQLite database and its fake CRM service.

    python bench/playgrounds.py [--runs 20] [--only sqlite|service]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

from evalward.resources.playground import Playground
from evalward.runtime.playground.base import PlaygroundSource
from evalward.runtime.playground.provision import provision
from evalward.runtime.playground.state import capture

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


async def once(spec: Playground) -> float:
    started = time.perf_counter()
    live = await provision(PlaygroundSource("bench", spec, ROOT), env={"PATH": "/usr/bin:/bin"})
    try:
        await capture(live)
        await capture(live, ["SELECT * FROM refunds"] if spec.sqlite else [])
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


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--only", choices=sorted(KINDS))
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.only))
