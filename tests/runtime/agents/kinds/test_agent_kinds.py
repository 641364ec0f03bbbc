"""The seam of agent runtimes: every kind an Agent's definition can name is run by its own
module, and the registry finds it from the definition alone."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any, get_args

import pytest

from evalward.resources.agents.agent import AgentSpec
from evalward.resources.agents.agent_runtime import RuntimeKind
from evalward.runtime.agents.kinds import base
from evalward.runtime.agents.kinds.registry import KINDS, kind_of

pytestmark = pytest.mark.unit

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
    assert any(program.runtime for program in spec.programs()) == (name != "declarative")
    assert bool(kind_of(spec).starts_programs(spec)) == (name != "declarative")


@pytest.mark.parametrize("name", sorted(SPECS))
def test_only_evalwards_own_loop_has_model_calls_a_plan_can_estimate(name: str) -> None:
    """A bring-your-own program calls its models itself: the estimate counts its judges'."""
    spec = AgentSpec.model_validate(SPECS[name])
    assert kind_of(spec).calls_estimated == (name == "declarative")


ENGINES = {
    "declarative": "evalward.runtime.agents.declarative",
    "command": "evalward.runtime.agents.command",
    "repl": "evalward.runtime.agents.command_repl",
    "http": "evalward.runtime.agents.http_agent",
}
"""The module that carries out each kind's runs, beside its module under runtime/agents/kinds/."""


def evalward_imports(path: Path) -> set[str]:
    """The evalward modules a module's `from ... import` lines name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("evalward")
    }


def source_of(module: str) -> Path:
    return Path(str(sys.modules[module].__file__))


def test_the_kinds_base_depends_on_no_one_kind() -> None:
    """What every kind shares (`KindSetup`, `AgentKind`) imports no kind's module nor the
    module that carries out one kind's runs: a new kind is written against the base alone."""
    assert set(ENGINES) == set(KINDS)
    for name, kind in KINDS.items():
        assert ENGINES[name] in evalward_imports(source_of(kind.__module__)), name
    one_kind = {kind.__module__ for kind in KINDS.values()} | set(ENGINES.values())
    taken = evalward_imports(source_of(base.__name__)) & one_kind
    assert not taken, (
        f"runtime/agents/kinds/base.py imports what one kind alone is made of: {taken}"
    )
