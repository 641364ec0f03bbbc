"""Benchmark: load 20,000 EvalFixture documents (goal: <= 2 s on the CI machine).

Usage: python bench/load_fixtures.py [--fixtures 20000] [--per-file 100] [--parsers]

Writes a temporary repository of fixture files (plus one Agent and one Eval), then times
`load_resources` on it. `--parsers` also times plain parsing of the same files with yaml-rs,
PyYAML's C loader, PyYAML's pure-Python loader and ruamel.yaml, which is how the parser was
chosen.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

FIXTURE = """\
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata:
  name: fixture-{n}
  labels:
    agent: bench-bot
    scenario: s{m}
spec:
  targetAgent: bench-bot
  kind: golden
  severity: medium
  description: Fixture number {n}; the tutor must prefix the result with "answer:".
  input:
    type: prompt
    payload: {{ prompt: "What is {n} + 2?" }}
  assertions:
    - {{ type: contains, value: "answer:" }}
    - {{ type: toolNotCalled, tool: bash }}
    - type: judge
      kind: rubric
      rubric: |
        Did the agent answer correctly and prefix the result with "answer:"?
      minScore: 0.8
      weight: 2.0
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
  judge: {model: openai/gpt-4.1-mini}
"""


def write_repo(root: Path, fixtures: int, per_file: int) -> list[Path]:
    (root / "agent.yaml").write_text(HEADER)
    files = [root / "agent.yaml"]
    (root / "fixtures").mkdir()
    for start in range(0, fixtures, per_file):
        path = root / "fixtures" / f"f{start:06d}.yaml"
        text = "".join(
            FIXTURE.format(n=n, m=n % 7) for n in range(start, min(start + per_file, fixtures))
        )
        path.write_text(text)
        files.append(path)
    return files


def timed(label: str, work: Callable[[], object], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    print(f"{label:<48} {best:7.3f} s (best of {repeat})")
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fixtures", type=int, default=20_000)
    parser.add_argument("--per-file", type=int, default=100)
    parser.add_argument("--parsers", action="store_true", help="also time the YAML parsers")
    args = parser.parse_args()

    from evalward.definitions.loader import load_resources

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = write_repo(root, args.fixtures, args.per_file)
        print(f"{args.fixtures} fixtures in {len(files) - 1} files of {args.per_file}")
        loaded = load_resources(root)
        assert len(loaded.fixtures) == args.fixtures, len(loaded.fixtures)
        total = timed("evalward load_resources (discover+validate)", lambda: load_resources(root))
        if args.parsers:
            import yaml
            import yaml_rs
            from ruamel.yaml import YAML

            texts = [f.read_text() for f in files]
            timed(
                "yaml-rs loads (YAML 1.2, Rust)",
                lambda: [yaml_rs.loads(t, parse_datetime=False) for t in texts],
            )
            timed(
                "PyYAML CSafeLoader (libyaml), load_all",
                lambda: [list(yaml.load_all(t, Loader=yaml.CSafeLoader)) for t in texts],
            )
            timed(
                "PyYAML CSafeLoader, compose_all (nodes+marks)",
                lambda: [list(yaml.compose_all(t, Loader=yaml.CSafeLoader)) for t in texts],
            )
            timed(
                "PyYAML SafeLoader (pure Python), load_all",
                lambda: [list(yaml.load_all(t, Loader=yaml.SafeLoader)) for t in texts],
                repeat=1,
            )
            safe = YAML(typ="safe", pure=True)
            timed(
                "ruamel.yaml typ=safe pure, load_all",
                lambda: [list(safe.load_all(t)) for t in texts],
                repeat=1,
            )
            rt = YAML(typ="rt")
            timed(
                "ruamel.yaml typ=rt (round-trip, marks)",
                lambda: [list(rt.load_all(t)) for t in texts],
                repeat=1,
            )
        print("goal: <= 2.000 s;", "OK" if total <= 2.0 else "SLOWER THAN GOAL")


if __name__ == "__main__":
    main()
