"""The seam of agent runtimes: every kind an Agent's definition can name is run by its own
module, and the registry finds it from the definition alone."""

from __future__ import annotations

from typing import Any, get_args

import pytest

from evalward.resources.agent import AgentSpec
from evalward.resources.agent_runtime import RuntimeKind
from evalward.runtime.kinds.registry import KINDS, kind_of

SPECS: dict[str, dict[str, Any]] = {
    "declarative": {"models": ["openai/gpt-4.1-mini"]},
    "command": {"runtime": {"command": ["python3", "agent.py"]}},
    "repl": {
        "runtime": {
            "command": {"run": ["python3", "repl.py"], "stdin": "text", "repl": {"prompt": "> "}}
        }
    },
    "http": {
        "runtime": {
            "http": {
                "start": ["python3", "server.py", "{port}"],
                "ready": "http://127.0.0.1:{port}/health",
                "url": "http://127.0.0.1:{port}/run",
            }
        }
    },
}


def test_every_kind_a_definition_can_name_has_its_module_in_the_registry() -> None:
    assert set(KINDS) == set(get_args(RuntimeKind)) == set(SPECS)
    assert {key: kind.name for key, kind in KINDS.items()} == {key: key for key in KINDS}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_a_definition_is_run_by_the_kind_it_names(name: str) -> None:
    spec = AgentSpec.model_validate(SPECS[name])
    assert spec.runtime_kind == name
    assert kind_of(spec).name == name
    program = spec.runtime_program()
    assert (program is None) == (name == "declarative")
    assert bool(kind_of(spec).starts_programs(spec)) == (name != "declarative")


@pytest.mark.parametrize("name", sorted(SPECS))
def test_only_evalwards_own_loop_has_model_calls_a_plan_can_estimate(name: str) -> None:
    """A bring-your-own program calls its models itself: the estimate counts its judges'."""
    spec = AgentSpec.model_validate(SPECS[name])
    assert kind_of(spec).calls_estimated == (name == "declarative")
