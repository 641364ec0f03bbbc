"""An Agent as each kind of runtime runs it: its definition with the system prompt resolved.

Every kind under runtime/agents/kinds/ is made with one (`KindSetup.agent`); resolving it reads the
agent's `systemFile` through its side's door, whatever the kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalward.errors import ConfigError, NotCommitted
from evalward.files.committed import MAX_SYSTEM_BYTES, RepoFiles
from evalward.resources.agents.agent import AgentSpec
from evalward.resources.models import Agent
from evalward.text.escaping import printable


@dataclass(frozen=True)
class ResolvedAgent:
    """An Agent spec with its system prompt resolved (systemFile read from its checkout)."""

    name: str
    spec: AgentSpec
    system_prompt: str
    root: Path = Path()


def resolve_agent(agent: Agent, defined_in: str, root: Path, files: RepoFiles) -> ResolvedAgent:
    """Read `systemFile` through the side's door, `files` (files/committed.py: a committed
    file, by the rule every path of a resource follows, files/inside.py); `root` is where
    the agent's programs run."""
    spec = agent.spec
    system = spec.system or ""
    if spec.system_file:
        where = f"{printable(defined_in)}: spec.systemFile"
        try:
            found = files.agent_reference(spec.system_file, defined_in)
            system = files.text(found.path, MAX_SYSTEM_BYTES)
        except NotCommitted as exc:
            raise ConfigError(f"{where}: the file {spec.system_file!r} {exc.reason}") from None
    return ResolvedAgent(name=agent.metadata.name, spec=spec, system_prompt=system, root=root)
