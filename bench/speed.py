"""The speed figures of docs/benchmarks.md: what a user waits for and what a run costs.

Each workload runs `evalward` as a whole process against the benchmark model server (50 ms),
from bytecode, and is measured from outside: wall time, CPU (user + sys of the process, from
wait4) and peak RSS. With `--before SRC` (another checkout's `src`, repeatable) each run of
this evalward is alternated with a run of each of those, so all see the same load; figures are
medians.

  p1            1,000 one-call fixtures, a `contains` and a `regex` each, `--parallel 32`,
                `--no-cache --no-history --output-dir` (the suite bench/p1_promptfoo.py runs
                against promptfoo). Targets: wall <= 1.35 x ideal (ceil(1000/32) x 50 ms),
                CPU <= 1.0 ms per fixture, peak RSS <= 75 MiB.
  startup       the same command on one fixture: launch to the first model request (as the
                model server saw it). Target <= 0.3 s. And `evalward --help`, `evalward
                validate .` on this repository's examples: <= 0.25 s each.
  conversations 100 simulated-user conversations of 4 agent turns (7 model calls each, 3 of
                them the simulated user's), `--parallel 32`. Target <= 1.3 x ideal
                (ceil(100/32) x 7 x 50 ms).
  playgrounds   200 one-call fixtures each with a SQLite playground and one `sql` criterion,
                against the same 200 without, alternated, at `--parallel 32` and at
                `--parallel 1`. Targets: <= 1 ms of CPU per run and <= 10 % of the wall
                added at 32 in flight.
  service       a service playground's cost per run (bench/playgrounds.py): reported.
  events        one run of a program agent that prints 9,000 `tool_call` events and its
                answer (under the 10,000 steps a run keeps), and one of a REPL agent whose
                reply is 200,000 lines of text (5 MB, past the 65,536 characters a reply may
                hold: the run is an error once they are read): their CPU, reported.

    python bench/speed.py [--runs 5] [--only p1,startup] [--before [LABEL=]OTHER/src ...]
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from common import EVALWARD, ROOT, ModelServer, compile_evalward, median, model_server
from synth import generate, init_git

LATENCY_MS = 50.0
P1_FIXTURES = 1000
PARALLEL = 32


@dataclass(frozen=True)
class Measured:
    wall: float
    cpu: float
    rss_mib: float
    first_call: float | None
    """Seconds from launch to the first model request the server saw, if any."""


def measure(
    command: list[str], env: dict[str, str], server: ModelServer | None, cwd: Path | None = None
) -> Measured:
    """One run of `command`: wall, CPU and peak RSS of that process alone (wait4)."""
    if server is not None:
        server.stats(reset=True)
    with tempfile.TemporaryFile() as out:
        started_at = time.time()
        started = time.perf_counter()
        process = subprocess.Popen(
            command, env={**os.environ, **env}, cwd=cwd, stdout=out, stderr=subprocess.STDOUT
        )
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode not in (0, 1):
            out.seek(0)
            tail = out.read()[-2000:].decode(errors="replace")
            raise RuntimeError(f"{command} exited {process.returncode}: {tail}")
    first = None
    if server is not None:
        stats = server.stats(reset=True)
        first = stats["first"] - started_at if stats["first"] else None
    return Measured(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, first)


@dataclass
class Series:
    """One evalward's runs of one workload."""

    runs: list[Measured] = field(default_factory=list)

    def wall(self) -> float:
        return median([r.wall for r in self.runs])

    def cpu(self) -> float:
        return median([r.cpu for r in self.runs])

    def rss(self) -> float:
        return median([r.rss_mib for r in self.runs])

    def first_call(self) -> float:
        return median([r.first_call or math.nan for r in self.runs])


Versions = dict[str, dict[str, str]]


def alternate(
    versions: Versions, runs: int, one: Callable[[dict[str, str]], Measured]
) -> dict[str, Series]:
    """`runs` rounds, each running every version once, in turn."""
    series = {label: Series() for label in versions}
    one(next(iter(versions.values())))  # a warm-up, not counted
    for _ in range(runs):
        for label, env in versions.items():
            series[label].runs.append(one(env))
    return series


COLUMNS: list[str] = []
"""The table's version columns, in order; a workload that leaves one out prints "—" there."""


def row(figure: str, target: str, values: dict[str, str]) -> None:
    cells = " | ".join(values.get(column, "—") for column in COLUMNS)
    print(f"| {figure} | {target} | {cells} |", flush=True)


def p1(server: ModelServer, versions: Versions, runs: int, work: Path) -> None:
    repo = work / "p1"
    generate(repo, 1, P1_FIXTURES, tools=False, parallel=PARALLEL, fail_every=7)
    command = [*EVALWARD, "run", str(repo), "--parallel", str(PARALLEL), "--no-cache"]
    command += ["--no-history", "--output-dir", str(work / "p1-out")]
    env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "bench"}
    series = alternate(versions, runs, lambda v: measure(command, {**env, **v}, server))
    ideal = math.ceil(P1_FIXTURES / PARALLEL) * LATENCY_MS / 1000
    row(
        "P1 1,000 one-call fixtures, parallel 32: wall ÷ ideal (1.60 s)",
        "≤ 1.35",
        {k: f"{s.wall() / ideal:.2f} ({s.wall():.2f} s)" for k, s in series.items()},
    )
    row(
        "P1: CPU per fixture (start-up and reports included)",
        "≤ 1.0 ms",
        {k: f"{s.cpu() / P1_FIXTURES * 1000:.2f} ms" for k, s in series.items()},
    )
    row("P1: peak RSS", "≤ 75 MiB", {k: f"{s.rss():.1f} MiB" for k, s in series.items()})
    row(
        "P1: start-up (launch → first model request)",
        "—",
        {k: f"{s.first_call():.3f} s" for k, s in series.items()},
    )


def startup(server: ModelServer, versions: Versions, runs: int, work: Path) -> None:
    repo = work / "one"
    generate(repo, 1, 1, tools=False, parallel=PARALLEL)
    command = [*EVALWARD, "run", str(repo), "--no-cache", "--no-history"]
    command += ["--output-dir", str(work / "one-out")]
    env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "bench"}
    series = alternate(versions, runs, lambda v: measure(command, {**env, **v}, server))
    row(
        "Launch → first model request, one fixture",
        "≤ 0.30 s",
        {k: f"{s.first_call():.3f} s (CPU {s.cpu():.2f} s)" for k, s in series.items()},
    )
    row(
        "One fixture, the whole run: wall / peak RSS",
        "—",
        {k: f"{s.wall():.2f} s / {s.rss():.1f} MiB" for k, s in series.items()},
    )
    helps = alternate(versions, runs, lambda v: measure([*EVALWARD, "--help"], v, None))
    row("`evalward --help`", "≤ 0.25 s", {k: f"{s.wall():.3f} s" for k, s in helps.items()})
    validate = [*EVALWARD, "validate", str(ROOT)]
    checks = alternate(versions, runs, lambda v: measure(validate, v, None, cwd=ROOT))
    row(
        "`evalward validate` on the examples",
        "≤ 0.25 s",
        {k: f"{s.wall():.3f} s (CPU {s.cpu():.2f} s)" for k, s in checks.items()},
    )


CONVERSATION_EVAL = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: talk-eval }
spec:
  targetAgent: talker
  fixtureSelector: { matchLabels: { agent: talker } }
  simulatedUser: { model: openai/bench-model }
  scoring: { passThreshold: 0.9 }
  execution: { parallel: 32, timeoutSeconds: 600 }
"""
CONVERSATION_AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: talker }
spec:
  models: [openai/bench-model]
  system: You are a shop's support agent.
"""
CONVERSATION = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: talk-{index}, labels: {{ agent: talker }} }}
spec:
  targetAgent: talker
  conversation:
    user:
      persona: Customer {index}, brief.
      goal: Know where order {index} is.
      opening: Where is order {index}?
    maxTurns: 4
  assertions:
    - {{ type: contains, value: "answer:" }}
"""
CONVERSATIONS = 100
CALLS_PER_CONVERSATION = 7


def conversations(server: ModelServer, versions: Versions, runs: int, work: Path) -> None:
    repo = work / "talk"
    for folder in ("agents", "evals", "fixtures"):
        (repo / folder).mkdir(parents=True)
    (repo / "agents" / "talker.yaml").write_text(CONVERSATION_AGENT)
    (repo / "evals" / "talk.yaml").write_text(CONVERSATION_EVAL)
    (repo / "fixtures" / "talk.yaml").write_text(
        "---\n".join(CONVERSATION.format(index=i) for i in range(CONVERSATIONS))
    )
    command = [*EVALWARD, "run", str(repo), "--parallel", str(PARALLEL), "--no-cache"]
    command += ["--no-history", "--output-dir", str(work / "talk-out")]
    env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "bench"}

    def one(version: dict[str, str]) -> Measured:
        measured = measure(command, {**env, **version}, None)
        calls = server.stats(reset=True)["latency"]["n"]
        assert calls == CONVERSATIONS * CALLS_PER_CONVERSATION, f"{calls} model calls"
        return measured

    server.stats(reset=True)
    series = alternate(versions, runs, one)
    waves = math.ceil(CONVERSATIONS / PARALLEL)
    ideal = waves * CALLS_PER_CONVERSATION * LATENCY_MS / 1000
    row(
        f"100 simulated-user conversations × 7 calls, parallel 32: wall ÷ ideal ({ideal:.2f} s)",
        "≤ 1.3",
        {
            k: f"{s.wall() / ideal:.2f} ({s.wall():.2f} s, CPU {s.cpu():.2f} s, {s.rss():.0f} MiB)"
            for k, s in series.items()
        },
    )


PLAYGROUND_FIXTURES = 200
PLAYGROUND = """\
  playground:
    name: shop
    sqlite: {{ seed: {seed} }}
"""
SQL = """\
    - {{ type: sql, query: "SELECT count(*) FROM refunds", rows: [[0]] }}
"""


def _by_kind(commands: dict[str, list[str]], server: ModelServer, env: dict[str, str]) -> Measured:
    return measure(commands[env["BENCH_KIND"]], env, server)


def playground_suite(repo: Path, with_playground: bool) -> None:
    generate(repo, 1, PLAYGROUND_FIXTURES, tools=False, parallel=None)
    seed = "examples/refund-desk/shop/seed.sql"
    (repo / seed).parent.mkdir(parents=True)
    (repo / seed).write_bytes((ROOT / seed).read_bytes())
    if with_playground:
        evals = repo / "evals" / "agent-0000.yaml"
        evals.write_text(evals.read_text() + PLAYGROUND.format(seed=seed))
        fixtures = repo / "fixtures" / "agent-0000.yaml"
        marker = '    - { type: regex, pattern: "answer: case \\\\d+" }\n'
        text = fixtures.read_text()
        assert marker in text
        fixtures.write_text(text.replace(marker, marker + SQL.format()))
    init_git(repo)


def playgrounds(server: ModelServer, versions: Versions, runs: int, work: Path) -> None:
    """Every version's runs with and without the playground alternate in one series, so each
    difference, and each version against the others, is measured under one load."""
    env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "bench"}
    for parallel in (PARALLEL, 1):
        suites = {"playground": work / f"pg-{parallel}", "none": work / f"plain-{parallel}"}
        for kind, repo in suites.items():
            playground_suite(repo, kind == "playground")
        options = ["--parallel", str(parallel), "--no-cache", "--no-history", "--output-dir"]
        commands = {
            kind: [*EVALWARD, "run", str(repo), *options, str(work / f"out-{kind}")]
            for kind, repo in suites.items()
        }
        runs_of = {
            f"{label}/{kind}": {**env, **version, "BENCH_KIND": kind}
            for label, version in versions.items()
            for kind in commands
        }
        series = alternate(runs_of, runs, partial(_by_kind, commands, server))
        cells = {}
        for label in versions:
            with_it, without = series[f"{label}/playground"], series[f"{label}/none"]
            added_cpu = (with_it.cpu() - without.cpu()) / PLAYGROUND_FIXTURES
            added_wall = with_it.wall() / without.wall() - 1
            cells[label] = (
                f"{added_cpu * 1000:+.2f} ms / {added_wall * 100:+.1f} % "
                f"({with_it.wall():.2f} s vs {without.wall():.2f} s)"
            )
        row(
            f"SQLite playground, 200 one-call fixtures, parallel {parallel}: "
            "CPU added per run / wall added",
            "≤ 1 ms / ≤ 10 %" if parallel == PARALLEL else "—",
            cells,
        )


def service_playground(server: ModelServer, versions: Versions, runs: int, work: Path) -> None:
    """The refund desk's CRM service: start, wait ready, read its state before and after,
    stop (bench/playgrounds.py, in one process per version, its runs alternated)."""
    script = [sys.executable, str(ROOT / "bench" / "playgrounds.py"), "--runs", "10"]
    script += ["--only", "service"]
    times: dict[str, list[float]] = {label: [] for label in versions}
    for _ in range(runs):
        for label, env in versions.items():
            done = subprocess.run(
                script, env={**os.environ, **env}, cwd=ROOT, capture_output=True, text=True
            )
            if done.returncode != 0:
                raise RuntimeError(f"bench/playgrounds.py ({label}): {done.stderr[-2000:]}")
            times[label].append(float(done.stdout.split("median ")[1].split(" ms")[0]))
    row(
        "Service playground (a Python HTTP server): provision, two state reads, teardown, per run",
        "measured",
        {label: f"{median(values):.0f} ms" for label, values in times.items()},
    )


EVENTS = 9000
EVENTS_AGENT = f"""\
import json, sys
sys.stdin.readline()
for i in range({EVENTS}):
    print(json.dumps({{"type": "tool_call", "tool": "ping", "id": f"c{{i}}", "arguments": {{}}}}))
print(json.dumps({{"type": "final", "content": "all done"}}))
"""
EVENTS_SUITE = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: chatty }}
spec:
  runtime: {{ command: {{ run: [{sys.executable}, chatty.py] }} }}
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: chatty-eval }}
spec: {{ targetAgent: chatty, fixtures: [steps] }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: steps }}
spec:
  targetAgent: chatty
  input: {{ type: prompt, payload: {{ prompt: go }} }}
  assertions: [{{ type: contains, value: all done }}]
"""


REPL_LINES = 200_000
REPL_AGENT = f"""\
import sys
while True:
    try:
        input("> ")
    except EOFError:
        break
    sys.stdout.write("".join(f"line {{n}} of the answer\\n" for n in range({REPL_LINES})))
    sys.stdout.write("all done\\n")
"""


def events(server: ModelServer, versions: Versions, runs: int, work: Path) -> None:
    """What a program prints, each line read as an event or as its reply's text."""
    repl = "{ run: [" + sys.executable + ", chatty.py], stdin: text, repl: { prompt: '> ' } }"
    cases = {
        f"A program printing {EVENTS:,} events": (EVENTS_AGENT, EVENTS_SUITE),
        f"A REPL agent's reply of {REPL_LINES:,} lines": (
            REPL_AGENT,
            EVENTS_SUITE.replace(f"{{ run: [{sys.executable}, chatty.py] }}", repl),
        ),
    }
    for number, (figure, (agent, suite)) in enumerate(cases.items()):
        repo = work / f"events-{number}"
        repo.mkdir()
        (repo / "chatty.py").write_text(agent)
        (repo / "suite.yaml").write_text(suite)
        init_git(repo)
        command = [*EVALWARD, "run", str(repo), "--no-cache", "--no-history"]
        command += ["--output-dir", str(work / f"events-{number}-out")]
        series = alternate(versions, runs, lambda v, c=command: measure(c, v, None))
        row(
            f"{figure}: the run's wall / CPU",
            "—",
            {k: f"{s.wall():.2f} s / {s.cpu():.2f} s" for k, s in series.items()},
        )


WORKLOADS = {
    "p1": p1,
    "startup": startup,
    "conversations": conversations,
    "playgrounds": playgrounds,
    "service": service_playground,
    "events": events,
}


def _versions(sources: list[str]) -> Versions:
    """`[LABEL=]SRC` arguments as the environment that runs each one's evalward."""
    versions: Versions = {}
    for source in sources:
        label, _, src = source.rpartition("=")
        env = {"PYTHONPATH": str(Path(src).resolve())}
        compile_evalward(env)
        versions[label or src] = env
    return versions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", default=",".join(WORKLOADS))
    parser.add_argument(
        "--before",
        action="append",
        default=[],
        metavar="[LABEL=]SRC",
        help="alternate with the evalward in this src (repeatable; LABEL names its column)",
    )
    parser.add_argument(
        "--p1-baseline",
        action="append",
        default=[],
        metavar="[LABEL=]SRC",
        help="alternate P1 alone with the evalward in this src: an older release, whose "
        "`validate` would refuse today's examples",
    )
    args = parser.parse_args()
    p1_only = _versions(args.p1_baseline)
    versions = _versions(args.before)
    versions["this evalward"] = {}
    work = Path(tempfile.mkdtemp(prefix="evalward-speed-"))
    print(f"load average before: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    COLUMNS.extend([*p1_only, *versions])
    print(f"| figure | target | {' | '.join(COLUMNS)} |")
    print(f"|---|---|{'---|' * len(COLUMNS)}")
    with model_server(LATENCY_MS) as server:
        for name in args.only.split(","):
            columns = {**p1_only, **versions} if name == "p1" else versions
            WORKLOADS[name](server, columns, args.runs, work)
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
