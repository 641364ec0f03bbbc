"""The simulated user of a conversation: a model call like any other, playing a persona.

It is asked through the run's providers, so its calls are priced, counted in what the run
spent, metered against the job's budget as they are made (the `Allowance`: each holds its
cost at its worst until its reply, and a call past `max-model-calls` or one `max-cost-usd`
cannot hold is refused, and the run ends as an error saying so),
cached (the same conversation so far and the same settings give the same reply, on either
side) and answered by a mock script's `purpose: user` entries. It sees only what the
agent said, never its tool calls. It ends the conversation by writing `###STOP###` (as
tau-bench's user does) at the end of its reply: a token evalward looks for, never a guess at
the reply's meaning. The token is the user's alone: in what the agent says it is struck out
before the user reads it, so an agent cannot put the words in its mouth (a model that
repeats what it read would stop), and a token the user quotes mid-reply ends nothing.
A reply that cannot be used (an outage, an empty or cut reply, tool calls) ends the run as
an error, so the fixture can never pass on a user that did not speak.
"""

from __future__ import annotations

import dataclasses
from contextlib import nullcontext
from dataclasses import dataclass

from evalward.errors import (
    ConfigError,
    ProviderError,
    ProviderUnavailable,
    UserUnavailable,
)
from evalward.providers.base import ChatMessage, ChatRequest, RunLabels
from evalward.providers.registry import MeteredProvider, Providers
from evalward.resources.conversation import SimulatedUser
from evalward.rundata.spending import Allowance, OwnCalls
from evalward.rundata.trace import Trace, Usage

STOP = "###STOP###"
"""What the simulated user writes, at the end of its reply, to end the conversation."""
STRUCK = "[stop token struck out]"
"""What the simulated user reads in the agent's reply in place of the stop token."""

MAX_USER_TOKENS = 1024
"""The longest reply the simulated user may write: a user says a few sentences."""

OPENING_CUE = "(The support conversation starts now. Write your first message to the agent.)"


@dataclass(frozen=True)
class Said:
    """What the simulated user said on one turn: its text, or that it is done."""

    text: str
    done: bool


def instructions(user: SimulatedUser) -> str:
    """The simulated user's system prompt: who they are, what they want and know."""
    lines = [
        "You are playing a user who talks to an assistant (an AI agent). Stay in character.",
        "Write only what this user would say to the agent: short, natural messages, one at a "
        "time. Never play the agent, never describe actions, never mention these instructions.",
        "",
        f"Who you are: {user.persona}",
        f"What you want: {user.goal}",
    ]
    if user.knows:
        lines.append(
            "What you know. Give each of these only when the agent asks for it, never before:"
        )
        lines.extend(f"- {fact}" for fact in user.knows)
    if user.satisfied_when:
        lines.append(f"You are satisfied when: {user.satisfied_when}")
    lines += [
        "",
        f"When your goal is met, or you give up, reply with exactly {STOP} and nothing else.",
    ]
    return "\n".join(lines)


class UserSimulator:
    """One conversation's simulated user, asked once per turn."""

    def __init__(
        self,
        user: SimulatedUser,
        model_id: str,
        providers: Providers,
        labels: RunLabels,
        allowance: Allowance | None = None,
    ) -> None:
        self.user = user
        self.model_id = model_id
        self.providers = providers
        self.labels = dataclasses.replace(labels, purpose="user")
        self.calls = None if allowance is None else OwnCalls(allowance, 0, purpose="user")
        """Its calls, each drawn from the job's budget left to the calls it meters as they
        are made, holding its worst until its reply (None: no budget)."""
        self._said: list[str] = []
        self._heard: list[str] = []

    def hear(self, agent_reply: str) -> None:
        """The agent's reply to the user's latest message: all the user ever sees of it
        (with the stop token struck out: only the user ends the conversation)."""
        self._heard.append(agent_reply.replace(STOP, STRUCK))

    async def next(self, trace: Trace) -> Said:
        """The user's next message (the opening, word for word, when the fixture gives one)."""
        if not self._said and self.user.opening is not None:
            self._said.append(self.user.opening)
            return Said(self.user.opening, done=False)
        try:
            provider, model = self.providers.resolve(self.model_id)
        except ConfigError as exc:
            raise UserUnavailable(f"the simulated user's model: {exc}") from None
        request = ChatRequest(
            model=model,
            messages=tuple(self._messages()),
            temperature=0.0,
            max_tokens=MAX_USER_TOKENS,
            labels=self.labels,
        )
        try:
            with nullcontext() if self.calls is None else self.calls.in_flight():
                if isinstance(provider, MeteredProvider):
                    response = await provider.complete(request, before_call=self._admit)
                else:
                    response = await provider.complete(request)
        except ProviderError as exc:
            raise UserUnavailable(
                f"the simulated user ({self.model_id}) could not answer: {exc}",
                outage=isinstance(exc, ProviderUnavailable),
            ) from None
        if self.calls is not None and not response.cached:
            self.calls.spend(0.0 if self.providers.override else response.usage.cost_usd)
        trace.user_calls += 0 if response.cached else 1
        trace.user_usage = (trace.user_usage or Usage()) + response.usage
        text = response.content.strip()
        if response.tool_calls or response.truncated or not text:
            why = (
                "asked for tools"
                if response.tool_calls
                else "was cut at its token limit"
                if response.truncated
                else "was empty"
            )
            raise UserUnavailable(
                f"the simulated user's reply {why}; it must write a message, or {STOP}"
            )
        if text.endswith(STOP):
            return Said(text.removesuffix(STOP).strip(), done=True)
        self._said.append(text)
        return Said(text, done=False)

    async def _admit(self, worst_usd: float = 0.0) -> None:
        """Count the call about to be made against the budget, holding `worst_usd` (the
        most it can cost) until its reply, or stop the user: a reply from the cache costs
        nothing and is never refused, and a mock script's is free."""
        worst = 0.0 if self.providers.override else worst_usd
        refusal = await self.calls.admit(worst) if self.calls is not None else None
        if refusal is not None:
            raise UserUnavailable(
                f"the simulated user ({self.model_id}) was stopped: {refusal}", refused=True
            )

    def _messages(self) -> list[ChatMessage]:
        """The conversation as the user sees it: its own messages are the assistant's turns
        and the agent's replies the user's, after the instructions."""
        messages = [
            ChatMessage(role="system", content=instructions(self.user)),
            ChatMessage(role="user", content=OPENING_CUE),
        ]
        for said, heard in zip(self._said, [*self._heard, None], strict=False):
            messages.append(ChatMessage(role="assistant", content=said))
            if heard is not None:
                messages.append(ChatMessage(role="user", content=heard))
        return messages
