"""A command agent (`runtime.command`): a program of the checkout, started for each run, or
for each turn of a conversation with the conversation so far: `messages` (and
`conversation: {id, turn}`) in its JSON request and, for a program that reads one prompt
(`{input}`, `stdin: text`), the conversation as one text (`transcript`). It enforces its own
timeout and kills its process group (runtime/agents/command.py).
"""

from __future__ import annotations

from typing import Any, ClassVar

from evalward.providers.base import ChatMessage
from evalward.resources.agents.agent import AgentSpec
from evalward.resources.agents.agent_runtime import CommandRuntime
from evalward.runtime.agents.command import run_command_agent
from evalward.runtime.agents.conversation import TurnAnswer, transcript
from evalward.runtime.agents.conversation_agents import ProgramTurns
from evalward.runtime.agents.inputs import input_text
from evalward.runtime.agents.kinds.base import KindSetup, ProgramKind, RunPlace


class CommandKind(ProgramKind):
    name: ClassVar[str] = "command"

    def __init__(self, setup: KindSetup) -> None:
        super().__init__(setup)
        runtime = setup.agent.spec.runtime
        assert runtime is not None and runtime.command is not None, "the registry's choice"
        self.settings: CommandRuntime = runtime.command

    @classmethod
    def starts_programs(cls, spec: AgentSpec) -> str:
        return "runtime.command"

    def own_timeout(self, timeout_seconds: float) -> float:
        """Its own `timeoutSeconds`, else the fixture's."""
        return self.settings.timeout_seconds or timeout_seconds

    def outer_timeout(self, timeout_seconds: float) -> float:
        """Its own timeout, the grace its process group is given to end, and a margin."""
        return self.own_timeout(timeout_seconds) + self.setup.kill_grace + 5

    def timeout_setting(self) -> str:
        if self.settings.timeout_seconds:
            return "the agent's spec.runtime.command.timeoutSeconds"
        return super().timeout_setting()

    async def answer(
        self, place: RunPlace, request: dict[str, Any], messages: list[ChatMessage]
    ) -> str:
        return await run_command_agent(
            self.settings,
            request,
            place.trace,
            place.launch,
            timeout_seconds=self.own_timeout(place.run.timeout_seconds),
            input_text=input_text(messages),
            setting=self.timeout_setting(),
        )

    def turns(self, place: RunPlace, turns: ProgramTurns) -> TurnAnswer:
        """Started once per turn, with the conversation so far."""
        runtime, launch = self.settings, place.launch

        async def ask(history: list[ChatMessage], request: dict[str, Any]) -> str:
            return await run_command_agent(
                runtime,
                request,
                turns.trace,
                launch,
                timeout_seconds=turns.left(runtime.timeout_seconds),
                input_text=transcript(history),
                setting=self.timeout_setting(),
            )

        return turns.answering(ask)
