"""Check evalward's verdicts against tau2-bench's own reward, run by run.

    python scripts/tau2_reward.py results.json [more results.json ...]

For every run of the airline Eval in evalward's results.json, the tool calls its trace
records are replayed in a fresh tau2 airline environment, and the task's expected actions
in another, as tau2's `EnvironmentEvaluator.calculate_reward` does; the run's reward is 1
when the two databases hash the same (tau2's `get_db_hash`), else 0, and 0 whatever the
database holds where the conversation did not end with the user or the agent stopping it
(tau2's evaluator rewards no run cut off at its step limit: evalward's `turn limit`, an
error or a timeout; `user done` and a `handoff` are the stops it weighs). Only the database part
of tau2's reward is computed: it is the part the fixtures' state criteria stand for (tau2's
`communicate_info` and `nl_assertions` are not what this example checks). Prints one line per
run and exits 1 if evalward's verdict (pass) and the reward (1.0) disagree on any run.

tau2's evaluator module itself is not imported: it pulls pandas in through its result
models. What it does for the database is these few calls to tau2's environment.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from loguru import logger
from tau2.domains.airline.environment import get_environment, get_tasks

SERVER_PREFIX = "airline__"
STOPPED = ("user done", "handoff")
"""How a conversation ends that tau2's evaluator weighs: the user's stop, the agent's
transfer to a human. One cut off (the step limit, an error) is rewarded 0."""


def database_hash(calls: list[tuple[str, dict[str, Any]]]) -> str:
    environment = get_environment()
    for name, arguments in calls:
        with contextlib.suppress(Exception):  # a failed call changes nothing, in tau2 too
            environment.make_tool_call(name, requestor="assistant", **arguments)
    found = environment.get_db_hash()
    assert found is not None
    return found


def agent_calls(run: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls the agent made, as tau2's trajectory would hold them."""
    return [
        (step["tool"].removeprefix(SERVER_PREFIX), step["arguments"] or {})
        for step in run["trace"]["steps"]
        if step["type"] == "tool_call"
    ]


def main(paths: list[str]) -> int:
    logger.remove()  # tau2 logs every reservation it changes at DEBUG
    tasks = {f"airline-task-{task.id}": task for task in get_tasks()}
    gold: dict[str, str] = {}
    disagreements = runs = 0
    for path in paths:
        results = json.loads(Path(path).read_text())
        for run in results["fixtures"]:
            task = tasks.get(run["fixture"])
            if task is None or run["status"] not in ("pass", "fail"):
                continue
            if run["fixture"] not in gold:
                expected = task.evaluation_criteria.actions or []
                gold[run["fixture"]] = database_hash([(a.name, a.arguments) for a in expected])
            stopped = run.get("end_reason") in STOPPED
            same = stopped and database_hash(agent_calls(run)) == gold[run["fixture"]]
            reward = 1.0 if same else 0.0
            agrees = (run["status"] == "pass") == (reward == 1.0)
            runs += 1
            disagreements += not agrees
            mark = "agrees" if agrees else "DISAGREES"
            which = f"{run['side']:4} {run['fixture']:16} rep {run['rep']}"
            print(f"{which}: evalward {run['status']}, tau2 reward {reward:.0f}: {mark}")
    print(f"{runs} runs: evalward's verdict and tau2's reward agree on {runs - disagreements}")
    return 1 if disagreements or not runs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
