"""A program agent that names no `watch`, in a repository of many files: what its change
detection and result-cache keys cost now that it depends on every file of the checkout.

Builds a repository of `--files` small Python files and one command agent (`python3
bot/main.py`, no `watch`), then a branch that edits the agent's program, and times
`evalward run --base main` there (result cache emptied before each run: every run hashes
both sides). With `--before LABEL=SRC` (the `src` folder of another checkout; repeatable)
that evalward runs it too, the versions alternated; medians of `--runs`.

    python bench/no_watch.py [--files 20000] [--runs 3] [--before before=/tmp/evalward-before/src]
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

ROOT = Path(__file__).resolve().parents[1]

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: bot }
spec:
  runtime: { command: { run: [python3, bot/main.py] } }
"""
SUITE = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: bot-eval }
spec:
  targetAgent: bot
  fixtures: [greets]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: greets }
spec:
  targetAgent: bot
  input: { type: prompt, payload: { prompt: hi } }
  assertions:
    - { type: contains, value: hello }
"""
PROGRAM = """\
import json, sys
sys.stdin.read()
print(json.dumps({"type": "final", "content": "hello"}))
"""


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def repository(repo: Path, files: int) -> None:
    """`files` files of 40 lines in folders of 100, the agent, its Eval; a branch that edits
    the agent's program."""
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "bench@example.com")
    git(repo, "config", "user.name", "bench")
    for index in range(files):
        folder = repo / "src" / f"m{index // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{index % 100}.py").write_text(f"x = {index}\n" + "# line\n" * 39)
    for path, text in {
        "agents/bot.yaml": AGENT,
        "evals/bot.yaml": SUITE,
        "bot/main.py": PROGRAM,
        ".gitignore": ".evalward/\n",
    }.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "change")
    (repo / "bot" / "main.py").write_text(PROGRAM + "# edited\n")
    git(repo, "commit", "-q", "-am", "edit the agent")


def timed(repo: Path, src: Path) -> tuple[float, float]:
    """One `evalward run --base main` with evalward from `src`: wall and CPU seconds."""
    shutil.rmtree(repo / ".evalward", ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(src)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "evalward", "run", "--base", "main"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{src}: exit {done.returncode}: {done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", action="append", default=[], metavar="LABEL=SRC")
    args = parser.parse_args()
    versions = {"this tree": ROOT / "src"}
    for given in args.before:
        label, _, src = given.partition("=")
        versions[label] = Path(src)
    with tempfile.TemporaryDirectory(prefix="evalward-no-watch-") as work:
        repo = Path(work) / "repo"
        repository(repo, args.files)
        figures: dict[str, list[tuple[float, float]]] = {label: [] for label in versions}
        for _ in range(args.runs):
            for label, src in versions.items():
                figures[label].append(timed(repo, src))
    print(f"| evalward ({args.files:,} files, medians of {args.runs}) | wall | CPU |")
    print("|---|---|---|")
    for label, runs in figures.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"| {label} | {wall:.1f} s | {cpu:.1f} s |")


if __name__ == "__main__":
    main()
