"""pydantic models of the resource kinds, field for field as seed 003 names them.

Field names are snake_case in Python and camelCase in YAML (`targetAgent`), exactly as the
seed spells them. Unknown fields are errors so that a typo never silently disables a check.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from evalward.resources.agents.agent import Agent
from evalward.resources.calibration import JudgeCalibration
from evalward.resources.checks.assertions import (
    Assertion,
    AssertSetAssertion,
    ContainsAssertion,
    EqualsAssertion,
    JudgeAssertion,
    RegexAssertion,
    ToolCalledAssertion,
    ToolNotCalledAssertion,
    flatten,
)
from evalward.resources.checks.code_scorer import ScoringFunction
from evalward.resources.checks.code_source import OutputTransform
from evalward.resources.common import (
    DEFAULT_SEVERITY_WEIGHTS,
    Metadata,
    Model,
    Severity,
    error_at,
    is_number,
    repeated,
)
from evalward.resources.conversation import Conversation, SimulatedUserDefaults
from evalward.resources.cron import parse_cron
from evalward.resources.gate_policy import GatePolicy, RepRange
from evalward.resources.pairwise import FixturePairwise, PairwiseConfig
from evalward.resources.playground import Playground

# --- EvalFixture -------------------------------------------------------------------------


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


class ContentPart(Model):
    """One part of a message's content, sent to the model as written (OpenAI's and
    Anthropic's text part; `cache_control` asks the provider to cache the prompt so far)."""

    type: Literal["text"]
    text: str
    cache_control: dict[str, Any] | None = Field(default=None, alias="cache_control")


class Message(Model):
    role: Literal["system", "user", "assistant"]
    content: str | list[ContentPart] = Field(
        description="The text, or its content parts (sent as they are: the model's API "
        "receives parts, not one string)."
    )

    @property
    def text(self) -> str:
        """The message's text (its parts' texts joined)."""
        if isinstance(self.content, str):
            return self.content
        return "".join(part.text for part in self.content)


class FixtureInput(Model):
    """What the agent receives: a channel event (`payload`) or a conversation (`messages`)."""

    type: InputType
    payload: dict[str, Any] = Field(default_factory=dict)
    messages: list[Message] = Field(default_factory=list)

    @model_validator(mode="after")
    def _shape(self) -> FixtureInput:
        if self.type is InputType.prompt and not isinstance(self.payload.get("prompt"), str):
            raise ValueError('an input of type `prompt` needs `payload: { prompt: "..." }`')
        if self.type is InputType.messages and not self.messages:
            raise ValueError("an input of type `messages` needs a non-empty `messages` list")
        if self.type is not InputType.messages and self.messages:
            raise ValueError("`messages` is only read when `type: messages`; use `payload`")
        return self


class Origin(Model):
    """Where a fixture promoted from a production trace came from; blank when hand-written."""

    trace_id: str | None = None
    promoted_at: datetime | None = None
    promoted_by: str | None = None


class ToolReplay(Model):
    """A recorded tool result served instead of running the tool.

    A call of `tool` is answered with `output` when `arguments` is absent, or when every key
    of `arguments` is present in the call with an equal value (a partial match).
    """

    tool: str = Field(min_length=1)
    arguments: dict[str, Any] | None = None
    output: str | dict[str, Any]
    is_error: bool = False


class EvalFixtureSpec(Model):
    target_agent: str = Field(min_length=1)
    kind: FixtureKind = FixtureKind.golden
    severity: Severity = Severity.medium
    description: str = ""
    origin: Origin | None = None
    input: FixtureInput | None = None
    conversation: Conversation | None = None
    assertions: list[Assertion] = Field(default_factory=list, validate_default=True)
    tool_replay: list[ToolReplay] | None = None
    shadow_tools: list[Annotated[str, Field(min_length=1)]] | None = None
    reference: str | None = Field(
        default=None,
        description=(
            "The expected output (AgentV `expected_output`), shown to the judge as a reference."
        ),
    )
    sidecar: dict[str, Any] = Field(
        default_factory=dict,
        description="Extra metadata for judges (AgentV `sidecar` / `metadata`).",
    )
    vars: dict[str, Any] = Field(
        default_factory=dict,
        description="The values the fixture was written from (promptfoo's `vars`): code "
        "scorers get them as `context.vars`, over the input's `payload`.",
    )

    playground: Playground | None = Field(
        default=None,
        description="The world the agent acts on, fresh for every run (docs/playgrounds.md); "
        "overrides the Eval's.",
    )
    pairwise: FixturePairwise | None = Field(
        default=None,
        description="Judge this fixture's base and head runs against each other "
        '(docs/assertions.md,\n"The pairwise judge"); overrides the Eval\'s `judge.pairwise`.',
    )
    pass_threshold: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="A run passes when its weighted score reaches this, whatever a single "
        "assertion says (promptfoo's test `threshold`); errors still fail closed.",
    )
    transform: OutputTransform | None = Field(
        default=None,
        description="A function of the final output whose result every assertion checks "
        "instead (promptfoo's `options.transform`): docs/assertions.md, Transforms.",
    )
    scoring_function: ScoringFunction | None = Field(
        default=None,
        description="A function that decides each run from its assertions' results "
        '(promptfoo\'s `assertScoringFunction`); docs/assertions.md, "Deciding a run".',
    )

    @field_validator("assertions")
    @classmethod
    def _something_to_check(
        cls, assertions: list[Assertion], info: ValidationInfo
    ) -> list[Assertion]:
        conversation = info.data.get("conversation")
        if not assertions and (conversation is None or not conversation.turn_assertions()):
            raise ValueError(
                "expected at least 1 item in `assertions`; found none (a conversation's "
                "turns may hold them instead)"
            )
        return assertions

    @field_validator("shadow_tools")
    @classmethod
    def _unique_shadow_tools(cls, tools: list[str] | None) -> list[str] | None:
        if tools is not None and (dupes := repeated(tools)):
            raise ValueError(f"shadowTools lists {dupes} more than once")
        return tools

    visibility: Literal["public", "private"] = Field(
        default="public",
        description="`private`: a held-out fixture; public reports show only its name and result.",
    )

    @model_validator(mode="after")
    def _input_or_conversation(self) -> EvalFixtureSpec:
        """An `input` or a `conversation` (its first turn is the input), and each `turn:` one
        the conversation can reach."""
        conversation = self.conversation
        if self.input is not None and conversation is not None:
            raise ValueError(
                "give a fixture either `input` or `conversation`, not both: a conversation's "
                "first user turn is its input"
            )
        if self.input is None and conversation is None:
            raise ValueError("a fixture needs `input` (one run) or `conversation` (several turns)")
        for at, assertion in _and_members(self.assertions, ("assertions",)):
            if assertion.turn is None:
                continue
            if conversation is None:
                raise error_at(
                    (*at, "turn"),
                    f"the assertion has `turn: {assertion.turn}`, but the fixture holds no "
                    "conversation; leave `turn` out",
                )
            if assertion.turn > conversation.turn_limit:
                raise error_at(
                    (*at, "turn"),
                    f"the assertion reads turn {assertion.turn}, and the conversation has at "
                    f"most {conversation.turn_limit}; give a turn from 1 to "
                    f"{conversation.turn_limit}",
                )
        return self

    @property
    def every_assertion(self) -> list[Assertion]:
        """The fixture's assertions, then its scripted turns' own (each limited to its turn)."""
        turns = self.conversation.turn_assertions() if self.conversation is not None else []
        return [*self.assertions, *turns]

    @property
    def leaf_assertions(self) -> list[Assertion]:
        """`every_assertion` with each group (`assertSet`) replaced by its members: every
        check that runs."""
        return flatten(self.every_assertion)


def _and_members(
    assertions: list[Assertion], at: tuple[str | int, ...]
) -> Iterator[tuple[tuple[str | int, ...], Assertion]]:
    """Each assertion of the list at `at`, and each member of a group (`assertSet`) after
    it, at any depth, with where it is: a `turn:` a member gives is one the conversation
    must reach too."""
    for index, assertion in enumerate(assertions):
        yield (*at, index), assertion
        if isinstance(assertion, AssertSetAssertion):
            yield from _and_members(assertion.assertions, (*at, index, "assertions"))


class EvalFixture(Model):
    api_version: str
    kind: Literal["EvalFixture"]
    metadata: Metadata
    spec: EvalFixtureSpec


# --- Eval --------------------------------------------------------------------------------


class FixtureSelector(Model):
    match_labels: dict[str, str] = Field(default_factory=dict)


DEFAULT_CROSS_CHECK_MARGIN = 0.3


class CrossCheckConfig(Model):
    """Judges that grade every judge assertion beside the primary `judge.model`, e.g. a
    cross-vendor sanity check on top of an Anthropic primary judge: their verdicts are shown,
    and a score further than `margin` from the primary's is flagged; they never gate."""

    models: list[Annotated[str, Field(min_length=1)]] = Field(
        min_length=1, description="`provider/model` ids of the cross-check judges."
    )
    margin: float = Field(
        default=DEFAULT_CROSS_CHECK_MARGIN,
        ge=0,
        le=1,
        description="A cross-check score further than this from the primary's is a disagreement.",
    )

    @field_validator("models")
    @classmethod
    def _unique_models(cls, models: list[str]) -> list[str]:
        if dupes := repeated(models):
            raise ValueError(f"{dupes} is listed more than once; name each judge once")
        return models


class JudgeConfig(Model):
    model: str | None = Field(
        default=None, description="The primary judge (`provider/model`): the one that gates."
    )
    temperature: float = Field(default=0.0, ge=0, le=2)
    calibration: str | None = None
    calibration_floor: float = Field(
        default=0.6,
        ge=-1,
        le=1,
        description=(
            "Below this Cohen's κ of `calibration`, the judge cannot decide: its Eval is "
            "inconclusive."
        ),
    )
    cross_check: CrossCheckConfig | None = None
    pairwise: PairwiseConfig | None = Field(
        default=None,
        description="A pairwise judge: each fixture's head run against its base run, in both "
        "orders.",
    )

    @field_validator("cross_check")
    @classmethod
    def _primary_first(
        cls, check: CrossCheckConfig | None, info: ValidationInfo
    ) -> CrossCheckConfig | None:
        if check is None or "model" not in info.data:  # a bad `model` is reported on its own
            return check
        model = info.data["model"]
        if model is None:
            raise ValueError(
                "a cross-check needs the primary judge `judge.model` to check: the primary "
                "gates, and the cross-check judges are compared with it; set `model`"
            )
        if model in check.models:
            raise ValueError(
                f"`models` lists {model}, which is already the primary judge (`model`); "
                "name a different model to check it against"
            )
        return check

    @property
    def models(self) -> list[str]:
        """Every judge model the Eval calls: the primary first, then the cross-check judges."""
        if self.model is None:
            return []
        return [self.model, *(self.cross_check.models if self.cross_check else [])]


class ScoringConfig(Model):
    pass_threshold: float = Field(default=1.0, ge=0, le=1)
    severity_weights: dict[Severity, Annotated[float, Field(ge=0)]] = Field(
        default_factory=dict,
        description="Overrides of DEFAULT_SEVERITY_WEIGHTS; keys must be severities.",
    )
    min_rep_pass_rate: float = Field(
        default=0.6,
        gt=0,
        le=1,
        description=(
            "With repsPerFixture > 1, a fixture passes when at least this share of its reps "
            "pass.\nThe default 0.6 asks for a clear majority; docs/assertions.md and "
            "bench/gate_sim.py say\nwhy not every rep."
        ),
    )
    gate: GatePolicy = Field(default_factory=GatePolicy)

    min_pass_hat_k: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description=(
            "With repsPerFixture: k, the Eval passes only when at least this share of its "
            "fixtures\npassed all k reps (pass^k, as tau-bench reports it). Unset: not gated."
        ),
    )

    def weight_of(self, severity: Severity) -> float:
        return self.severity_weights.get(severity, DEFAULT_SEVERITY_WEIGHTS[severity])


class ExecutionConfig(Model):
    parallel: int | None = Field(
        default=None,
        ge=1,
        le=1024,
        description=(
            "At most this many of the Eval's fixture runs at once, within the run's own "
            "limit\n(`--parallel`, the action input `parallel`). Unset: only the run's "
            "limit bounds it."
        ),
    )
    timeout_seconds: float = Field(default=300, gt=0)
    reps_per_fixture: int = Field(default=1, ge=1, le=1000)
    reps: RepRange | None = Field(
        default=None,
        description=(
            "Adaptive reps: each fixture starts at `min` and gets more, up to `max`, only "
            "while its\nsequential test is open (`scoring.gate`); replaces repsPerFixture."
        ),
    )

    @field_validator("reps", mode="before")
    @classmethod
    def _reps_range(cls, value: object) -> object:
        """`reps: 3` reads as three runs per fixture, which is `repsPerFixture`'s: the
        mapping `reps` takes alone would not say so."""
        if is_number(value):
            raise ValueError(
                f"expected a mapping; found {value!r} (for a fixed number of runs per "
                f"fixture, `repsPerFixture: {value}`; adaptive reps are `{{min, max}}`)"
            )
        return value


class EvalSpec(Model):
    target_agent: str = Field(min_length=1)
    fixture_selector: FixtureSelector | None = None
    fixtures: list[str] = Field(default_factory=list)
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    execution: ExecutionConfig = Field(default_factory=ExecutionConfig)
    simulated_user: SimulatedUserDefaults = Field(default_factory=SimulatedUserDefaults)
    playground: Playground | None = Field(
        default=None,
        description="The playground of every fixture that names none (docs/playgrounds.md).",
    )
    visibility: Literal["public", "private"] = Field(
        default="public",
        description="`private`: every fixture of this Eval is held out of public reports.",
    )
    schedule: str | None = Field(
        default=None,
        json_schema_extra={"pattern": r"^\s*(\S+\s+){4}\S+\s*$"},
        description="A 5-field cron expression (minute hour day-of-month month day-of-week).",
    )

    @field_validator("schedule")
    @classmethod
    def _cron(cls, schedule: str | None) -> str | None:
        if schedule is not None:
            parse_cron(schedule)  # its ValueError says which field is wrong and why
        return schedule


class Eval(Model):
    api_version: str
    kind: Literal["Eval"]
    metadata: Metadata
    spec: EvalSpec


Resource = Agent | EvalFixture | Eval | JudgeCalibration

KINDS: dict[str, type[Agent] | type[EvalFixture] | type[Eval] | type[JudgeCalibration]] = {
    "Agent": Agent,
    "EvalFixture": EvalFixture,
    "Eval": Eval,
    "JudgeCalibration": JudgeCalibration,
}


__all__ = [
    "KINDS",
    "Agent",
    "Assertion",
    "ContainsAssertion",
    "EqualsAssertion",
    "Eval",
    "EvalFixture",
    "JudgeAssertion",
    "JudgeCalibration",
    "RegexAssertion",
    "Severity",
    "ToolCalledAssertion",
    "ToolNotCalledAssertion",
    "ToolReplay",
]
