"""Scale: what a run costs as the suite, the agents and the repository grow.

Three series, each row a fresh repository and `evalward run` as a user runs it, against the
benchmark model server (50 ms, `--parallel 32`):

- **fixtures** 100 → 100,000 one-call fixtures of one agent (a `contains` and a distinct
  `regex` each; `evalward run <repo> --no-cache --no-history`): the suite's own cost;
- **agents** 10 → 1,000 agents (a `systemFile` prompt each, as `evalward init` writes them,
  10 fixtures each, 2,000 commits), a pull request changing one agent's prompt
  (`evalward run <repo> --base main`): what the definitions cost;
- **files** 100 agents and 1,000 → 50,000 other files in the same history, the same pull
  request: what the repository's size costs. The 50,000 row is to be within 20 % of the
  100-agent row in launch → first request, and ≤ 1.0 s.

Each row: wall, CPU (user + sys of the evalward process and what it waited for), peak RSS
(`wait4`'s, the largest process), launch → first model request (the model server's clock)
and the load average as the run ended; medians of `--runs` (of `--large-runs`, 1 by default,
at 100,000). The rows' runs take turns (every row once, then again), so a comparison between
rows (the 50,000-file repository against the 100 agents alone) sees the same load. With
`--promptfoo BIN`, promptfoo runs the same fixtures (1,000 and 10,000) on the same server.
With `--before [NAME=]SRC` (another checkout's `src`, repeatable), each run of this evalward
alternates with one of each of those, on the same repository. A series may name one row of
it (`files:50000`). `python bench/all.py --only scale --write` puts the table in
docs/benchmarks.md.

    python bench/scale.py [--series fixtures,agents,files] [--runs 3] [--max 100000]
    python bench/scale.py --series agents:100,files:50000 --runs 5 \
        --before main=/tmp/ew-before/src --before 9f84322=/tmp/ew-9f84322/src
    python bench/scale.py --promptfoo ~/.cache/evalward-promptfoo/node_modules/.bin/promptfoo
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from common import EVALWARD, compile_evalward, model_server
from p1_promptfoo import PROMPTFOO_ENV
from synth import USER_FIXTURE, USER_PATTERNS, generate_user_suite

SERIES = {
    "fixtures": [100, 1_000, 10_000, 100_000],
    "agents": [10, 100, 1_000],
    "files": [1_000, 10_000, 50_000],
}
COMMITS = 2_000
FIXTURES_PER_AGENT = 10
CHANGED = 7


@dataclass
class Measured:
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    rss: list[float] = field(default_factory=list)
    first: list[float] = field(default_factory=list)
    loads: list[float] = field(default_factory=list)
    """The machine's load average (1 minute) as each run ended."""

    def cells(self) -> list[str]:
        def m(values: list[float]) -> float:
            return statistics.median(values) if values else float("nan")

        return [
            f"{m(self.walls):.2f} s",
            f"{m(self.cpus):.2f} s",
            f"{m(self.rss):.0f} MiB",
            f"{m(self.first):.2f} s",
            f"{m(self.loads):.1f}",
        ]


def run_once(
    command: list[str],
    env: dict[str, str],
    server_stats: Callable[[], dict[str, float]],
    into: Measured,
    cwd: Path | None = None,
) -> None:
    """One process: its wall time, CPU and peak RSS as the kernel accounts them (`wait4`), and
    when the model server saw its first request."""
    server_stats()  # reset
    launched = time.time()
    start = time.perf_counter()
    process = subprocess.Popen(
        command,
        env={**os.environ, **env},
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    errors = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    into.walls.append(time.perf_counter() - start)
    if process.returncode not in (0, 1, 100):
        raise RuntimeError(f"{command[:4]} exited {process.returncode}: {errors[-2000:]!r}")
    into.cpus.append(usage.ru_utime + usage.ru_stime)
    into.rss.append(usage.ru_maxrss / 1024)
    into.loads.append(os.getloadavg()[0])
    stats = server_stats()
    if stats["first"] is not None:
        into.first.append(stats["first"] - launched)


def git(repo: Path, *args: str, data: bytes | None = None) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=b@example.com", *args],
        input=data,
        check=True,
        capture_output=True,
    )


AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: {name} }}
spec:
  models: [openai/bench-model]
  systemFile: prompts/{name}.md
"""


def monorepo(agents: int, others: int, commits: int = COMMITS) -> Path:
    """`agents` agents with a prompt file each and an Eval of 10 fixtures, `others` other
    files (a project's sources) in 100-file folders, `commits` commits of history on `main`,
    and a branch `change` (checked out) that edits one agent's prompt. Written with `git
    fast-import`, then checked out as a user's clone is."""
    repo = Path(tempfile.mkdtemp(prefix="evalward-scale-")) / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    files: dict[str, bytes] = {}
    for index in range(agents):
        name = f"agent-{index:04d}"
        files[f"agents/{name}.yaml"] = AGENT.format(name=name).encode()
        files[f"prompts/{name}.md"] = f"You are {name}. Answer briefly.\n".encode()
        files[f"evals/{name}.yaml"] = (
            "apiVersion: evalward.dev/v1\nkind: Eval\n"
            f"metadata: {{ name: {name}-eval }}\nspec:\n  targetAgent: {name}\n"
            f"  fixtureSelector: {{ matchLabels: {{ agent: {name} }} }}\n"
        ).encode()
        documents = [
            USER_FIXTURE.format(index=i, day=1, pattern=f"order #{i}\\b")
            .replace("name: order-", f"name: {name}-order-")
            .replace("agent: support", f"agent: {name}")
            .replace("targetAgent: support", f"targetAgent: {name}")
            for i in range(FIXTURES_PER_AGENT)
        ]
        files[f"fixtures/{name}.yaml"] = "---\n".join(documents).encode()
    for index in range(others):
        body = f'"""Module {index}."""\n\n\ndef f{index}() -> int:\n    return {index}\n' * 8
        files[f"src/pkg{index // 100:04d}/mod{index % 100:02d}.py"] = body.encode()
    stream = bytearray()
    stream += b"commit refs/heads/main\ncommitter b <b@example.com> 1700000000 +0000\n"
    stream += b"data 4\nbase\n"
    for path, content in files.items():
        stream += f"M 100644 inline {path}\ndata {len(content)}\n".encode() + content + b"\n"
    touched = [p for p in files if p.startswith("src/")] or ["README.md"]
    for number in range(1, commits):
        path = touched[number % len(touched)]
        content = f"# revision {number}\n".encode()
        stream += f"commit refs/heads/main\ncommitter b <b@example.com> {1700000000 + number} +0000\n".encode()  # noqa: E501
        stream += f"data {len(str(number))}\n{number}\n".encode()
        stream += f"M 100644 inline {path}\ndata {len(content)}\n".encode() + content + b"\n"
    git(repo, "fast-import", "--quiet", data=bytes(stream))
    git(repo, "checkout", "-q", "-f", "main")
    git(repo, "checkout", "-q", "-b", "change")
    prompt = repo / "prompts" / f"agent-{CHANGED:04d}.md"
    prompt.write_text(prompt.read_text() + "Be kind.\n")
    git(repo, "commit", "-qam", "change one prompt")
    return repo


def user_suite(fixtures: int) -> Path:
    repo = Path(tempfile.mkdtemp(prefix="evalward-scale-")) / "repo"
    repo.mkdir(parents=True)
    generate_user_suite(repo, fixtures, files=max(20, fixtures // 1000))
    return repo


def promptfoo_config(fixtures: int, base_url: str) -> dict[str, object]:
    """The user suite's fixtures as promptfoo tests: the same prompt, `contains` and regex."""
    tests = []
    for index in range(fixtures):
        day = index % 28 + 1
        pattern = USER_PATTERNS[index % len(USER_PATTERNS)].format(index=index, day=day)
        tests.append(
            {
                "vars": {"prompt": f"Where is order #{index}? It was due on day {day}."},
                "assert": [
                    {"type": "contains", "value": f"order #{index}?"},
                    {"type": "regex", "value": pattern},
                ],
            }
        )
    return {
        "providers": [
            {"id": "openai:chat:bench-model", "config": {"apiBaseUrl": base_url, "apiKey": "bench"}}
        ],
        "prompts": ["{{prompt}}"],
        "tests": tests,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--series", default="fixtures,agents,files")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--large-runs", type=int, default=1, help="runs of a 100,000 row")
    parser.add_argument("--max", type=int, default=100_000, help="skip rows above this size")
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument(
        "--before",
        action="append",
        default=[],
        metavar="[NAME=]SRC",
        help="alternate with the evalward in this src (repeatable)",
    )
    parser.add_argument("--promptfoo", help="promptfoo's executable: its rows at 1,000, 10,000")
    args = parser.parse_args()

    versions: dict[str, dict[str, str]] = {}
    for given in args.before:
        name, _, src = given.rpartition("=")
        before = {"PYTHONPATH": str(Path(src).resolve())}
        compile_evalward(before)
        versions[name or "before"] = before
    versions["evalward"] = {}
    rows: list[list[str]] = []
    with model_server(args.latency_ms) as server:
        base_env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "bench"}

        def stats() -> dict[str, float]:
            return server.stats(reset=True)

        # Every row's repository first, then rounds that run each row in turn (each version
        # of each row in turn): all rows see the same load, as the versions do.
        wanted = [
            (series, size)
            for item in args.series.split(",")
            for series, _, only in [item.partition(":")]
            for size in SERIES[series]
            if not only or size == int(only)
        ]
        made = {row: _made_apart(*row) for row in wanted if row[1] <= args.max}
        measured = {(row, label): Measured() for row in made for label in versions}
        for round_ in range(max(args.runs, args.large_runs)):
            for (series, size), (repo, command) in made.items():
                if round_ >= (args.large_runs if size >= 100_000 else args.runs):
                    continue
                for label, version in versions.items():
                    shutil.rmtree(repo / ".evalward", ignore_errors=True)
                    shutil.rmtree(repo.parent / "out", ignore_errors=True)
                    run_once(
                        command,
                        {**base_env, **version},
                        stats,
                        measured[(series, size), label],
                        repo,
                    )
        for (series, size), (repo, _) in made.items():
            for label in versions:
                rows.append([series, f"{size:,}", label, *measured[(series, size), label].cells()])
                print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
            if args.promptfoo and series == "fixtures" and size in (1_000, 10_000):
                rows.append(
                    ["fixtures", f"{size:,}", "promptfoo", *_promptfoo(args, server, size, stats)]
                )
                print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
            shutil.rmtree(repo.parent, ignore_errors=True)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    table = _table(rows, args, load)
    print(table)


def _made_apart(series: str, size: int) -> tuple[Path, list[str]]:
    """The row's repository, written by a process of its own. The kernel starts a child's
    peak RSS (`wait4`'s `ru_maxrss`) at its parent's: had this process held the 50,000 files
    it writes, every evalward it measures after would report that much at least."""
    with multiprocessing.get_context("fork").Pool(1) as pool:
        return pool.apply(_row, (series, size))


def _row(series: str, size: int) -> tuple[Path, list[str]]:
    if series == "fixtures":
        repo = user_suite(size)
        out = str(repo.parent / "out")
        flags = ["--no-cache", "--no-history", "--output-dir", out]
        return repo, [*EVALWARD, "run", str(repo), "--parallel", "32", *flags]
    agents, others = (size, 0) if series == "agents" else (100, size)
    repo = monorepo(agents, others)
    return repo, [*EVALWARD, "run", str(repo), "--base", "main", "--parallel", "32"]


def _promptfoo(
    args: argparse.Namespace, server: object, size: int, stats: Callable[[], dict[str, float]]
) -> list[str]:
    work = Path(tempfile.mkdtemp(prefix="evalward-scale-pf-"))
    config = work / "promptfooconfig.yaml"
    with multiprocessing.get_context("fork").Pool(1) as pool:  # as `_made_apart`, for the RSS
        pool.apply(_write_config, (config, size, server.base_url))  # type: ignore[attr-defined]
    measured = Measured()
    command = [
        args.promptfoo, "eval", "-c", str(config), "--max-concurrency", "32",
        "--no-cache", "--no-write", "-o", str(work / "pf.json"),
    ]  # fmt: skip
    for _ in range(args.runs):
        run_once(command, {**PROMPTFOO_ENV, "HOME": str(work)}, stats, measured, work)
    shutil.rmtree(work, ignore_errors=True)
    return measured.cells()


def _write_config(config: Path, size: int, base_url: str) -> None:
    config.write_text(yaml.safe_dump(promptfoo_config(size, base_url)))


def _table(rows: list[list[str]], args: argparse.Namespace, load: str) -> str:
    head = [
        f"Medians of {args.runs} runs ({args.large_runs} at 100,000), the rows' runs in turn;"
        " `load`: the 1-minute load average as each run ended, on 2 cores; after all runs"
        f" {load}.",
        "",
        "| series | size | tool | wall | CPU | peak RSS | launch → first request | load |",
        "|---|---|---|---|---|---|---|---|",
    ]
    return "\n".join([*head, *(f"| {' | '.join(row)} |" for row in rows)])


if __name__ == "__main__":
    main()
