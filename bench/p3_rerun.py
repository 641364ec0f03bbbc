"""P3: rerun on an unchanged head (a label added, a workflow rerun): 0 model calls, <= 3 s.

The P2 repository (1,000 agents, 20,000 fixtures, one agent changed) is gated once with the
result cache on, then gated again; the second run is timed end to end (process start
included) and the model server's request count is checked.

    python bench/p3_rerun.py [--agents 1000] [--fixtures 20000]
"""

from __future__ import annotations

import argparse

from common import EVALWARD, model_server, timed
from synth import changed_repository


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--fixtures", type=int, default=20000)
    args = parser.parse_args()
    repo = changed_repository("evalward-p3-", args.agents, args.fixtures)
    command = [*EVALWARD, "run", str(repo), "--base", "main", "--parallel", "32"]
    with model_server(latency_ms=50) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "bench"}
        first = timed(command, env=env)
        after_first = server.requests()
        second = timed(command, env=env)
        rerun_calls = server.requests() - after_first
    print(f"P3 rerun: {args.agents} agents, {args.fixtures} fixtures, one agent changed")
    print(f"  first run        {first.wall:.2f} s, {after_first} model calls")
    print(
        f"  rerun            {second.wall:.2f} s, {rerun_calls} model calls"
        "   (target: 0 calls, <= 3 s)"
    )
    assert rerun_calls == 0
    assert first.returncode == second.returncode


if __name__ == "__main__":
    main()
