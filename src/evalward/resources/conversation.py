"""A fixture that holds a conversation: the user's turns given in order (`turns`), or a user a
model plays (`user`: a persona and a goal, as tau-bench and ADK's user simulation write them);
docs/conversations.md.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field, field_validator, model_validator

from evalward.resources.checks.assertions import Assertion
from evalward.resources.common import Model, repeated

DEFAULT_MAX_TURNS = 10
MAX_TURNS_LIMIT = 50
"""The most turns a conversation may hold: each is at least one run of the agent."""


class EndReason(StrEnum):
    """Why a conversation ended, as the run's record and every surface say it."""

    user_done = "user done"
    """The script's last turn was answered, or the simulated user said its goal was met (or
    it gave up)."""
    turn_limit = "turn limit"
    handoff = "handoff"
    error = "error"
    timeout = "timeout"


class ScriptedTurn(Model):
    """One turn of a scripted user: what they say, and assertions on the agent's reply."""

    user: str = Field(min_length=1, description="What the user says on this turn.")
    assertions: list[Assertion] = Field(
        default_factory=list,
        description="Checked against this turn alone (as if each had `turn:` set to it).",
    )


class SimulatedUser(Model):
    """A user a model plays. The agent never sees any of this: only what the user says."""

    persona: str = Field(min_length=1, description="Who the user is and how they talk.")
    goal: str = Field(min_length=1, description="What the user wants from the conversation.")
    knows: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=list,
        description="Facts the user gives only when the agent asks for them.",
    )
    satisfied_when: str = Field(
        default="",
        description="When the goal is met; the user then ends the conversation.",
    )
    opening: str | None = Field(
        default=None,
        min_length=1,
        description="The user's first message, word for word (else the model writes it).",
    )
    model: str | None = Field(
        default=None,
        min_length=1,
        description=(
            "`provider/model` that plays the user; default the Eval's `simulatedUser.model`, "
            "then its judge's."
        ),
    )


class Conversation(Model):
    turns: list[ScriptedTurn] | None = Field(
        default=None, min_length=1, description="The user's turns, in order."
    )
    user: SimulatedUser | None = Field(
        default=None, description="A simulated user, instead of `turns`."
    )
    system: str | None = Field(
        default=None,
        min_length=1,
        description="Instructions the conversation opens with: a system message before the "
        "first turn, after the agent's own system prompt (not for a REPL agent, which reads "
        "only what the user types).",
    )
    max_turns: int = Field(
        default=DEFAULT_MAX_TURNS,
        ge=1,
        le=MAX_TURNS_LIMIT,
        description="The most user turns; reaching it ends the conversation (`turn limit`).",
    )
    handoff_tools: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=list,
        description="Tools whose call hands the conversation over and ends it (`handoff`).",
    )

    @model_validator(mode="after")
    def _one_user(self) -> Conversation:
        if (self.turns is None) == (self.user is None):
            raise ValueError(
                "give a conversation either `turns` (a scripted user) or `user` (a simulated "
                "one), not both or neither"
            )
        if self.turns is not None and len(self.turns) > self.max_turns:
            raise ValueError(
                f"the script has {len(self.turns)} turns, more than maxTurns "
                f"({self.max_turns}); raise maxTurns"
            )
        for index, turn in enumerate(self.turns or [], start=1):
            for assertion in turn.assertions:
                if assertion.turn not in (None, index):
                    raise ValueError(
                        f"turns[{index - 1}] holds an assertion with `turn: {assertion.turn}`; "
                        "a turn's own assertions read that turn: leave `turn` out"
                    )
        return self

    @field_validator("handoff_tools")
    @classmethod
    def _unique(cls, tools: list[str]) -> list[str]:
        if dupes := repeated(tools):
            raise ValueError(f"handoffTools lists {dupes} more than once")
        return tools

    @property
    def scripted(self) -> bool:
        return self.turns is not None

    @property
    def turn_limit(self) -> int:
        """The most turns this conversation can reach."""
        return len(self.turns) if self.turns is not None else self.max_turns

    def turn_assertions(self) -> list[Assertion]:
        """The scripted turns' own assertions, each limited to its turn."""
        return [
            assertion.model_copy(update={"turn": index})
            for index, turn in enumerate(self.turns or [], start=1)
            for assertion in turn.assertions
        ]


class SimulatedUserDefaults(Model):
    """An Eval's settings for the simulated users of its fixtures."""

    model: str | None = Field(
        default=None,
        min_length=1,
        description="`provider/model` that plays simulated users; default the judge's model.",
    )


def simulator_model(
    conversation: Conversation | None, eval_default: str | None, judge_model: str | None
) -> str | None:
    """The model that plays a fixture's simulated user: its own, the Eval's
    `simulatedUser.model`, then the judge's; None when the fixture has no simulated user."""
    if conversation is None or conversation.user is None:
        return None
    return conversation.user.model or eval_default or judge_model


def one_turn(text: str) -> Conversation:
    """A fixture's single input as a conversation of one scripted turn (for an agent that
    only ever holds conversations: a REPL agent)."""
    return Conversation(turns=[ScriptedTurn(user=text or " ")])
