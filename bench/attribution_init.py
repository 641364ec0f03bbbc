"""Where it regressed, on the project `evalward init` writes, with every default: what
attribution spends and finds, through the command line as a user runs it.

The project is init's own (an agent with a lookup tool, two fixtures under adaptive reps, a
rubric judge and a calibrated pairwise judge), its prompt written over seven lines, and its
mock script answering the order's status with a delivery date where the prompt promises one
(a `system` key). The branch rewords the prompt in three places, one of which makes that
promise. Two replies, two scenarios: the date instead of the status, which fails the
order-status fixture's checks, and the date beside it ("...; it has shipped."), which passes
them and which only the pairwise judge finds worse. Each round makes the project afresh (no
result cache) and runs `evalward run --base main --mock-script evals/mock-replies.yaml` with
each tree's evalward, alternated: the gate's model calls, attribution's (of its budget, half
the run's), its variants and what it found, and the run's wall time; per tree and scenario,
the median over the rounds.

    python bench/attribution_init.py [--rounds 3] [--before NAME=SRC ...]
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import alternation, compile_evalward

PROMPT = """\
You are the support agent of an online shop.
Look an order up before you say where it is.

Never invent a delivery date.
Ask for the order number when you do not have it.

Be brief.
"""
PROMISED = """\
  - match: { agent: assistant, fixture: assistant-order-status, system: "promise Tuesday" }
    turns:
      - toolCalls: [{ name: lookup_order, arguments: { order_id: "12345" } }]
      - content: "{reply}"
"""
SCENARIOS = {
    "a date for the status": "Order 12345 will arrive on Tuesday.",
    "a date beside the status (the pairwise judge alone)": (
        "Order 12345 will arrive on Tuesday; it has shipped."
    ),
}
"""What the agent answers where it is told to promise Tuesday."""
ORDER_STATUS = "  - match: { agent: assistant, fixture: assistant-order-status }"


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=b@e", *args],
        cwd=root, check=True, capture_output=True,
    )  # fmt: skip


def _project(root: Path, env: dict[str, str], reply: str) -> None:
    """init's project on `main`, its mock answering the promise with `reply`, and a branch
    that rewords its prompt in three places."""
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    subprocess.run(
        [sys.executable, "-m", "evalward", "init"], cwd=root, env=env, check=True,
        capture_output=True,
    )  # fmt: skip
    mock = root / "evals" / "mock-replies.yaml"
    text = mock.read_text()
    at = text.index(ORDER_STATUS)
    mock.write_text(text[:at] + PROMISED.replace("{reply}", reply) + text[at:])
    (root / "prompts" / "assistant.md").write_text(PROMPT)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "the assistant")
    _git(root, "checkout", "-qb", "friendlier")
    head = PROMPT.replace("You are the", "You are the friendly")
    head = head.replace("date.\n", "date.\nAlways promise Tuesday for a delivery.\n")
    (root / "prompts" / "assistant.md").write_text(head.replace("brief.", "brief and kind."))
    _git(root, "commit", "-qam", "friendlier")


def _round(src: str, reply: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": src}
    folder = Path(tempfile.mkdtemp(prefix="evalward-bench-attribution-init-"))
    try:
        root, out = folder / "project", folder / "out"
        _project(root, env, reply)
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "evalward", "run", "--base", "main", "--mock-script",
             "evals/mock-replies.yaml", "--output-dir", str(out)],
            cwd=root, env=env, capture_output=True, text=True,
        )  # fmt: skip
        wall = time.perf_counter() - started
        if done.returncode not in (0, 1):
            raise RuntimeError(f"the run did not decide (exit {done.returncode}): {done.stderr}")
        results = json.loads((out / "results.json").read_text())
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    found = results.get("attribution")
    if done.returncode == 0 or found is None:  # a tree whose gate let the change through
        passed = "the gate passed it" if done.returncode == 0 else "no attribution"
        calls = results["run"]["spent"]["model_calls"]
        return {"gate_calls": calls, "calls": 0, "budget": 0, "trials": 0, "wall": wall,
                "found": passed}  # fmt: skip
    (regression,) = found["regressions"]
    culprit = [regression["hunks"][i] for i in regression["culprit"]]
    return {
        "gate_calls": results["run"]["spent"]["model_calls"],
        "calls": found["spentModelCalls"],
        "budget": found["budgetModelCalls"],
        "trials": len(regression["trials"]),
        "wall": wall,
        "found": ", ".join(f"{h['path']}:{h['first']}" for h in culprit)
        or f"not attributable: {regression['reason']}",
    }


def main() -> None:
    rounds, trees = alternation(__doc__.split("\n\n")[0], 3)
    measured: dict[tuple[str, str], list[dict[str, Any]]] = {
        (scenario, name): [] for scenario in SCENARIOS for name in trees
    }
    for src in trees.values():  # as an installed evalward is: compiled once
        compile_evalward({**os.environ, "PYTHONPATH": src})
    for _ in range(rounds):
        for scenario, reply in SCENARIOS.items():
            for name, src in trees.items():
                measured[(scenario, name)].append(_round(src, reply))
    print(
        "| the reply | evalward | gate: model calls | attribution: model calls (of its budget) "
        "| variants | found | the run's wall time |"
    )
    print("|---|---|---|---|---|---|---|")
    for (scenario, name), runs in measured.items():
        med = {k: statistics.median(r[k] for r in runs) for k in ("gate_calls", "calls", "wall")}
        trials = statistics.median(r["trials"] for r in runs)
        found = " / ".join(sorted({r["found"] for r in runs}))
        print(
            f"| {scenario} | {name} | {med['gate_calls']:.0f} | {med['calls']:.0f} "
            f"(of {runs[0]['budget']}) | {trials:.0f} | {found} | {med['wall']:.1f} s |"
        )


if __name__ == "__main__":
    main()
