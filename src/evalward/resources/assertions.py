"""Assertion types of an EvalFixture (seed 003's table), each with its required fields.

Every assertion may set `weight` (default 1.0), `severity` (overrides the fixture's) and
`axis` (for per-axis scores).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator

from evalward.resources.common import Model, Severity


class AssertionBase(Model):
    weight: float = Field(default=1.0, ge=0)
    severity: Severity | None = None
    axis: str | None = None


class ContainsAssertion(AssertionBase):
    type: Literal["contains"]
    value: str
    field: str | None = None


class EqualsAssertion(AssertionBase):
    """The final message (or `field` of it) equals `value`, both trimmed (AgentV `equals`)."""

    type: Literal["equals"]
    value: str
    field: str | None = None


class NotContainsAssertion(AssertionBase):
    type: Literal["notContains"]
    value: str
    field: str | None = None


class RegexAssertion(AssertionBase):
    type: Literal["regex"]
    pattern: str

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"invalid regular expression: {exc}") from None
        return pattern


class ToolCalledAssertion(AssertionBase):
    type: Literal["toolCalled"]
    tool: str
    before: list[str] = Field(default_factory=list)
    after: list[str] = Field(default_factory=list)


class ToolNotCalledAssertion(AssertionBase):
    type: Literal["toolNotCalled"]
    tool: str
    after: list[str] = Field(default_factory=list)


class ToolSequenceAssertion(AssertionBase):
    type: Literal["toolSequence"]
    tools: list[str] = Field(min_length=1)


class CostAssertion(AssertionBase):
    type: Literal["cost"]
    max_tokens: int = Field(ge=0)


class LatencyAssertion(AssertionBase):
    type: Literal["latency"]
    max_ms: float = Field(gt=0)


class JudgeAssertion(AssertionBase):
    type: Literal["judge"]
    kind: Literal["rubric"] = "rubric"
    rubric: str
    min_score: float = Field(default=0.5, ge=0, le=1)


Assertion = Annotated[
    ContainsAssertion
    | EqualsAssertion
    | NotContainsAssertion
    | RegexAssertion
    | ToolCalledAssertion
    | ToolNotCalledAssertion
    | ToolSequenceAssertion
    | CostAssertion
    | LatencyAssertion
    | JudgeAssertion,
    Field(discriminator="type"),
]
