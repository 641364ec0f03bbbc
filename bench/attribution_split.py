"""Attribution's split of an agent's change into hunks (`attribution.hunks.split_change`), on
a real repository: an agent whose prompt of 200 paragraphs gains a rule, alone and beside
`--files` changed files its programs name, and (another repository) an agent that watches
`agent/**`, where `--links` symbolic links lead to one shared prompt the head changes. Each
split runs in a fresh process of this tree's evalward and each `--before` tree's, alternated,
and times only the split (no import), then the commit of a variant with every hunk but the
first taken back (the only one, where there is one; `build_variant`: every file's blob
written); the median of each.

    python bench/attribution_split.py [--rounds 5] [--files 10000] [--links 2000]
        [--before NAME=SRC ...]
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
if sys.argv[5] == "links":
    files, watch = ("prompts/desk.md",), ("agent/**",)
else:
    files, watch = (*(f"lib/m{n}.py" for n in range(count)), "prompts/desk.md"), ()
git, agent = Git(repo), AgentFiles("desk", "agents/desk.yaml", files, watch)
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


def linked(repo: Path, links: int) -> tuple[str, str]:
    """The base and head commits: `links` links in `agent/` lead to `shared/rules.md`, which
    the head changes, and as many in `agent/bin/` to a file it does not."""
    git(repo, "init", "-q")
    for folder in ("agents", "prompts", "shared", "agent/bin"):
        (repo / folder).mkdir(parents=True)
    (repo / "agents/desk.yaml").write_text(AGENT)
    (repo / "prompts/desk.md").write_text(PROMPT)
    (repo / "shared/rules.md").write_text(PROMPT)
    (repo / "agent/tool.js").write_text("run()\n")
    for n in range(links):
        (repo / f"agent/rules{n}.md").symlink_to("../shared/rules.md")
        (repo / f"agent/bin/tool{n}").symlink_to("../tool.js")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "shared/rules.md").write_text(PROMPT.replace("Rule 50:", "Never refund.\n\nRule 50:"))
    git(repo, "commit", "-qam", "head")
    return base, git(repo, "rev-parse", "HEAD")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--links", type=int, default=2_000)
    parser.add_argument("--before", action="append", default=[], metavar="NAME=SRC")
    args = parser.parse_args()
    trees = before_and_this(args.before)
    times: dict[tuple[str, str], list[float]] = {}
    variants: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        repo, links = Path(folder) / "repo", Path(folder) / "links"
        repo.mkdir()
        links.mkdir()
        base, head = change(repo, args.files)
        linked_base, linked_head = linked(links, args.links)
        cases = {
            "the prompt alone": (repo, base, head, 0, "named"),
            f"the prompt and {args.files:,} files": (repo, base, head, args.files, "named"),
            f"a shared prompt behind {args.links:,} links": (
                links,
                linked_base,
                linked_head,
                args.links,
                "links",
            ),
        }
        for round_ in range(args.rounds + 1):  # the first round compiles bytecode: not counted
            for what, (where, old, new, count, kind) in cases.items():
                for name, src in trees.items():
                    env = {**os.environ, "PYTHONPATH": src}
                    done = subprocess.run(
                        [sys.executable, "-c", SPLIT, str(where), old, new, str(count), kind],
                        env=env, check=True, text=True, capture_output=True,
                    )  # fmt: skip
                    if round_:
                        split, _, variant = done.stdout.split()
                        times.setdefault((name, what), []).append(float(split))
                        variants.setdefault((name, what), []).append(float(variant))
    for (name, what), seconds in times.items():
        built = variants[(name, what)]
        print(
            f"{name}: {what} split in {statistics.median(seconds) * 1000:.0f} ms median "
            f"(fastest {min(seconds) * 1000:.0f} ms), a variant of all but one taken back "
            f"built in {statistics.median(built) * 1000:.0f} ms (fastest "
            f"{min(built) * 1000:.0f} ms) over {args.rounds} alternated rounds"
        )


if __name__ == "__main__":
    main()
