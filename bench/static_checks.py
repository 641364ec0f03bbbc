"""What the checks made before a run's first model call cost (`evalward validate`, and every
run's preflight): placing inline scorers as the fixtures load, loading a SQLite seed in
memory, preparing each `sql` criterion, compiling each Python scorer, `node --check` on each
JavaScript scorer, comparing each state path with the seed's shape.

    python bench/static_checks.py [--fixtures 2000] [--javascript 20]

Writes a repository of N fixtures (100 a file) sharing one Eval and its SQLite playground,
each with an inline Python scorer of its own, an `sql` criterion and a `stateValue`; J of them
also hold a JavaScript scorer of their own. Times the load with and without the inline
scorers (what placing them costs), then `tree_problems` with Node on PATH and without it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

SEED = """\
CREATE TABLE orders (id TEXT PRIMARY KEY, amount REAL, status TEXT);
CREATE TABLE refunds (id INTEGER PRIMARY KEY, order_id TEXT, amount REAL, reason TEXT);
INSERT INTO orders VALUES ('A-1', 25.0, 'delivered'), ('B-2', 90.0, 'delivered');
"""
HEADER = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {name: bench-bot}
spec:
  models: [openai/gpt-4.1-mini]
  system: You are a benchmark.
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {name: bench-eval}
spec:
  targetAgent: bench-bot
  fixtureSelector: {matchLabels: {agent: bench-bot}}
  playground:
    name: shop
    sqlite: {seed: shop/seed.sql}
"""
FIXTURE = """\
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{name: fixture-{n}, labels: {{agent: bench-bot}}}}
spec:
  targetAgent: bench-bot
  input: {{type: prompt, payload: {{prompt: "Refund order A-1, case {n}."}}}}
  assertions:
    - {{type: sql, query: "SELECT order_id, amount FROM refunds WHERE id > {n}", count: 1}}
    - {{type: stateValue, at: db.orders.A-1.status, equals: refunded}}
{scorers}"""
PYTHON = """\
    - type: code
      language: python
      source: |
        said = output.lower()
        return "refund" in said and len(said) > {n}
"""
JAVASCRIPT = """\
    - type: code
      language: javascript
      source: |
        const said = output.toLowerCase();
        return said.includes('refund') && said.length > {n};
"""


def write_repo(root: Path, fixtures: int, javascript: int, inline: bool) -> None:
    (root / "shop").mkdir(parents=True)
    (root / "shop" / "seed.sql").write_text(SEED)
    (root / "agent.yaml").write_text(HEADER)
    (root / "fixtures").mkdir()
    for start in range(0, fixtures, 100):
        text = ""
        for n in range(start, min(start + 100, fixtures)):
            scorers = PYTHON.format(n=n) if inline else ""
            scorers += JAVASCRIPT.format(n=n) if inline and n < javascript else ""
            text += FIXTURE.format(n=n, scorers=scorers)
        (root / "fixtures" / f"f{start:06d}.yaml").write_text(text)


def timed(label: str, work: Callable[[], object], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    print(f"{label:<58} {best:7.3f} s (best of {repeat})")
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fixtures", type=int, default=2000)
    parser.add_argument("--javascript", type=int, default=20)
    args = parser.parse_args()

    from evalward.definitions.loader import load_resources
    from evalward.plan.preflight.preflight import TreeCheck, tree_problems

    with tempfile.TemporaryDirectory() as tmp:
        plain, inline = Path(tmp) / "plain", Path(tmp) / "inline"
        write_repo(plain, args.fixtures, args.javascript, inline=False)
        write_repo(inline, args.fixtures, args.javascript, inline=True)
        print(f"{args.fixtures} fixtures, {args.javascript} of them with a JavaScript scorer")
        timed("load, no inline scorer", lambda: load_resources(plain))
        timed("load, an inline scorer a fixture (each placed)", lambda: load_resources(inline))
        resources = load_resources(inline)
        node = shutil.which("node")
        with_node = {"PATH": os.environ.get("PATH", "")}
        without = {"PATH": ""}
        assert tree_problems(resources, TreeCheck(env=with_node)) == []
        timed(
            f"tree_problems, Node {'on PATH' if node else 'absent'}",
            lambda: tree_problems(resources, TreeCheck(env=with_node)),
        )
        timed("tree_problems, no Node (JavaScript not checked)",
              lambda: tree_problems(resources, TreeCheck(env=without)))  # fmt: skip
        bare = load_resources(plain)
        timed("tree_problems, no scorer (seed, sql, paths)",
              lambda: tree_problems(bare, TreeCheck(env=without)))  # fmt: skip


if __name__ == "__main__":
    main()
