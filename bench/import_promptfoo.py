"""`evalward import promptfoo` on a large suite: a promptfoo config of `--tests` tests (one
templated prompt, a provider, an `llm-rubric` each, a grading provider in `defaultTest`),
converted by this tree's evalward and each `--before` tree's, alternated, each conversion a
fresh process; the median wall and CPU of each.

    python bench/import_promptfoo.py [--rounds 5] [--tests 3000] [--before NAME=SRC ...]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import EVALWARD, before_and_this


def config(tests: int) -> str:
    """A promptfoo suite as users write one: every test a question and a rubric."""
    rows = "\n".join(
        f"  - vars: {{ q: 'question {i}' }}\n"
        f"    assert:\n      - type: llm-rubric\n        value: answers question {i}"
        for i in range(tests)
    )
    return (
        "prompts: ['Answer: {{q}}']\n"
        "providers: [openai:gpt-4o-mini]\n"
        "defaultTest:\n  options:\n    provider: openai:gpt-4o\n"
        f"tests:\n{rows}\n"
    )


def cpu_of_children() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tests", type=int, default=3000)
    parser.add_argument("--before", action="append", default=[], metavar="NAME=SRC")
    args = parser.parse_args()
    trees = before_and_this(args.before)
    walls: dict[str, list[float]] = {name: [] for name in trees}
    cpus: dict[str, list[float]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory() as folder:
        suite = Path(folder) / "promptfooconfig.yaml"
        suite.write_text(config(args.tests))
        for round_ in range(args.rounds + 1):  # the first round compiles bytecode: not counted
            for name, src in trees.items():
                out = Path(tempfile.mkdtemp(dir=folder))
                env = {**os.environ, "PYTHONPATH": src}
                cpu, started = cpu_of_children(), time.perf_counter()
                subprocess.run(
                    [*EVALWARD, "import", "promptfoo", str(suite), "--output-dir", str(out)],
                    env=env,
                    check=True,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                if round_:
                    walls[name].append(time.perf_counter() - started)
                    cpus[name].append(cpu_of_children() - cpu)
    for name in trees:
        wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
        print(
            f"{name}: {args.tests:,} tests imported, median wall {wall:.2f} s, CPU {cpu:.2f} s "
            f"(fastest {min(walls[name]):.2f} s) over {args.rounds} alternated rounds"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
