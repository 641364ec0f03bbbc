"""Attribution's split of an agent's change into hunks (`attribution.hunks.split_change`), on
a real repository: an agent whose prompt of 200 paragraphs gains a rule, alone and beside
`--files` changed files its programs name. Each split runs in a fresh process of this tree's
evalward and each `--before` tree's, alternated, and times only the split (no import), then
the commit of a variant with every hunk but the first taken back (the only one, where there
is one; `build_variant`: every file's blob written); the median of each.

    python bench/attribution_split.py [--rounds 5] [--files 10000] [--before NAME=SRC ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import before_and_this

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: desk }
spec:
  models: [openai/gpt-4.1-mini]
  systemFile: prompts/desk.md
"""
PROMPT = "".join(f"Rule {n}: answer the customer in full.\n\n" for n in range(200))
SPLIT = """\
import sys, time
from pathlib import Path
from evalward.attribution.hunks import AgentFiles, split_change
from evalward.attribution.variants import build_variant
from evalward.git import Git
repo, base, head, count = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
files = (*(f"lib/m{n}.py" for n in range(count)), "prompts/desk.md")
git, agent = Git(repo), AgentFiles("desk", "agents/desk.yaml", files)
started = time.perf_counter()
hunks = split_change(git, base, head, agent)
split = time.perf_counter() - started
started = time.perf_counter()
assert isinstance(build_variant(git, base, head, agent, hunks[1:] or hunks), str)
print(split, len(hunks), time.perf_counter() - started)
"""


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com"}
    env |= {"GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.com"}
    done = subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, text=True,
                          capture_output=True)  # fmt: skip
    return done.stdout.strip()


def change(repo: Path, files: int) -> tuple[str, str]:
    """The base and head commits: the head adds a rule to the prompt and changes each file."""
    git(repo, "init", "-q")
    (repo / "agents").mkdir()
    (repo / "prompts").mkdir()
    (repo / "lib").mkdir()
    (repo / "agents/desk.yaml").write_text(AGENT)
    (repo / "prompts/desk.md").write_text(PROMPT)
    for n in range(files):
        (repo / f"lib/m{n}.py").write_text(f"x = {n}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "prompts/desk.md").write_text(PROMPT.replace("Rule 50:", "Never refund.\n\nRule 50:"))
    for n in range(files):
        (repo / f"lib/m{n}.py").write_text(f"x = {n + 1}\n")
    git(repo, "commit", "-qam", "head")
    return base, git(repo, "rev-parse", "HEAD")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--before", action="append", default=[], metavar="NAME=SRC")
    args = parser.parse_args()
    trees = before_and_this(args.before)
    times: dict[tuple[str, int], list[float]] = {}
    variants: dict[tuple[str, int], list[float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        repo = Path(folder) / "repo"
        repo.mkdir()
        base, head = change(repo, args.files)
        for round_ in range(args.rounds + 1):  # the first round compiles bytecode: not counted
            for count in (0, args.files):
                for name, src in trees.items():
                    env = {**os.environ, "PYTHONPATH": src}
                    done = subprocess.run(
                        [sys.executable, "-c", SPLIT, str(repo), base, head, str(count)],
                        env=env, check=True, text=True, capture_output=True,
                    )  # fmt: skip
                    if round_:
                        split, _, variant = done.stdout.split()
                        times.setdefault((name, count), []).append(float(split))
                        variants.setdefault((name, count), []).append(float(variant))
    for (name, count), seconds in times.items():
        what = f"the prompt and {count:,} files" if count else "the prompt alone"
        built = variants[(name, count)]
        print(
            f"{name}: {what} split in {statistics.median(seconds) * 1000:.0f} ms median "
            f"(fastest {min(seconds) * 1000:.0f} ms), a variant of all but one taken back "
            f"built in {statistics.median(built) * 1000:.0f} ms (fastest "
            f"{min(built) * 1000:.0f} ms) over {args.rounds} alternated rounds"
        )


if __name__ == "__main__":
    main()
