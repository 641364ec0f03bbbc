"""P2: a repository of 1,000 agents and 20,000 fixtures with one agent changed.

Times load + diff + plan in-process (target <= 2 s), started as a command starts (the
collector paused until the head is loaded, then what was built frozen: host.py), then runs the
change end to end against the benchmark model server and checks that model calls went only to
that agent's Evals.

    python bench/p2_scale.py [--agents 1000] [--fixtures 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from common import EVALWARD, model_server, timed
from synth import CHANGED_AGENT, agent_name, changed_repository

from evalward.flows.pipeline import evaluate_change
from evalward.git import Git
from evalward.host import Host
from evalward.plan.plan import Plan
from evalward.plan.progress import RunProgress
from evalward.plan.run_setup import Revisions, RunOptions, RunSetup
from evalward.providers.registry import build_providers


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--fixtures", type=int, default=20000)
    args = parser.parse_args()

    repo = changed_repository("evalward-p2-", args.agents, args.fixtures)

    with model_server(latency_ms=5) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "bench"}
        marks: dict[str, float] = {}

        class Marked(RunProgress):
            def on_plan(self, plan: Plan) -> None:
                super().on_plan(plan)
                marks["planned"] = time.perf_counter()
                marks["runs"] = len(plan.runs)

        async def run() -> list[str]:
            providers = build_providers(env)
            try:
                marks["start"] = time.perf_counter()
                host = Host.of_process(env)
                host.pause_collector()  # as `evalward run` does first thing
                setup = RunSetup(
                    Git(repo),
                    Revisions(base="main"),
                    providers,
                    env,
                    RunOptions(parallel=32, cache=None),
                    started=host.started,
                )
                evaluation = await evaluate_change(setup, Marked())
                marks["done"] = time.perf_counter()
                return evaluation.plan.evals
            finally:
                await providers.aclose()

        evals = asyncio.run(run())
        calls = server.requests()
    took = marks["planned"] - marks["start"]
    print(f"P2 scale: {args.agents} agents, {args.fixtures} fixtures, 1 agent changed")
    print(f"  load + diff + plan {took:.2f} s   (target <= 2 s; in-process, evaluate_change)")
    print(f"  run + score        {marks['done'] - marks['planned']:.2f} s")
    print(f"  planned runs       {int(marks['runs'])} for Evals {evals}; model calls {calls}")
    assert evals == [f"{agent_name(CHANGED_AGENT)}-eval"], evals
    assert calls == marks["runs"], "model calls went beyond the changed agent's Evals"

    with model_server(latency_ms=5) as server:
        cli = timed(
            [*EVALWARD, "run", str(repo), "--base", "main", "--parallel", "32"],
            env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "bench"},
        )
        print(
            f"  CLI end to end     {cli.wall:.2f} s (`evalward run --base main`, process start "
            f"included), {server.requests()} model calls"
        )


if __name__ == "__main__":
    main()
