"""The one trace model every agent run produces and every assertion reads.

Steps are numbered from 1 so that a judge's `evidence_step` and a human reading the report
point at the same thing. Converters from other shapes (bring-your-own JSON lines, OpenAI and
Anthropic transcripts) live in `runtime.protocol` and `runtime.converters` and build this model.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pydantic import Field, PrivateAttr

from evalward.rundata.record_model import RecordModel
from evalward.text import jsontext

if TYPE_CHECKING:
    from evalward.resources.conversation import EndReason


MEASURED_ORIGIN = "proxy"
"""The origin whose steps evalward saw and timed itself (the model proxy's, `Trace.record`)."""
ORIGINS = ("agent", MEASURED_ORIGIN, "otel")
"""Who reports a bring-your-own agent's steps: its events, the model proxy, its spans."""
MAX_OFFERED_TOOLS = 1_000
"""The tool names a run's `offered_tools` keeps: past it, names no earlier request offered
are left out (a head's then counts as not offered: its guards fail, never pass)."""
OFFERED_NAME_CHARS = 200
"""The longest offered tool's name kept (the APIs allow 64 or 128); a longer one is left out,
never cut: its prefix names another tool (a head's then counts as not offered)."""
MAX_RECORDED_STEPS = 10_000
"""The most steps those reports may add to one run: past it the rest are dropped and the run
is an error, so neither the trace nor merging the reports (each step compared with the ones
its origin has not matched) grows without bound, whatever an agent sends."""


NO_SUCH_TOOL = "evalward"
"""The `source` of the result evalward gives a call of a tool the agent was not offered:
nothing ran (`Trace.answered_calls`)."""


CUT_AT_TOKEN_LIMIT = frozenset({"length", "max_tokens", "MAX_TOKENS"})
"""The stop reasons that say a reply was cut at its token limit, not a whole answer: OpenAI's
`length`, Anthropic's `max_tokens`, Gemini's `MAX_TOKENS`."""


class StepType(StrEnum):
    input = "input"
    assistant = "assistant"
    tool_call = "tool_call"
    tool_result = "tool_result"
    error = "error"
    final = "final"


class Usage(RecordModel):
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    """None when the model has no price in the table: tokens are still counted."""
    reported: bool = False
    """True when a bring-your-own agent reported these numbers itself (a `usage` event);
    False when evalward measured them (its own tool loop, the model proxy)."""

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        costs = [c for c in (self.cost_usd, other.cost_usd) if c is not None]
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cost_usd=sum(costs) if costs else None,
            reported=self.reported or other.reported,
        )


class Step(RecordModel):
    index: int
    type: StepType
    content: str = ""
    tool: str | None = None
    call_id: str | None = None
    arguments: dict[str, Any] | None = None
    output: str | None = None
    is_error: bool = False
    started_at: float = 0.0
    duration_ms: float = 0.0
    usage: Usage | None = None
    model: str | None = None
    source: str | None = None
    """Where a tool result came from: mock, replay, shadow, command, mcp (or the agent
    itself); `NO_SUCH_TOOL` where no tool of its name was offered."""
    server: str | None = None
    """The MCP server of an MCP tool's call and result; its `tool` is then qualified by the
    server's name (`orders__lookup_order`), whatever name the model was offered."""
    cached: bool = False
    stop_reason: str | None = None
    """Why the model stopped the reply this step came from, as the provider said it
    (`stop`, `tool_calls`, `end_turn`, `length`, `max_tokens`, ...)."""
    via: str | None = None
    """Where a bring-your-own agent's step was seen when the agent did not report it itself:
    `proxy` (the model proxy saw the model ask for it, or the agent send its result back)
    or `otel` (a span the agent exported). None for the agent's own events and evalward's
    own tool loop."""
    turn: int | None = None
    """In a conversation, the user turn this step belongs to (1 is the first)."""

    @property
    def truncated(self) -> bool:
        """The reply was cut at its token limit: not a whole answer."""
        return self.stop_reason in CUT_AT_TOKEN_LIMIT

    def text(self) -> str:
        """The text a reader (or a judge quote) would find in this step."""
        parts = [self.content]
        if self.tool:
            parts.append(self.tool)
        if self.arguments is not None:
            parts.append(json.dumps(self.arguments, ensure_ascii=False, sort_keys=True))
        if self.output is not None:
            parts.append(self.output)
        return "\n".join(p for p in parts if p)


class Fallback(RecordModel):
    """A model call that failed after its retries and was retried on the next model."""

    from_model: str
    to_model: str
    reason: str
    at_step: int


class ModelCall(RecordModel):
    """One model call an agent's own process made through evalward's model proxy, as the
    proxy measured it (`runtime.model_proxy`)."""

    api: str
    """The provider whose API the agent spoke: `openai` or `anthropic`."""
    model: str
    """`provider/model`, as priced (`provider/` alone when the request named none)."""
    status: int
    """The HTTP status the agent was answered with."""
    endpoint: str = ""
    """The request: `POST /v1/chat/completions`, `POST /v1/responses`, `POST /v1/messages`,
    `POST /v1/embeddings`, or what else the agent asked for."""
    streamed: bool = False
    """The reply was streamed (server-sent events)."""
    usage: Usage | None = None
    started_at: float = 0.0
    duration_ms: float = 0.0
    first_byte_ms: float | None = None
    """For a streamed reply, when its first event reached the agent."""
    cached: bool = False
    """Answered from the response cache: no call reached the provider."""
    error: str | None = None
    after_step: int = 0
    """How many steps the trace had when the call was made: where it sits in the timeline."""


class Trace(RecordModel):
    steps: list[Step] = Field(default_factory=list)
    duration_ms: float = 0.0
    fallbacks: list[Fallback] = Field(default_factory=list)
    cache_hits: int = 0
    model_calls: int = 0
    stderr: str = ""
    """What a bring-your-own agent wrote to stderr (tail), kept for the report."""
    proxy_calls: list[ModelCall] = Field(default_factory=list)
    """Model calls the agent's processes made through the model proxy, in order."""
    offered_tools: list[str] | None = None
    """A bring-your-own agent's run: the tools its requests through the model proxy offered
    the model, each name once, in the order first offered (at most `MAX_OFFERED_TOOLS`); []
    when it offered none or called no model. None where it is not recorded: a declarative
    agent's run (its definition lists its tools), a result kept before it was, or a run whose
    request offered tools evalward could not read (`text_tools.offered`). A base
    fixture's guard of a tool the base's run offered and the head's never did fails the head's
    run (plan/preflight/tool_refs.py, `unoffered_tools`)."""
    budget_refused: bool = False
    """The job's budget (`max-model-calls`, `max-cost-usd`, a run's share of calls) refused a
    model call of the run: what it did after says nothing of its agent. A base run so refused
    is no baseline (`settle.refused_baseline`)."""
    provider_unavailable: bool = False
    """The run ended because every model it tried kept failing through its retries (an
    outage), not because of anything the agent did."""
    timed_out: bool = False
    """The run reached no terminal event before its timeout (`execution.timeoutSeconds`, or
    the agent's own): it was stopped, and its last step is the `error` that says so."""
    end_reason: str | None = None
    """In a conversation, why it ended (`resources.conversation.EndReason`); set by `end`."""
    user_calls: int = 0
    """Model calls the simulated user made (not the agent's: they are not in `usage`)."""
    user_usage: Usage | None = None
    """What the simulated user's model calls used."""
    turn_durations_ms: list[float] = Field(default_factory=list)
    """In a conversation, how long the agent took over each turn's reply, in turn order, as
    evalward timed it (from the user's message to the reply): a turn's latency."""

    _turn: int | None = PrivateAttr(default=None)
    """The conversation turn steps added now belong to."""
    _unmatched: dict[str, dict[int, Step]] = PrivateAttr(default_factory=dict)
    """Per origin, the steps the other origins reported that it has not (by index, in order):
    the only ones a step it reports may be (`record`)."""
    _recorded: int = PrivateAttr(default=0)

    def record(self, type: StepType, origin: str, **fields: Any) -> Step:
        """Add a step one origin saw — the agent's own events (`agent`), the model proxy's
        view of its calls (`proxy`), its exported spans (`otel`) — unless another origin
        already gave the same step: the origins are merged, never counted twice. A final
        answer the agent gives that the proxy saw as the model's last text makes that step
        the final one, and a duration the proxy measured replaces the one the agent reported
        (the agent's word on its own speed never stands against evalward's clock)."""
        same = self._same(type, origin, fields)
        if same is not None:
            del self._unmatched[origin][same.index]
            if type is StepType.final:
                same.type = StepType.final
            if origin == MEASURED_ORIGIN and fields.get("duration_ms"):
                same.duration_ms = fields["duration_ms"]
            return same
        self._recorded += 1
        if self._recorded > MAX_RECORDED_STEPS:
            if self._recorded == MAX_RECORDED_STEPS + 1:
                self.add(
                    StepType.error,
                    content=f"the run reported more than {MAX_RECORDED_STEPS:,} steps (its "
                    "events, its model calls and its spans together); the rest were not kept",
                )
            return self.steps[-1]
        step = self.add(type, via=None if origin == "agent" else origin, **fields)
        for other in ORIGINS:
            if other != origin:
                self._unmatched.setdefault(other, {})[step.index] = step
        return step

    def _same(self, type: StepType, origin: str, fields: dict[str, Any]) -> Step | None:
        texts = (StepType.assistant, StepType.final)
        for step in self._unmatched.get(origin, {}).values():
            if step.turn != self._turn:
                continue
            alike = step.type is type or (step.type in texts and type in texts)
            if alike and _same_step(step, type, fields):
                return step
        return None

    def time_out(self, message: str) -> None:
        """End the run as timed out: the error step says why, `timed_out` marks it."""
        self.add(StepType.error, content=message)
        self.timed_out = True

    def end(self, reason: EndReason) -> None:
        """End the conversation for `reason`, the one way its end reason is written. The
        first reason stands: a run cut short once its conversation had ended (the runner's
        timeout, a crash) keeps the reason the conversation ended for."""
        if self.end_reason is None:
            self.end_reason = reason.value

    def begin_turn(self, turn: int) -> None:
        """Steps added from now on belong to conversation turn `turn`."""
        self._turn = turn

    def add(self, type: StepType, **fields: Any) -> Step:
        fields.setdefault("turn", self._turn)
        step = Step(index=len(self.steps) + 1, type=type, **fields)
        self.steps.append(step)
        return step

    @property
    def final_step(self) -> Step | None:
        return next((s for s in reversed(self.steps) if s.type is StepType.final), None)

    @property
    def final_output(self) -> str:
        step = self.final_step
        return "" if step is None else step.content

    @property
    def error(self) -> str | None:
        return next((s.content for s in self.steps if s.type is StepType.error), None)

    @property
    def usage(self) -> Usage:
        """Tokens and cost of the run. What evalward measured (its tool loop's calls, the
        model proxy's) always counts. What an agent reported itself (`usage` events) counts
        only when the proxy served none of the run's calls: otherwise it describes the same
        calls again, and a number the agent reports could understate what it spent."""
        measured = [s.usage for s in self.steps if s.usage is not None and not s.usage.reported]
        measured += [c.usage for c in self.proxy_calls if c.usage is not None]
        if not self.proxy_calls:
            measured += [s.usage for s in self.steps if s.usage is not None and s.usage.reported]
        return sum(measured, Usage())

    @property
    def failed_proxy_calls(self) -> list[ModelCall]:
        return [c for c in self.proxy_calls if c.error is not None]

    def proxy_failure_note(self) -> str:
        """`; a model call failed: …` naming the first call the model proxy could not
        answer, for the message of a run that ended badly (often the reason it did)."""
        failed = self.failed_proxy_calls
        if not failed:
            return ""
        first = failed[0]
        where = f"{first.endpoint} " if first.endpoint else ""
        return f"; a model call failed: {where}(HTTP {first.status}) {first.error}"

    def tool_calls(self) -> list[Step]:
        return [s for s in self.steps if s.type is StepType.tool_call]

    def answered_calls(self) -> list[Step]:
        """The tool calls a tool answered: not those of a name the agent was not offered,
        which evalward answered itself (`NO_SUCH_TOOL`) and nothing ran. A model may name a
        tool a pull request took away (a scripted reply does): that is no call of it."""
        unanswered: set[int] = set()
        waiting: list[Step] = []
        for step in self.steps:
            if step.type is StepType.tool_call:
                waiting.append(step)
            elif step.type is StepType.tool_result:
                call = next((c for c in waiting if _answers(step, c)), None)
                if call is not None:
                    waiting.remove(call)
                    if step.source == NO_SUCH_TOOL:
                        unanswered.add(id(call))
        return [s for s in self.tool_calls() if id(s) not in unanswered]


def _answers(result: Step, call: Step) -> bool:
    """Whether `result` is the result of `call`: by its id where both have one, else the
    first call of that tool still waiting."""
    if result.call_id and call.call_id:
        return result.call_id == call.call_id
    return result.tool == call.tool


def _same_step(step: Step, type: StepType, fields: dict[str, Any]) -> bool:
    """Whether a step reported by one source is one another source already gave: the same
    tool call (by its id, else its arguments), a result of the same tool, the same text."""
    if type in (StepType.assistant, StepType.final):
        return step.content.strip() == str(fields.get("content") or "").strip()
    if type not in (StepType.tool_call, StepType.tool_result) or step.tool != fields.get("tool"):
        return False
    call_id = fields.get("call_id")
    if type is StepType.tool_result or (call_id and call_id == step.call_id):
        return True
    arguments = fields.get("arguments")
    return not arguments or not step.arguments or arguments == step.arguments


def tool_arguments(raw: object) -> dict[str, Any]:
    """Tool arguments as the trace holds them: always an object. They arrive as a JSON string
    on the OpenAI wire; what does not parse to an object is kept under `_unparsed`/`_value`."""
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str) or not raw.strip():
        return {}
    return arguments_from_json(raw)


def arguments_from_json(text: str) -> dict[str, Any]:
    """Arguments given as JSON text, as an object: what is not JSON is kept under `_unparsed`,
    JSON that is not an object under `_value`."""
    try:
        parsed = jsontext.loads(text, max_depth=jsontext.AGENT_DEPTH)
    except ValueError:  # not JSON, or nested past what a record of the run may hold
        return {"_unparsed": text}
    return parsed if isinstance(parsed, dict) else {"_value": parsed}
