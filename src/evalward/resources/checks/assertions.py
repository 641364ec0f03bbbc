"""Assertion types of an EvalFixture (seed 003's table and the ones users of promptfoo and
LangChain agentevals expect), each with its required fields (what every one may set is
resources/checks/assertion_base.py's). The exact semantics of each type are in docs/assertions.md.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import Field, PrivateAttr, field_validator, model_validator

from evalward.resources.checks.assertion_base import AssertionBase
from evalward.resources.checks.code_scorer import CodeAssertion
from evalward.resources.checks.patterns import Pattern, compiled_pattern
from evalward.resources.checks.state_assertions import (
    STATE_TYPES,
    FileStateAssertion,
    SqlAssertion,
    StateSnapshotAssertion,
    StateUnchangedAssertion,
    StateValueAssertion,
    valid_pattern,
)
from evalward.resources.common import Rubric, Severity, valid_json_schema


class ContainsAssertion(AssertionBase):
    type: Literal["contains"]
    value: str = Field(min_length=1)
    """Never empty: every text contains "", so the check would pass whatever the agent said."""
    field: str | None = None


class NotContainsAssertion(AssertionBase):
    type: Literal["notContains"]
    value: str = Field(min_length=1)
    """Never empty: no text leaves "" out, so the check would fail whatever was said."""
    field: str | None = None


class EqualsAssertion(AssertionBase):
    """The final message (or the JSON value at `field`) equals `value`."""

    type: Literal["equals"]
    value: Any
    field: str | None = None
    exact: bool = Field(
        default=False,
        description="Compare the final message as it is, spaces and newlines around it "
        "included (promptfoo's `equals`); by default they are removed first.",
    )


class RegexAssertion(AssertionBase):
    type: Literal["regex"]
    pattern: str = Field(min_length=1)
    """Never empty: "" matches every text, so the check would pass whatever was said."""
    field: str | None = None
    _compiled: Pattern | None = PrivateAttr(default=None)

    _compiles = field_validator("pattern")(valid_pattern)

    @model_validator(mode="after")
    def _keep_compiled(self) -> RegexAssertion:
        """Keep the pattern compiled when the fixture loads (just now, so from the cache):
        scoring searches with it, however many patterns the suite has, instead of compiling
        it a second time once the cache has let it go."""
        self._compiled = compiled_pattern(self.pattern)
        return self

    @property
    def compiled(self) -> Pattern:
        if self._compiled is None:
            self._compiled = compiled_pattern(self.pattern)
        return self._compiled


class JsonSchemaAssertion(AssertionBase):
    """The final message (or the JSON value at `field`) parses as JSON and validates."""

    type: Literal["jsonSchema"]
    json_schema: dict[str, Any] = Field(
        alias="schema",
        description="A JSON Schema; a `$ref` resolves within it (`#/$defs/x`), not a URL or file.",
    )
    field: str | None = None

    _valid_schema = field_validator("json_schema")(valid_json_schema)


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


class ArgsMode(StrEnum):
    partial = "partial"
    exact = "exact"


class ToolArgsAssertion(AssertionBase):
    """Some call of `tool` had arguments matching `args` (partially or exactly)."""

    type: Literal["toolArgs"]
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    mode: ArgsMode = ArgsMode.partial


class TrajectoryMode(StrEnum):
    strict = "strict"
    unordered = "unordered"
    subset = "subset"
    superset = "superset"


class TrajectoryAssertion(AssertionBase):
    """The run's tool calls compared with a reference list of tool names."""

    type: Literal["trajectory"]
    tools: list[str]
    mode: TrajectoryMode = TrajectoryMode.strict


class StepCount(StrEnum):
    turns = "turns"
    tool_calls = "toolCalls"
    steps = "steps"


class MaxStepsAssertion(AssertionBase):
    """The run took at most `max` model turns (or tool calls, or trace steps)."""

    type: Literal["maxSteps"]
    max: int = Field(ge=0)
    count: StepCount = StepCount.turns


class CostAssertion(AssertionBase):
    """The run's tokens (`maxTokens`) or its cost in US dollars (`maxUsd`) are within bounds;
    with both, both must hold."""

    type: Literal["cost"]
    max_tokens: int | None = Field(
        default=None, ge=0, description="Input and output tokens of every model call of the run."
    )
    max_usd: float | None = Field(
        default=None,
        ge=0,
        description="The run's cost in US dollars, from the models' prices (built in, or "
        "`pricing` in evalward.yaml); a model with no price makes it an `error`.",
    )

    @model_validator(mode="after")
    def _a_bound(self) -> CostAssertion:
        if self.max_tokens is None and self.max_usd is None:
            raise ValueError("a `cost` assertion needs `maxTokens`, `maxUsd` or both")
        return self


class LatencyScope(StrEnum):
    run = "run"
    step = "step"


class LatencyAssertion(AssertionBase):
    """The run's wall time (`scope: run`) or every timed step (`scope: step`) ≤ `maxMs`;
    with `tool`, every timed result of that tool's calls (a per-call budget).

    Without `maxMs` it is the reserved `{type: latency}`: the observed latency is
    reported and never gates (the assertion is advisory, left out of the score).
    """

    type: Literal["latency"]
    max_ms: float | None = Field(
        default=None,
        gt=0,
        description="The bound in milliseconds; without it the latency is reported, not gated.",
    )
    scope: LatencyScope = LatencyScope.run
    tool: str | None = Field(
        default=None,
        min_length=1,
        description="Bound only the calls of this tool (each call's result, timed); "
        "implies `scope: step`.",
    )

    @model_validator(mode="after")
    def _tool_is_per_step(self) -> LatencyAssertion:
        if (
            self.tool is not None
            and self.scope is LatencyScope.run
            and ("scope" in self.model_fields_set)
        ):
            raise ValueError("`tool` bounds each call of that tool: drop `scope: run`")
        return self

    @property
    def gates(self) -> bool:
        return self.max_ms is not None


class JudgeAssertion(AssertionBase):
    type: Literal["judge"]
    kind: Literal["rubric"] = "rubric"
    rubric: Rubric
    min_score: float = Field(default=0.5, ge=0, le=1)
    fail_on_violation: Severity | None = Field(
        default=None,
        description="Fails the assertion, whatever its score, where the judge cites a "
        "violation of this severity or a worse one whose evidence holds (its step exists and "
        "its quote stands in it); a severity the judge writes that is none of the four, or "
        "leaves out, counts as `critical`. Unset: the score alone decides.",
    )


class SimilarityMetric(StrEnum):
    cosine = "cosine"
    dot = "dot"
    euclidean = "euclidean"


DEFAULT_EMBEDDING_MODEL = "openai/text-embedding-3-large"
"""promptfoo's default embedding model (its `similar` assertion's)."""


class SimilarAssertion(AssertionBase):
    """The final message means what `value` says: the similarity of their embeddings
    reaches `threshold` (promptfoo's `similar`); docs/assertions.md, "Similarity"."""

    type: Literal["similar"]
    value: str | list[Annotated[str, Field(min_length=1)]] = Field(
        description="The expected text, or several: it passes when any one is similar enough "
        "(with `negate`, when none is)."
    )
    threshold: float = Field(
        default=0.75,
        description="The least similarity that passes (cosine, dot); with `metric: "
        "euclidean`, the largest distance.",
    )
    metric: SimilarityMetric = SimilarityMetric.cosine
    negate: bool = Field(
        default=False,
        description="Pass when the output is not similar (promptfoo's `not-similar`).",
    )
    model: str = Field(
        default=DEFAULT_EMBEDDING_MODEL,
        pattern=r"^[a-z0-9][a-z0-9_-]*/.+$",
        description="The embedding model, `provider/model`, of a provider that speaks OpenAI's "
        "embeddings API (`openai`, or one of evalward.yaml's with `api: openai`).",
    )
    field: str | None = None

    @field_validator("value")
    @classmethod
    def _something(cls, value: str | list[str]) -> str | list[str]:
        if not value:
            raise ValueError("`similar` needs the text to compare with")
        return value

    @model_validator(mode="after")
    def _a_threshold_that_decides(self) -> SimilarAssertion:
        """A threshold no similarity can fall on either side of passes every run (or, with
        `negate`, every run again): a cosine is from -1 to 1, a distance never below 0. A
        dot product has no bounds (an embedding model's vectors need not be of length 1)."""
        if self.metric is SimilarityMetric.euclidean:
            if self.threshold < 0:
                raise ValueError(
                    f"`threshold` {self.threshold} is a distance below 0, which no two texts "
                    "are apart, so the check would decide nothing: give a distance of 0 or more"
                )
        elif self.metric is SimilarityMetric.cosine:
            if self.negate and self.threshold >= 1:
                raise ValueError(
                    f"`threshold` {self.threshold} with `negate` passes every run, for no "
                    "cosine similarity is above 1, so the check would decide nothing: give a "
                    "value below 1"
                )
            if not -1 <= self.threshold <= 1 or (self.threshold == -1 and not self.negate):
                raise ValueError(
                    f"`threshold` {self.threshold} is outside the cosine similarity's range, "
                    "from -1 to 1, so the check would decide nothing: give a value above -1 "
                    "and at most 1 (0.75 by default)"
                )
        return self

    @property
    def values(self) -> list[str]:
        return [self.value] if isinstance(self.value, str) else list(self.value)


class AssertSetAssertion(AssertionBase):
    """A group of assertions scored as one (promptfoo's and AgentV's `assert-set`): its score
    is the weighted mean of its members' scores (for pass/fail members, the weighted share
    that pass); it passes when that reaches `threshold`, or, without one, when every member
    passes; docs/assertions.md, "Groups"."""

    type: Literal["assertSet"]
    assertions: list[Assertion] = Field(min_length=1)
    threshold: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="The least score that passes; without it, every member must pass.",
    )

    @field_validator("assertions")
    @classmethod
    def _no_state(cls, assertions: list[Assertion]) -> list[Assertion]:
        state = [a.type for a in flatten(assertions) if isinstance(a, STATE_TYPES)]
        if state:
            raise ValueError(
                f"a `{state[0]}` criterion reads the playground's state: put it beside the "
                "group, in the fixture's assertions"
            )
        return assertions


Assertion = Annotated[
    ContainsAssertion
    | NotContainsAssertion
    | EqualsAssertion
    | RegexAssertion
    | JsonSchemaAssertion
    | ToolCalledAssertion
    | ToolNotCalledAssertion
    | ToolSequenceAssertion
    | ToolArgsAssertion
    | TrajectoryAssertion
    | MaxStepsAssertion
    | CostAssertion
    | LatencyAssertion
    | JudgeAssertion
    | StateValueAssertion
    | SqlAssertion
    | FileStateAssertion
    | StateSnapshotAssertion
    | StateUnchangedAssertion
    | CodeAssertion
    | SimilarAssertion
    | AssertSetAssertion,
    Field(discriminator="type"),
]


def flatten(assertions: list[Assertion]) -> list[Assertion]:
    """The assertions with each group replaced by its members, recursively: what runs."""
    out: list[Assertion] = []
    for assertion in assertions:
        if isinstance(assertion, AssertSetAssertion):
            out += flatten(assertion.assertions)
        else:
            out.append(assertion)
    return out


ToolField = tuple[tuple[str | int, ...], str, bool]
"""Where in an assertion a tool is named (from the assertion), the name as written, and
whether the check wants a call of it (else it passes without one)."""


def tool_fields(assertion: Assertion) -> list[ToolField]:
    """The assertion's own fields that name a tool (a group's members are assertions of their
    own): what the names are compared by, before a run (plan/preflight/tool_refs.py) and as a
    head run of a fixture the base gates with is scored (scoring/fixture_checks.py)."""
    if isinstance(assertion, ToolCalledAssertion):
        return [
            (("tool",), assertion.tool, True),
            *((("before", i), name, False) for i, name in enumerate(assertion.before)),
            *((("after", i), name, True) for i, name in enumerate(assertion.after)),
        ]
    if isinstance(assertion, ToolNotCalledAssertion):
        return [
            (("tool",), assertion.tool, False),
            *((("after", i), name, False) for i, name in enumerate(assertion.after)),
        ]
    if isinstance(assertion, ToolArgsAssertion):
        return [(("tool",), assertion.tool, True)]
    if isinstance(assertion, LatencyAssertion) and assertion.tool is not None:
        return [(("tool",), assertion.tool, True)]  # a run that never calls it fails it
    if isinstance(assertion, ToolSequenceAssertion | TrajectoryAssertion):
        wants = not (
            isinstance(assertion, TrajectoryAssertion) and assertion.mode is TrajectoryMode.subset
        )
        return [(("tools", i), name, wants) for i, name in enumerate(assertion.tools)]
    return []
