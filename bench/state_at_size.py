"""What reading a benchmark-sized state adds to a run: a service playground holding a retail
domain's database (about 1.5 MB of JSON: 1,000 orders with their items, addresses, payments
and fulfilments, 500 customers, 50 products' variants), an agent that takes a run's time
and changes one record through the service's API, its state read before and after, the
run's record made, and a `stateSnapshot` criterion of the whole expected state checked
against it. The service answers its state with an ETag and honours `If-None-Match`
(`tagged_crm.py`): a state still as it started is answered `304 Not Modified`, and a
changed one, to a read that asks for it, with what changed (`--answers deltas`, the
default; `tags`: whole; `whole`: whole and without a tag, as a service that knows nothing of
either).

    python bench/state_at_size.py [--runs 8] [--in-flight 1,32] [--rounds 3]
        [--agent-seconds 0.7] [--answers deltas] [--playground service|sqlite]
        [--sqlite-baseline unread|tiny] [--before NAME=SRC ...]

The same runs with the service's state read from `/health` (a few bytes) instead are the
baseline: the service, its start and the agent are the same, only the state differs. A
SQLite playground's (`--playground sqlite`) is the same database whose state is not read,
before or after a run (`--sqlite-baseline unread`), or a database of one order (`tiny`: the
whole cost of the database's size, the agent's own writes to it included). Both
are alternated, `--rounds` each, and the medians compared. `--before NAME=SRC` measures
another checkout's evalward (its `src` folder) too, each round's batches alternated with
this one's, each in a process of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from common import before_and_this

from evalward.host import Host
from evalward.resources.checks.state_assertions import StateSnapshotAssertion
from evalward.resources.playground import Playground
from evalward.rundata.playground_state import PlaygroundState
from evalward.rundata.results import Status
from evalward.rundata.trace import Trace
from evalward.runtime.playground.base import PlaygroundSource, Templates
from evalward.runtime.playground.run import PlaygroundSetting, StateNeeds, run_in_playground
from evalward.runtime.playground.sqlite import SqliteRun
from evalward.scoring.state import check_state

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "examples" / "refund-desk" / "crm" / "server.py"
TAGGED = Path(__file__).resolve().parent / "tagged_crm.py"


def retail_orders(count: int = 1000) -> dict[str, Any]:
    """Orders shaped as a retail domain's are: items with options, an address, payments."""
    orders: dict[str, Any] = {}
    for i in range(count):
        order_id = f"W{i:07d}"
        orders[order_id] = {
            "id": order_id,
            "customer": f"user_{i % 500}@example.com",
            "amount": round(20 + (i * 7.31) % 400, 2),
            "status": "delivered" if i % 3 else "processed",
            "address": {
                "address1": f"{100 + i} Main Street",
                "address2": f"Suite {i % 90}",
                "city": ["Austin", "Denver", "Boston", "Seattle"][i % 4],
                "country": "USA",
                "state": ["TX", "CO", "MA", "WA"][i % 4],
                "zip": f"{78700 + i % 300:05d}",
            },
            "items": [
                {
                    "name": ["T-Shirt", "Water Bottle", "Desk Lamp", "Backpack"][(i + k) % 4],
                    "product_id": f"{8310926033 + i * 13 + k}",
                    "item_id": f"{1000000000 + i * 31 + k}",
                    "price": round(10 + ((i + k) * 3.17) % 300, 2),
                    "options": {"color": "blue", "size": "M", "material": "cotton"},
                }
                for k in range(5)
            ],
            "fulfillments": [
                {
                    "tracking_id": [f"{i * 997 % 10**12:012d}"],
                    "item_ids": [f"{1000000000 + i * 31}"],
                }
            ],
            "payment_history": [
                {
                    "transaction_type": "payment",
                    "amount": round(20 + (i * 7.31) % 400, 2),
                    "payment_method_id": f"credit_card_{i % 700}",
                }
            ],
        }
    return orders


def retail_seed() -> dict[str, Any]:
    """A retail domain's database: 1,000 orders, 500 customers, 50 products' variants."""
    users = {
        f"user_{i}": {
            "user_id": f"user_{i}",
            "name": {"first_name": f"First{i}", "last_name": f"Last{i}"},
            "email": f"user_{i}@example.com",
            "address": {"address1": f"{i} Elm Road", "city": "Austin", "zip": "78701"},
            "payment_methods": {
                f"credit_card_{i}": {"source": "credit_card", "brand": "visa", "last_four": "1234"}
            },
            "orders": [f"W{j:07d}" for j in range(i, 1000, 500)],
        }
        for i in range(500)
    }
    products = {
        f"P{p:04d}": {
            "name": f"Product {p}",
            "variants": {
                f"{p * 100 + v}": {
                    "item_id": f"{p * 100 + v}",
                    "options": {"color": ["red", "blue"][v % 2], "size": "SML"[v % 3]},
                    "available": v % 4 != 0,
                    "price": round(5 + (p * v) % 200, 2),
                }
                for v in range(12)
            },
        }
        for p in range(50)
    }
    return {"orders": retail_orders(), "users": users, "products": products, "refunds": []}


def world(folder: Path) -> dict[str, Any]:
    """A repository folder with the CRM service (answering ETags) and its retail-sized seed,
    and the same data as a SQLite seed (`shop/`) with a one-order one beside it; the seed."""
    (folder / "crm").mkdir()
    shutil.copy(SERVER, folder / "crm" / "server.py")
    shutil.copy(TAGGED, folder / "crm" / "tagged.py")
    seed = retail_seed()
    (folder / "crm" / "seed.json").write_text(json.dumps(seed), encoding="utf-8")
    (folder / "shop").mkdir()
    for name, tables in (("seed", retail_tables(seed)), ("tiny", tiny_tables())):
        text = json.dumps({table: list(rows.values()) for table, rows in tables.items()})
        (folder / "shop" / f"{name}.json").write_text(text, encoding="utf-8")
    return seed


TABLES = ("orders", "users", "products")


def retail_tables(seed: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The retail database as a SQLite seed's tables: a row a record, keyed by its `id`, its
    nested values as JSON text (as a fixtures seed stores them and evalward reads them)."""

    def row(key: str, record: dict[str, Any]) -> dict[str, Any]:
        flat = {k: json.dumps(v) if isinstance(v, dict | list) else v for k, v in record.items()}
        return {"id": key} | {k: v for k, v in flat.items() if k != "id"}

    tables = {name: {k: row(k, v) for k, v in seed[name].items()} for name in TABLES}
    tables["refunds"] = {"R-0": {"id": "R-0", "order_id": "", "amount": 0, "reason": ""}}
    return tables


def tiny_tables() -> dict[str, dict[str, Any]]:
    """The baseline's database: the one order the agent changes, and a refund."""
    return {
        "orders": {"W0000017": {"id": "W0000017", "status": "delivered"}},
        "refunds": {"R-0": {"id": "R-0", "order_id": "", "amount": 0, "reason": ""}},
    }


def playground(kind: str, state: bool, answers: str, baseline: str = "unread") -> Playground:
    """The retail playground of `kind`, its state read whole (`state`) or the baseline's:
    the service's `/health`; the same database, or (`baseline` "tiny") one of one order."""
    if kind == "sqlite":
        seed = "shop/seed.json" if state or baseline == "unread" else "shop/tiny.json"
        return Playground.model_validate({"sqlite": {"seed": seed}})
    start = ["python3", "crm/tagged.py", "--port", "{port}", "--seed", "{seed}"]
    return Playground.model_validate(
        {
            "service": {
                "start": [*start, "--answers", answers],
                "seed": "crm/seed.json",
                "ready": "/health",
                "state": "/state" if state else "/health",
            }
        }
    )


async def batch(
    folder: Path,
    expected: dict[str, Any],
    state: bool,
    runs: int,
    parallel: int,
    *,
    agent_s: float,
    kind: str,
    answers: str,
    baseline: str,
) -> float:
    """Wall seconds of `runs` runs, `parallel` in flight."""
    source = PlaygroundSource("retail", playground(kind, state, answers, baseline), folder)
    templates = Templates()  # the job's, as execute/execute.py gives every run
    setting = PlaygroundSetting({"PATH": "/usr/bin:/bin"}, templates=templates)
    slots = asyncio.Semaphore(parallel)
    # the fixture's criterion, the same object in each of its runs
    if kind == "sqlite":
        value = retail_tables(expected) if state or baseline == "unread" else tiny_tables()
        snapshot = StateSnapshotAssertion(type="stateSnapshot", at="db", value=value)
    else:
        snapshot = StateSnapshotAssertion(type="stateSnapshot", at="service", value=expected)
    refunds = iter(range(1, runs + 1))

    async def agent(env: Mapping[str, str]) -> Trace:
        # each run's change its own (an amount of its own): no two runs end in one state
        amount = next(refunds)
        if kind == "sqlite":
            await asyncio.to_thread(refund_in_database, env["EVALWARD_SQLITE_PATH"], amount)
        else:
            url = env["EVALWARD_SERVICE_URL"] + "/refunds"
            order = {"order_id": "W0000017", "amount": amount, "reason": "damaged"}
            body = json.dumps(order).encode()
            request = urllib.request.Request(url, body, {"content-type": "application/json"})
            await asyncio.to_thread(lambda: urllib.request.urlopen(request, timeout=30).read())
        await asyncio.sleep(agent_s)
        return Trace()

    async def one() -> None:
        async with slots:
            trace, run = await run_in_playground(source, StateNeeds(), agent, setting)
            assert run is not None, trace.error
            run.record()
            if state or (kind == "sqlite" and baseline == "tiny"):  # a change the snapshot names
                status, why = check_state(snapshot, run)
                assert status is Status.failed and "W0000017" in why, why

    unread = kind == "sqlite" and not state and baseline == "unread"
    started = time.perf_counter()
    try:
        with unread_database() if unread else contextlib.nullcontext():
            await asyncio.gather(*(one() for _ in range(runs)))
    finally:
        templates.close()
    return time.perf_counter() - started


@contextlib.contextmanager
def unread_database() -> Iterator[None]:
    """A SQLite playground whose state is not read, before or after a run: the same
    database laid out and written by the agent, the state's reading alone left out."""

    async def nothing(self: SqliteRun, live: Any, state: PlaygroundState, queries: Any) -> None:
        state.document["db"] = {}

    reading = SqliteRun.capture
    SqliteRun.capture = nothing  # type: ignore[method-assign]
    try:
        yield
    finally:
        SqliteRun.capture = reading  # type: ignore[method-assign]


def refund_in_database(path: str, amount: int) -> None:
    """What the agent does to a SQLite playground: one order's status, one refund row."""
    connection = sqlite3.connect(path)
    try:
        with connection:
            connection.execute(
                "UPDATE orders SET status = 'refund_requested' WHERE id = 'W0000017'"
            )
            connection.execute(
                "INSERT INTO refunds (id, order_id, amount, reason) VALUES (?, ?, ?, ?)",
                (f"R-{amount}", "W0000017", amount, "damaged"),
            )
    finally:
        connection.close()


def worker(
    runs: int, parallel: int, agent_s: float, kind: str, answers: str, baseline: str
) -> None:
    """One batch with its state read and one without, alternated: their walls as JSON, and
    the CPU seconds each took in evalward's process and in the services it started."""
    found: dict[str, float] = {}
    host = Host.of_process()
    host.pause_collector()  # the collector as evalward's entry point sets it for a run
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        expected = world(folder)
        host.started()
        for state, name in ((True, "/state"), (False, "/health")):
            own, services = cpu()
            one_batch = batch(
                folder,
                expected,
                state,
                runs,
                parallel,
                agent_s=agent_s,
                kind=kind,
                answers=answers,
                baseline=baseline,
            )
            found[name] = asyncio.run(one_batch)
            own_after, services_after = cpu()
            found[f"cpu {name}"] = own_after - own
            found[f"services cpu {name}"] = services_after - services
    print(json.dumps(found))


def cpu() -> tuple[float, float]:
    """CPU seconds (user and system) of this process and of its ended children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--in-flight", default="1,32")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--agent-seconds", type=float, default=0.7)
    parser.add_argument("--before", action="append", default=[], metavar="NAME=SRC")
    parser.add_argument(
        "--answers",
        choices=("deltas", "tags", "whole"),
        default="deltas",
        help="how the service answers a read of its state: with what changed since the tag "
        "it was sent, whole unless unchanged, or always whole and without a tag",
    )
    parser.add_argument(
        "--playground",
        choices=("service", "sqlite"),
        default="service",
        help="the retail database behind a service, or as the playground's SQLite database",
    )
    parser.add_argument(
        "--sqlite-baseline",
        choices=("unread", "tiny"),
        default="unread",
        help="a SQLite playground's runs compared with the same database's state not read "
        "(the reading's cost), or with a database of one order (the size's whole cost)",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(
            args.runs,
            int(args.in_flight),
            args.agent_seconds,
            args.playground,
            args.answers,
            args.sqlite_baseline,
        )
        return
    trees = before_and_this(args.before)
    size = len(json.dumps(retail_seed()))
    shown = (
        f"a SQLite database's (against {args.sqlite_baseline})"
        if args.playground == "sqlite"
        else f"a service's ({args.answers})"
    )
    failures = 0
    for parallel in (int(n) for n in args.in_flight.split(",")):
        runs = max(args.runs, parallel * 2)
        found: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        failed: dict[str, str] = {}
        for _ in range(args.rounds):
            for name, src in trees.items():
                if name not in failed:
                    walls, why = batches(src, runs, parallel, args.agent_seconds, args)
                    if why:
                        failed[name] = why
                    else:
                        found[name].append(walls)
        for name, measured in found.items():
            where = (
                f"{name}: {shown} state of {size / 1e6:.2f} MB, {runs} runs of a "
                f"{args.agent_seconds:.2f} s agent, {parallel} in flight"
            )
            if name in failed:
                failures += name == "this tree"
                print(f"{where}: FAILED after {len(measured)} rounds: {failed[name]}")
                continue

            ms = {key: median_ms(measured, key, runs) for key in measured[0]}
            print(
                f"{where}, {args.rounds} rounds: "
                f"{ms['/state']:.0f} ms a run with its state read, {ms['/health']:.0f} ms "
                f"without: +{(ms['/state'] / ms['/health'] - 1) * 100:.1f} % wall; CPU a run, "
                f"evalward's {ms['cpu /state']:.0f} ms against {ms['cpu /health']:.0f}, the "
                f"service's {ms['services cpu /state']:.0f} ms against "
                f"{ms['services cpu /health']:.0f}"
            )
    sys.exit(1 if failures else 0)


WORKER_SECONDS = 900


def median_ms(batches: list[dict[str, float]], key: str, runs: int) -> float:
    """The median over batches of `key`'s seconds, in milliseconds a run."""
    return statistics.median(b[key] for b in batches) / runs * 1000


def batches(
    src: str, runs: int, parallel: int, agent_s: float, args: argparse.Namespace
) -> tuple[dict[str, float], str]:
    """One worker's walls (this tree's evalward or another's, `src`), or why it failed: the
    last line it wrote (a run that ended without its state says why), or that it hung."""
    try:
        done = subprocess.run(
            [
                *(sys.executable, __file__, "--worker", "--runs", str(runs)),
                *("--in-flight", str(parallel), "--agent-seconds", str(agent_s)),
                *("--playground", args.playground, "--answers", args.answers),
                *("--sqlite-baseline", args.sqlite_baseline),
            ],
            env={**os.environ, "PYTHONPATH": src},
            capture_output=True,
            text=True,
            check=False,
            timeout=WORKER_SECONDS,
        )
    except subprocess.TimeoutExpired:
        return {}, f"its worker did not end within {WORKER_SECONDS} s"
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()
        return {}, said[-1] if said else f"its worker exited with code {done.returncode}"
    return json.loads(done.stdout.splitlines()[-1]), ""


if __name__ == "__main__":
    main()
