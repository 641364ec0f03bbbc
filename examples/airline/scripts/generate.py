"""Write the example's Eval, its fixtures and its mock scripts from tau2-bench's airline tasks.

Run with tau2 importable (`make -C ../.. bench` builds such a virtualenv; see the README):

    python scripts/generate.py [--tasks 24]

Each task's expected final database is computed by tau2's own environment, replaying the
task's expected actions (`evaluation_criteria.actions`) on a fresh database, as tau2's
database check does. What those actions change becomes the fixture's state criteria: a
`stateSnapshot` of each changed value, and `stateUnchanged` for everything else; together
they hold exactly when the final database equals tau2's expected one (tau2's DB reward).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import re
from pathlib import Path
from typing import Any

import yaml
from loguru import logger
from tau2.domains.airline.environment import get_environment, get_tasks

ROOT = Path(__file__).resolve().parents[1]
AGENT = "airline-agent"
MISSING = object()
FINAL_REPLY = "Is there anything else I can help you with?"
GOODBYE = "No, that's all. Thank you! ###STOP###"


def database_after(actions: list[dict[str, Any]]) -> dict[str, Any]:
    """The database tau2's environment holds after these actions (a failing one changes
    nothing, as in tau2's gold replay)."""
    environment = get_environment()
    for action in actions:
        with contextlib.suppress(Exception):  # tau2's gold replay skips a failing action too
            environment.make_tool_call(action["name"], requestor="assistant", **action["arguments"])
    return environment.tools.db.model_dump(mode="json")


def changed_paths(before: Any, after: Any, path: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Where `after` differs from `before`: objects compared key by key, anything else whole."""
    if before == after:
        return []
    if isinstance(before, dict) and isinstance(after, dict):
        found: list[tuple[str, ...]] = []
        for key in sorted(set(before) | set(after)):
            found += changed_paths(before.get(key, MISSING), after.get(key, MISSING), (*path, key))
        return found
    return [path]


def at(state: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(state, dict) or key not in state:
            return MISSING
        state = state[key]
    return state


def criteria(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """tau2's database check as evalward's state criteria."""
    paths = changed_paths(before, after, ())
    found: list[dict[str, Any]] = []
    for path in paths:
        dotted = ".".join(("service", *path))
        value = at(after, path)
        if value is MISSING:
            found.append({"type": "stateValue", "at": dotted, "exists": False})
        else:
            found.append({"type": "stateSnapshot", "at": dotted, "value": value})
    unchanged: dict[str, Any] = {"type": "stateUnchanged", "at": "service"}
    if paths:
        unchanged["except"] = [".".join(("service", *p)) for p in paths]
    return [*found, unchanged]


def first_person(text: str) -> str:
    """The task's second-person instructions as the customer says them (mock replies only)."""
    swaps = [(r"\bYou are\b", "I am"), (r"\byou are\b", "I am"), (r"\bYou\b", "I"),
             (r"\byou\b", "me"), (r"\bYour\b", "My"), (r"\byour\b", "my")]  # fmt: skip
    for pattern, replacement in swaps:
        text = re.sub(pattern, replacement, text)
    return text


def reason_for_call(task: Any) -> str:
    return str(task.user_scenario.instructions.reason_for_call).strip()


def fixture(task: Any, before: dict[str, Any]) -> dict[str, Any]:
    instructions = task.user_scenario.instructions
    actions = [a.model_dump(mode="json") for a in task.evaluation_criteria.actions or []]
    after = database_after(actions)
    persona = task.user_scenario.persona or "A customer of the airline, calling its support line."
    knows = [
        line.strip()
        for block in (instructions.known_info, instructions.task_instructions)
        for line in (block or "").splitlines()
        if line.strip()
    ]
    if instructions.unknown_info:
        persona += f" {instructions.unknown_info.strip()}"
    return {
        "apiVersion": "evalward.dev/v1",
        "kind": "EvalFixture",
        "metadata": {"name": f"airline-task-{task.id}"},
        "spec": {
            "targetAgent": AGENT,
            "description": f"tau2 airline task {task.id}: {task.description.purpose or ''}".strip(),
            "conversation": {
                "user": {
                    "persona": persona,
                    "goal": instructions.reason_for_call.strip(),
                    "knows": knows,
                    "satisfiedWhen": "what you called for is done, or the agent says it "
                    "cannot be done",
                },
                "maxTurns": 15,
            },
            "assertions": criteria(before, after),
        },
    }


def agent_turns(task: Any, wrong: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The agent's replies that replay the task's expected actions, one call a turn; `wrong`
    replaces the arguments of one of them (the buggy pull request)."""
    turns: list[dict[str, Any]] = []
    for index, action in enumerate(task.evaluation_criteria.actions or []):
        arguments = action.arguments
        if wrong is not None and wrong["index"] == index:
            arguments = wrong["arguments"]
        turns.append({"toolCalls": [{"name": action.name, "arguments": arguments}]})
    info = task.evaluation_criteria.communicate_info or []
    said = f"Done: {', '.join(info)}. " if info else ""
    return [*turns, {"content": f"{said}{FINAL_REPLY}"}]


def mistake(task: Any) -> dict[str, Any] | None:
    """A plausible wrong argument for the task's first write that still succeeds in tau2 and
    leaves a different database: what a buggy pull request's agent gets wrong."""
    actions = [a.model_dump(mode="json") for a in task.evaluation_criteria.actions or []]
    expected = database_after(actions)
    for index, action in enumerate(actions):
        arguments = copy.deepcopy(action["arguments"])
        if action["name"] == "send_certificate":
            arguments["amount"] += 50
        elif action["name"] == "book_reservation":
            arguments["passengers"][-1]["dob"] = "1990-01-01"
        elif action["name"] == "update_reservation_passengers":
            arguments["passengers"][0]["first_name"] += "a"
        elif action["name"] == "update_reservation_baggages":
            arguments["total_baggages"] += 1
        else:
            continue
        changed = [*actions[:index], {**action, "arguments": arguments}, *actions[index + 1 :]]
        if database_after(changed) != expected:
            return {"index": index, "arguments": arguments}
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=24, help="the first N of tau2's tasks")
    parser.add_argument("--wrong", type=int, default=4, help="tasks the buggy PR gets wrong")
    options = parser.parse_args()
    logger.remove()  # tau2 logs every reservation it changes at DEBUG
    tasks = get_tasks()[: options.tasks]
    before = get_environment().tools.db.model_dump(mode="json")
    fixtures = [fixture(task, before) for task in tasks]
    names = [f["metadata"]["name"] for f in fixtures]
    evaluation = {
        "apiVersion": "evalward.dev/v1",
        "kind": "Eval",
        "metadata": {"name": "airline-eval"},
        "spec": {
            "targetAgent": AGENT,
            "fixtures": names,
            "simulatedUser": {"model": "openai/gpt-4.1-mini"},
            "playground": {
                "name": "airline",
                "service": {
                    "start": ["python3", "service/airline_mcp.py", "{port}"],
                    "ready": {"mcp": "/mcp"},
                    "state": "/state",
                    "readyTimeoutSeconds": 60,
                },
            },
            "scoring": {"passThreshold": 1.0},
        },
    }
    header = (
        "# Generated by scripts/generate.py from tau2-bench's airline tasks "
        f"(the first {len(tasks)}):\n# each fixture's criteria are tau2's database check, "
        "its expected database computed by tau2's own environment.\n"
    )
    documents = [evaluation, *fixtures]
    text = yaml.safe_dump_all(documents, sort_keys=False, width=100, allow_unicode=True)
    (ROOT / "evals" / "airline.yaml").write_text(header + text)

    user = [
        {"match": {"purpose": "user", "contains": FINAL_REPLY}, "always": {"content": GOODBYE}},
        *(
            {
                "match": {"purpose": "user", "fixture": name},
                "always": {"content": "Hi. " + first_person(reason_for_call(task))},
            }
            for name, task in zip(names, tasks, strict=True)
        ),
    ]
    correct = [
        {"match": {"agent": AGENT, "fixture": name}, "turns": agent_turns(task)}
        for name, task in zip(names, tasks, strict=True)
    ]
    wrong: list[dict[str, Any]] = []
    for name, task in zip(names, tasks, strict=True):
        found = mistake(task) if len(wrong) < options.wrong else None
        if found is not None:
            turns = agent_turns(task, found)
            match = {"agent": AGENT, "fixture": name, "side": "head"}
            wrong.append({"match": match, "turns": turns})
    scripts = {
        "correct.yaml": ("Every task's expected actions: a correct agent.", [*user, *correct]),
        "buggy-pr.yaml": (
            "The base answers as correct.yaml; on the head, these tasks get one argument wrong.",
            [*user, *wrong, *correct],
        ),
    }
    for filename, (about, replies) in scripts.items():
        script = {"replies": replies, "default": FINAL_REPLY}
        body = yaml.safe_dump(script, sort_keys=False, width=100)
        (ROOT / "mock" / filename).write_text(
            f"# Generated by scripts/generate.py. {about}\n{body}"
        )
    mistaken = [w["match"]["fixture"] for w in wrong]
    print(f"{len(fixtures)} fixtures; the buggy pull request gets {mistaken} wrong")


if __name__ == "__main__":
    main()
