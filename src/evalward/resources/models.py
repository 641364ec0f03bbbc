"""pydantic models of the resource kinds, field for field as seed 003 names them.

Field names are snake_case in Python and camelCase in YAML (`targetAgent`), exactly as the
seed spells them. Unknown fields are errors so that a typo never silently disables a check.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

API_VERSIONS = ("evalward.dev/v1", "pai.io/v1")
"""`pai.io/v1` is accepted so that seed 003's examples load unchanged."""

NAME_PATTERN = r"^[a-z0-9]([a-z0-9._-]{0,251}[a-z0-9])?$"


class Model(BaseModel):
    """Base of every resource model: camelCase aliases, no unknown fields, immutable."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
    )


class Severity(StrEnum):
    low = "low"
    medium = "medium"
    high = "high"
    critical = "critical"


DEFAULT_SEVERITY_WEIGHTS: dict[Severity, float] = {
    Severity.low: 0.5,
    Severity.medium: 1.0,
    Severity.high: 2.0,
    Severity.critical: 4.0,
}


class Metadata(Model):
    name: str = Field(pattern=NAME_PATTERN)
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    generation: int | None = None


# --- Agent -------------------------------------------------------------------------------


class ToolMock(Model):
    """A canned tool result: the tool is never executed."""

    output: str | dict[str, Any] | list[Any]


class Tool(Model):
    """A tool offered to a declarative agent's model.

    `type` is seed 003's short form (`{ type: bash, enabled: false }`); `name` wins when both
    are given.
    """

    name: str | None = Field(default=None, pattern=r"^[a-zA-Z0-9_-]{1,64}$")
    type: str | None = None
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    enabled: bool = True
    mock: ToolMock | None = None

    @model_validator(mode="after")
    def _has_a_name(self) -> Tool:
        if not self.name and not self.type:
            raise ValueError("a tool needs a `name` (or seed 003's short form `type`)")
        return self

    @property
    def tool_name(self) -> str:
        return self.name or self.type or ""


class AgentSpec(Model):
    models: list[str] = Field(default_factory=list)
    system: str | None = None
    system_file: str | None = None
    tools: list[Tool] = Field(default_factory=list)
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_turns: int = Field(default=10, ge=1, le=200)
    max_tokens: int | None = Field(default=None, ge=1)
    watch: list[str] = Field(default_factory=list)

    @field_validator("models")
    @classmethod
    def _model_ids(cls, models: list[str]) -> list[str]:
        for model in models:
            if "/" not in model:
                raise ValueError(
                    f"model id {model!r} must be `provider/model`, e.g. `openai/gpt-4.1-mini`"
                )
        return models

    @model_validator(mode="after")
    def _declarative(self) -> AgentSpec:
        if not self.models:
            raise ValueError("a declarative agent needs `models: [provider/model, ...]`")
        if self.system is not None and self.system_file is not None:
            raise ValueError("set either `system` or `systemFile`, not both")
        names = [t.tool_name for t in self.tools]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate tool names: {', '.join(dupes)}")
        return self


class Agent(Model):
    api_version: str
    kind: Literal["Agent"]
    metadata: Metadata
    spec: AgentSpec


# --- EvalFixture -------------------------------------------------------------------------


class AssertionBase(Model):
    weight: float = Field(default=1.0, ge=0)
    severity: Severity | None = None
    axis: str | None = None


class ContainsAssertion(AssertionBase):
    type: Literal["contains"]
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


class FixtureKind(StrEnum):
    golden = "golden"
    bad = "bad"
    edge = "edge"


class InputType(StrEnum):
    webhook = "webhook"
    prompt = "prompt"
    telegram = "telegram"
    slack = "slack"
    email = "email"
    messages = "messages"


class Message(Model):
    role: Literal["system", "user", "assistant"]
    content: str


class FixtureInput(Model):
    type: InputType
    payload: dict[str, Any] = Field(default_factory=dict)
    messages: list[Message] = Field(default_factory=list)

    @model_validator(mode="after")
    def _shape(self) -> FixtureInput:
        if self.type is InputType.prompt and not isinstance(self.payload.get("prompt"), str):
            raise ValueError('an input of type `prompt` needs `payload: { prompt: "..." }`')
        if self.type is InputType.messages and not self.messages:
            raise ValueError("an input of type `messages` needs a non-empty `messages` list")
        return self


class Origin(Model):
    trace_id: str | None = None
    promoted_at: str | None = None
    promoted_by: str | None = None


class EvalFixtureSpec(Model):
    target_agent: str
    kind: FixtureKind = FixtureKind.golden
    severity: Severity = Severity.medium
    description: str = ""
    origin: Origin | None = None
    input: FixtureInput
    assertions: list[Assertion] = Field(min_length=1)
    tool_replay: list[dict[str, Any]] | None = None
    shadow_tools: list[str] | None = None


class EvalFixture(Model):
    api_version: str
    kind: Literal["EvalFixture"]
    metadata: Metadata
    spec: EvalFixtureSpec


# --- Eval --------------------------------------------------------------------------------


class FixtureSelector(Model):
    match_labels: dict[str, str] = Field(default_factory=dict)


class JudgeConfig(Model):
    model: str | None = None
    temperature: float = Field(default=0.0, ge=0, le=2)
    calibration: str | None = None


class ScoringConfig(Model):
    pass_threshold: float = Field(default=1.0, ge=0, le=1)
    severity_weights: dict[Severity, float] = Field(default_factory=dict)

    def weight_of(self, severity: Severity) -> float:
        return self.severity_weights.get(severity, DEFAULT_SEVERITY_WEIGHTS[severity])


class ExecutionConfig(Model):
    parallel: int = Field(default=4, ge=1, le=1024)
    timeout_seconds: float = Field(default=300, gt=0)
    reps_per_fixture: int = Field(default=1, ge=1, le=1000)


class EvalSpec(Model):
    target_agent: str
    fixture_selector: FixtureSelector | None = None
    fixtures: list[str] = Field(default_factory=list)
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    execution: ExecutionConfig = Field(default_factory=ExecutionConfig)
    schedule: str | None = None


class Eval(Model):
    api_version: str
    kind: Literal["Eval"]
    metadata: Metadata
    spec: EvalSpec


# --- JudgeCalibration --------------------------------------------------------------------


class CalibrationExample(Model):
    trace_ref: str | None = None
    input: dict[str, Any] | str
    candidate_output: str
    human_score: float = Field(ge=0, le=1)
    human_label: str | None = None
    disagreement_reason: str | None = None


class JudgeCalibrationSpec(Model):
    rubric: str
    judge_models: list[str] = Field(min_length=1)
    examples: list[CalibrationExample] = Field(min_length=1)


class JudgeCalibration(Model):
    api_version: str
    kind: Literal["JudgeCalibration"]
    metadata: Metadata
    spec: JudgeCalibrationSpec


Resource = Agent | EvalFixture | Eval | JudgeCalibration

KINDS: dict[str, type[Agent] | type[EvalFixture] | type[Eval] | type[JudgeCalibration]] = {
    "Agent": Agent,
    "EvalFixture": EvalFixture,
    "Eval": Eval,
    "JudgeCalibration": JudgeCalibration,
}
