"""Which module runs an agent: one line per kind of runtime, keyed by what the Agent's
definition says it is (`AgentSpec.runtime_kind`)."""

from __future__ import annotations

from evalward.resources.agents.agent import AgentSpec
from evalward.resources.agents.agent_runtime import RuntimeKind
from evalward.runtime.agents.kinds.base import AgentKind
from evalward.runtime.agents.kinds.command import CommandKind
from evalward.runtime.agents.kinds.declarative import DeclarativeKind
from evalward.runtime.agents.kinds.http import HttpKind
from evalward.runtime.agents.kinds.repl import ReplKind

KINDS: dict[RuntimeKind, type[AgentKind]] = {
    "declarative": DeclarativeKind,
    "command": CommandKind,
    "repl": ReplKind,
    "http": HttpKind,
}


def kind_of(spec: AgentSpec) -> type[AgentKind]:
    """The kind that runs an agent of this definition."""
    return KINDS[spec.runtime_kind]
