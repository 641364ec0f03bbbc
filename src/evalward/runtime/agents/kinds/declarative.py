"""A declarative agent (`models`, `tools`, no `runtime`): evalward's own tool loop runs it.

A run opens the agent's MCP servers (started for it and ended with it; runtime/tools/mcp_client.py,
loaded only for an agent that names servers), then runs the loop on the fixture's input, or
on the whole history of a conversation, its tool calls and results too, so the model sees the
conversation as it happened.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import ClassVar

from evalward.errors import McpFailure
from evalward.providers.base import ChatMessage
from evalward.resources.agents.agent import AgentSpec
from evalward.rundata.spending import OwnCalls
from evalward.rundata.trace import StepType
from evalward.runtime.agents.conversation import TurnAnswer
from evalward.runtime.agents.conversation_agents import ConversationRun, turn_final
from evalward.runtime.agents.declarative import (
    continue_declarative,
    opening_messages,
    run_declarative,
)
from evalward.runtime.agents.inputs import input_messages
from evalward.runtime.agents.kinds.base import AgentKind, FixtureRun, RunPlace
from evalward.runtime.tools.mcp_tools import McpToolbox
from evalward.runtime.tools.tools import ToolExecutor


class DeclarativeKind(AgentKind):
    name: ClassVar[str] = "declarative"
    brings_own: ClassVar[bool] = False
    calls_estimated: ClassVar[bool] = True

    @classmethod
    def starts_programs(cls, spec: AgentSpec) -> str:
        commands = [t.tool_name for t in spec.tools if t.enabled and t.command]
        if commands:
            return f"the command tool {commands[0]!r}"
        servers = [name for name, s in spec.mcp_servers.items() if s.command]
        return f"the MCP server {servers[0]!r}" if servers else ""

    def outer_timeout(self, timeout_seconds: float) -> float:
        return timeout_seconds

    async def run(self, place: RunPlace) -> str:
        run, trace = place.run, place.trace
        setup = self.setup
        own = {t.tool_name: t for t in setup.agent.spec.tools if t.enabled}
        try:
            async with self._mcp_servers(place, list(own)) as servers:
                executor = ToolExecutor(own, run.tools, place.launch, servers)
                if run.conversation is not None or run.fixture_input is None:
                    await self.converse(place, executor)
                else:
                    messages = input_messages(run.fixture_input)
                    await run_declarative(
                        setup.agent,
                        messages,
                        setup.providers,
                        run.labels,
                        trace,
                        executor,
                        budget=_own_calls(run),
                    )
        except McpFailure as failure:  # a server that could not start: nothing ran
            trace.add(StepType.error, content=str(failure))
        return ""

    def answers(self, place: RunPlace, talk: ConversationRun, executor: ToolExecutor) -> TurnAnswer:
        """One history, extended by every turn's tool loop."""
        agent, providers, trace = self.setup.agent, self.setup.providers, place.trace
        messages = opening_messages(agent)
        budget = _own_calls(place.run)  # the whole conversation's

        async def answer(history: list[ChatMessage], turn: int) -> str:
            if turn == 1:  # the conversation's own opening instructions, if it has them
                messages.extend(m for m in history[:-1] if m.role == "system")
            messages.append(history[-1])
            await continue_declarative(
                agent, messages, providers, talk.labels, trace, executor, budget=budget
            )
            return turn_final(trace, turn)

        return answer

    @contextlib.asynccontextmanager
    async def _mcp_servers(
        self, place: RunPlace, own_tools: list[str]
    ) -> AsyncIterator[McpToolbox | None]:
        """The run's MCP servers, connected, for as long as the block runs (None: it has
        none). McpFailure naming the first that could not start."""
        servers = self.setup.agent.spec.mcp_servers
        if not servers:
            yield None
            return
        # lazy: the MCP SDK costs most of a second of start-up, paid only by a run whose
        # agent names MCP servers
        from evalward.runtime.tools.mcp_client import connected

        service = place.run.env.get("EVALWARD_SERVICE_URL")
        async with connected(servers, own_tools, place.launch, service) as toolbox:
            yield toolbox


def _own_calls(run: FixtureRun) -> OwnCalls | None:
    """What the run's model calls are held to: none without a budget."""
    return None if run.allowance is None else OwnCalls(run.allowance, run.counted_calls)
