"""An http agent (`runtime.http`): a server started from the checkout on its first run and
stopped with its runner (runtime/agents/http_agent.py), asked with one POST per run, or one per turn
of a conversation, every request naming the same conversation `id`, so a server that keeps
its own sessions can find this one.
"""

from __future__ import annotations

from typing import Any, ClassVar

from evalward.providers.base import ChatMessage
from evalward.resources.agents.agent import AgentSpec
from evalward.runtime.agents.conversation import TurnAnswer
from evalward.runtime.agents.conversation_agents import ProgramTurns
from evalward.runtime.agents.http_agent import HttpAgentServer
from evalward.runtime.agents.kinds.base import KindSetup, ProgramKind, RunPlace
from evalward.runtime.isolation.sandbox import Sandbox


class HttpKind(ProgramKind):
    name: ClassVar[str] = "http"

    def __init__(self, setup: KindSetup) -> None:
        super().__init__(setup)
        runtime = setup.agent.spec.runtime
        assert runtime is not None and runtime.http is not None, "the registry's choice"
        self.server = HttpAgentServer(
            runtime.http,
            name=setup.agent.name,
            root=setup.agent.root,
            env=setup.env,
            kill_grace=setup.kill_grace,
            proxy=setup.proxy,
            sandbox=setup.sandbox,
        )

    @classmethod
    def starts_programs(cls, spec: AgentSpec) -> str:
        return "runtime.http"

    def own_timeout(self, timeout_seconds: float) -> float:
        """Its start and its own timeout per POST."""
        settings = self.server.runtime
        return settings.ready_timeout_seconds + (settings.timeout_seconds or timeout_seconds)

    def outer_timeout(self, timeout_seconds: float) -> float:
        """Its start, its own timeout per POST, and the grace its process group is given."""
        return self.own_timeout(timeout_seconds) + self.setup.kill_grace

    def timeout_setting(self) -> str:
        """Its start's bound and its bound per POST: the run's bound is their sum."""
        return f"the agent's spec.runtime.http.readyTimeoutSeconds and {self._post_setting()}"

    def _post_setting(self) -> str:
        """Where the bound of one POST is set, to be raised if the agent needs longer."""
        if self.server.runtime.timeout_seconds:
            return "the agent's spec.runtime.http.timeoutSeconds"
        return super().timeout_setting()

    def use_sandbox(self, sandbox: Sandbox) -> None:
        self.server.sandbox = sandbox

    async def aclose(self) -> None:
        await self.server.stop()

    async def answer(
        self, place: RunPlace, request: dict[str, Any], messages: list[ChatMessage]
    ) -> str:
        per_request = self.server.runtime.timeout_seconds or place.run.timeout_seconds
        return await self.server.run(
            request,
            place.trace,
            timeout_seconds=per_request,
            setting=self._post_setting(),
            grant=place.grant,
        )

    def turns(self, place: RunPlace, turns: ProgramTurns) -> TurnAnswer:
        """Asked once per turn, every request naming the same conversation."""
        server = self.server

        async def ask(history: list[ChatMessage], request: dict[str, Any]) -> str:
            del history  # the request holds it
            return await server.run(
                request,
                turns.trace,
                timeout_seconds=turns.left(server.runtime.timeout_seconds),
                setting=self._post_setting(),
                grant=turns.grant,
            )

        return turns.answering(ask)
