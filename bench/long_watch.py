"""A pull request whose agent's `watch` names many long folders: the command line's gate
(`evalward run --base main`, the mock provider, no result cache) of a change that gives a
declarative agent a `watch` of `--globs` folders, each 3.8 KB deep (15 folders of 250
bytes: under the file system's bound on a path), the last holding a file. Every part of
the gate that reads a `watch` matches paths against it: change detection, the agent's
fingerprint, the preflight's word on a glob that matches no file.

Each round runs the gate in a fresh process of this tree's evalward and of each `--before`
tree's, alternated (the first round, which writes bytecode, is not counted); the median
wall time and CPU (the process's and its children's), and the exit code each gave.

    python bench/long_watch.py [--globs 200] [--rounds 5] [--before NAME=SRC ...]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import before_and_this

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: greeter }}
spec:
  models: [openai/gpt-test]
  system: Greet the user.
  watch: {watch}
"""
EVAL = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: greeter-eval }
spec:
  targetAgent: greeter
  fixtureSelector: { matchLabels: { agent: greeter } }
  scoring: { passThreshold: 1 }
"""
FIXTURE = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: hello, labels: { agent: greeter } }
spec:
  targetAgent: greeter
  input: { type: prompt, payload: { prompt: hello } }
  assertions:
    - { type: contains, value: Hello }
"""
DEEP = "/".join(["d" * 250] * 15)


def _git(root: Path, *args: str) -> None:
    me = ("-c", "user.name=bench", "-c", "user.email=b@e")
    subprocess.run(["git", *me, *args], cwd=root, check=True, capture_output=True)


def _repository(globs: int) -> Path:
    """The base (the agent watches nothing) and the pull request's head (it watches
    `globs` folders)."""
    root = Path(tempfile.mkdtemp(prefix="evalward-bench-watch-"))
    files = {
        "agents/greeter.yaml": AGENT.format(watch="[]"),
        "evals/greeter.yaml": EVAL,
        "evals/fixtures/hello.yaml": FIXTURE,
        "mock.yaml": 'default: "Hello!"\n',
        ".gitignore": ".evalward/\n",
    }
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    _git(root, "checkout", "-qb", "watch")
    folders = [f"w/{n:03}/{DEEP}" for n in range(globs)]
    (root / "agents/greeter.yaml").write_text(
        AGENT.format(watch="[" + ", ".join(f"{f}/*" for f in folders) + "]")
    )
    (root / folders[-1]).mkdir(parents=True)
    (root / folders[-1] / "tool.py").write_text("print(1)\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "watch")
    return root


def _gate(root: Path, src: str) -> tuple[float, float, int]:
    command = [sys.executable, "-m", "evalward", "run", "--base", "main", "--no-cache"]
    command += ["--no-history", "--mock-script", "mock.yaml"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        command, cwd=root, env={**os.environ, "PYTHONPATH": src}, capture_output=True, check=False
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--globs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", action="append", default=[], metavar="NAME=SRC")
    args = parser.parse_args()
    trees = before_and_this(args.before)
    root = _repository(args.globs)
    timed: dict[str, list[tuple[float, float, int]]] = {name: [] for name in trees}
    try:
        for round_ in range(args.rounds + 1):
            for name, src in trees.items():
                shutil.rmtree(root / ".evalward", ignore_errors=True)
                result = _gate(root, src)
                if round_:
                    timed[name].append(result)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    size = sum(len(f"w/{n:03}/{DEEP}/*") + 1 for n in range(args.globs))
    print(f"{args.globs} watched folders, {size / 1e6:.2f} MB of globs")
    print()
    print("| tree | wall | CPU | exit codes |")
    print("|---|---|---|---|")
    for name, runs in timed.items():
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        codes = ", ".join(sorted({str(r[2]) for r in runs}))
        print(f"| {name} | {wall:.2f} s | {cpu:.2f} s | {codes} |")


if __name__ == "__main__":
    main()
