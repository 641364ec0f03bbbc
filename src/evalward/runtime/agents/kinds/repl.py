"""A REPL agent (`runtime.command.repl`): a command agent started once and kept running for a
whole conversation, one user turn per stdin line (runtime/agents/command_repl.py); a fixture's
`input` is a conversation of one turn to it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from evalward.providers.base import ChatMessage
from evalward.resources.conversation import EndReason
from evalward.rundata.trace import StepType
from evalward.runtime.agents.command_repl import ReplSession
from evalward.runtime.agents.conversation import hold_conversation
from evalward.runtime.agents.conversation_agents import ConversationRun
from evalward.runtime.agents.kinds.base import RunPlace
from evalward.runtime.agents.kinds.command import CommandKind
from evalward.runtime.agents.simulated_user import UserSimulator
from evalward.runtime.tools.tools import ToolExecutor


class ReplKind(CommandKind):
    name: ClassVar[str] = "repl"
    whole_conversation: ClassVar[bool] = True

    async def hold(
        self,
        place: RunPlace,
        talk: ConversationRun,
        executor: ToolExecutor,
        simulator: UserSimulator | None,
    ) -> None:
        """Hold the conversation with one process, stopped when it ends, whatever happened."""
        turns = self.program_turns(place, talk)
        session = ReplSession(self.settings, place.launch, turns.trace)
        try:
            problem = await session.start(turns.left())
            if problem:
                turns.trace.add(StepType.error, content=problem)
                turns.trace.end(EndReason.error)
                return

            async def ask(history: list[ChatMessage], request: dict[str, Any]) -> str:
                """One stdin line per turn."""
                return await session.turn(history[-1].content, request, turns.left())

            answer = turns.answering(ask)
            await hold_conversation(talk.conversation, turns.trace, answer, simulator)
        finally:
            await session.close()
