"""P2: a repository of 1,000 agents and 20,000 fixtures with one agent changed.

Times load + diff + plan in-process (target <= 2 s), then runs the change end to end against
the benchmark model server and checks that model calls went only to that agent's Evals.

    python bench/p2_scale.py [--agents 1000] [--fixtures 20000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from common import EVALWARD, model_server, timed
from synth import agent_name, generate, git, init_git, write_agent

from evalward.changes import detect_changes
from evalward.git import Git
from evalward.plan import GateConfig, build_plan, gate_resources
from evalward.resources import load_resources
from evalward.resources.loader import load_changed_resources


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--fixtures", type=int, default=20000)
    args = parser.parse_args()

    repo = Path(tempfile.mkdtemp(prefix="evalward-p2-")) / "repo"
    repo.mkdir()
    generate(repo, args.agents, args.fixtures, tools=False, parallel=32)
    init_git(repo)
    git(repo, "checkout", "-q", "-b", "change")
    write_agent(repo, 7, tools=False, version=2)
    git(repo, "-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-qam", "change")

    start = time.perf_counter()
    vcs = Git(repo)
    head = load_resources(repo)
    loaded = time.perf_counter()
    merge_base = vcs.merge_base(vcs.resolve("main"), vcs.resolve("HEAD"))
    changed = vcs.changed_files(merge_base, "HEAD")
    with vcs.worktree(merge_base) as base_root:
        checked_out = time.perf_counter()
        differs = {c.path for c in changed} | {c.old_path for c in changed if c.old_path}
        base = load_changed_resources(base_root, head, differs)
        base_loaded = time.perf_counter()
        changes = detect_changes(changed, head, base)
        plan = build_plan(changes, gate_resources(head, base, GateConfig.base), base)
        planned = time.perf_counter()
    print(f"P2 scale: {len(head.agents)} agents, {len(head.fixtures)} fixtures, 1 agent changed")
    print(f"  load head          {loaded - start:.2f} s")
    print(f"  base worktree      {checked_out - loaded:.2f} s")
    print(f"  load base          {base_loaded - checked_out:.2f} s")
    print(f"  diff + plan        {planned - base_loaded:.2f} s")
    print(f"  load + diff + plan {planned - start:.2f} s   (target <= 2 s)")
    print(f"  planned runs       {len(plan.runs)} for Evals {plan.evals}")
    assert plan.evals == [f"{agent_name(7)}-eval"], plan.evals

    with model_server(latency_ms=5) as server:
        run = timed(
            [*EVALWARD, "run", str(repo), "--base", "main", "--parallel", "32"],
            env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "bench"},
        )
        print(
            f"  end to end         {run.wall:.2f} s, {server.requests()} model calls "
            f"(expected {len(plan.runs)})"
        )


if __name__ == "__main__":
    main()
