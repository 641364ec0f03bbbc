"""Promote a trace to an EvalFixture: seed 003's flywheel from a trace you already have.

Reads evalward's own trace JSON, an OpenAI chat transcript, an Anthropic messages transcript
or OpenTelemetry GenAI spans; writes a fixture with the input pre-filled, one `toolCalled`
assertion per tool the agent used (in the order of first use), the recorded tool results as
`toolReplay` (so the fixture reruns without the real tools), `spec.origin` (traceId,
promotedAt, promotedBy from `git config user.email`) and the label `agent: A`, which is what
an Eval's `fixtureSelector.matchLabels` picks up.

Writing into an existing YAML file goes through ruamel.yaml's round trip, so its comments,
key order and other documents stay as they were; a fixture of the same name is replaced in
place, anything else is appended as a new document.

With `--conversation` a multi-turn transcript becomes a scripted conversation instead: each
user message of the trace a turn, in order, each asserting the tools the agent called while
answering it, so a rerun checks the conversation turn by turn instead of replaying its
history as one input.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from evalward.errors import (
    ConfigError,
    EvalwardError,
    ProtocolError,
    UnsafeFile,
    refused_write,
    why_refused,
)
from evalward.files.rewrite import rewrite
from evalward.files.safe_files import read_text
from evalward.resources import ResourceSet
from evalward.resources.common import AGENTV_DEFAULT_TARGET, API_VERSION
from evalward.resources.conversation import DEFAULT_MAX_TURNS
from evalward.resources.models import EvalFixture
from evalward.resources.reading.problems import did_you_mean, render_path
from evalward.rundata.trace import Step, StepType, Trace
from evalward.runtime.telemetry.converters import from_anthropic_messages, from_openai_messages
from evalward.runtime.telemetry.otel import from_otel_spans, looks_like_spans
from evalward.text import jsontext

_UNSAFE = re.compile(r"[^a-z0-9._-]+")
MAX_TRACE_BYTES = 256 * 1024 * 1024
"""The largest trace file promoted (an agent wrote it: read as `safe_files` reads)."""


@dataclass(frozen=True)
class LoadedTrace:
    trace: Trace
    trace_id: str
    format: str


def load_trace(path: Path, format: str | None = None) -> LoadedTrace:
    """Read a trace file, detecting its format unless `format` names it."""
    try:
        document = jsontext.loads(read_text(path, MAX_TRACE_BYTES))
    except UnsafeFile as exc:
        raise ConfigError(f"{path}: cannot read the trace: it {exc.reason}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the trace ({exc.strerror})") from None
    except ValueError as exc:
        raise ConfigError(f"{path}: not JSON ({exc}); promote reads JSON trace files") from None
    chosen = format or detect(document)
    if chosen is None:
        raise ConfigError(
            f"{path}: not a trace evalward knows; expected evalward's trace JSON "
            "(`steps`), an OpenAI or Anthropic `messages` transcript, or OpenTelemetry "
            "spans (`resourceSpans` or a span list); or pass --format"
        )
    fallback_id = path.stem
    try:
        if chosen == "otel":
            trace, trace_id = from_otel_spans(document)
            return LoadedTrace(trace, trace_id or fallback_id, chosen)
        trace_id = _trace_id(document) or fallback_id
        if chosen == "evalward":
            body = document.get("trace", document) if isinstance(document, dict) else document
            return LoadedTrace(Trace.model_validate(body), trace_id, chosen)
        messages = document.get("messages") if isinstance(document, dict) else document
        if not isinstance(messages, list):
            raise ProtocolError("expected a `messages` list")
        for index, message in enumerate(messages):
            if not isinstance(message, dict):
                raise ProtocolError(
                    f"messages[{index}] is {json.dumps(message)[:40]}, where a message object "
                    "(`role`, `content`) was expected"
                )
        if chosen == "openai":
            return LoadedTrace(from_openai_messages(messages), trace_id, chosen)
        return LoadedTrace(from_anthropic_messages(messages), trace_id, chosen)
    except (ProtocolError, ValidationError, AttributeError, TypeError) as exc:
        first = _first_error(exc) if isinstance(exc, ValidationError) else str(exc)
        raise ConfigError(f"{path}: not a valid {chosen} trace: {first}") from None


def _first_error(exc: ValidationError) -> str:
    """The first of pydantic's errors, at the field it names (`steps[0].index: …`)."""
    error = exc.errors()[0]
    where = render_path(tuple(error["loc"]))
    return f"{where}: {error['msg']}" if where else str(error["msg"])


def detect(document: object) -> str | None:
    if looks_like_spans(document):
        return "otel"
    if isinstance(document, dict) and isinstance(document.get("trace"), dict):
        document = document["trace"]
    if isinstance(document, dict) and isinstance(document.get("steps"), list):
        return "evalward"
    messages = document.get("messages") if isinstance(document, dict) else document
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        return None
    for message in messages:
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result") for b in content
        ):
            return "anthropic"
        if message.get("role") in ("tool", "system", "developer") or message.get("tool_calls"):
            return "openai"
    if isinstance(document, dict) and "system" in document:
        return "anthropic"
    return "openai" if messages else None


def _trace_id(document: object) -> str:
    if not isinstance(document, dict):
        return ""
    for key in ("traceId", "trace_id", "id"):
        value = document.get(key)
        if isinstance(value, str | int) and str(value):
            return str(value)
    return ""


def default_name(trace_id: str) -> str:
    slug = _UNSAFE.sub("-", trace_id.lower()).strip("-._")[:50].strip("-._")
    return f"promoted-{slug or 'trace'}"


@dataclass(frozen=True)
class Promotion:
    """What the fixture made from a trace says beyond the trace: its agent and name, who
    promoted it and when, its kind and severity, the checks to add, and whether the trace's
    tool results are replayed."""

    agent: str
    name: str
    promoted_by: str | None
    now: dt.datetime | None = None
    kind: str = "golden"
    severity: str = "medium"
    contains: tuple[str, ...] = ()
    rubric: str | None = None
    replay: bool = True
    conversation: bool = False
    """Each user message a scripted turn (`scripted_turns`), not one replayed input."""


def check_against(resources: ResourceSet, promotion: Promotion, output: str | None) -> None:
    """The fixture fits the repository it is promoted in (one that defines an Agent): its
    agent is one of the repository's, and no fixture of another file has its name, which
    the next `validate` or run would refuse (one of `output`'s is replaced)."""
    if not resources.agents:
        return  # no evalward repository here: the fixture is for another one
    agent = promotion.agent
    if agent not in resources.agents and agent != AGENTV_DEFAULT_TARGET:
        names = sorted(resources.agents)
        raise ConfigError(
            f"--agent {agent!r}: the repository defines no Agent of that name"
            f"{did_you_mean(agent, names)}, so no Eval would run the fixture; give one of "
            + ", ".join(repr(n) for n in names)
        )
    same = resources.fixtures.get(promotion.name)
    if same is None or (output and _same_file(resources.root / same.file, Path(output))):
        return
    raise ConfigError(
        f"--name {promotion.name!r}: a fixture of that name is already defined at "
        f"{same.file}:{same.line}; give another --name, or `--output {same.file}` to "
        "replace it"
    )


def _same_file(one: Path, other: Path) -> bool:
    try:
        return one.samefile(other)
    except OSError:
        return False


def scripted_turns(trace: Trace, trace_id: str) -> list[dict[str, Any]]:
    """The trace's user messages as scripted turns, each with `toolCalled` per tool the agent
    called on that turn (in the order of first use)."""
    turns: list[list[Step]] = []
    for step in trace.steps:
        if step.type is StepType.input:
            turns.append([step])
        elif turns:
            turns[-1].append(step)
    if len(turns) < 2:
        raise ConfigError(
            f"trace {trace_id}: {len(turns)} user message(s), and a conversation needs two or "
            "more; promote it without --conversation"
        )
    scripted: list[dict[str, Any]] = []
    for steps in turns:
        turn: dict[str, Any] = {"user": steps[0].content}
        tools = dict.fromkeys(s.tool for s in steps if s.type is StepType.tool_call and s.tool)
        if tools:
            turn["assertions"] = [{"type": "toolCalled", "tool": tool} for tool in tools]
        scripted.append(turn)
    return scripted


def build_fixture(loaded: LoadedTrace, promotion: Promotion) -> dict[str, Any]:
    """The fixture as plain data, already checked against the EvalFixture model."""
    agent, name, rubric = promotion.agent, promotion.name, promotion.rubric
    trace = loaded.trace
    tools = list(dict.fromkeys(s.tool for s in trace.tool_calls() if s.tool))
    turns = scripted_turns(trace, loaded.trace_id) if promotion.conversation else []
    assertions: list[dict[str, Any]] = [
        {"type": "toolCalled", "tool": t} for t in tools if not promotion.conversation
    ]
    assertions += [{"type": "contains", "value": value} for value in promotion.contains]
    if rubric:
        assertions.append({"type": "judge", "kind": "rubric", "rubric": rubric, "minScore": 0.8})
    if not assertions and not any("assertions" in turn for turn in turns):
        raise ConfigError(
            f"trace {loaded.trace_id}: the agent called no tool, so there is no toolCalled "
            "assertion to suggest; add one with --contains TEXT or --rubric TEXT"
        )
    moment = (promotion.now or dt.datetime.now(dt.UTC)).replace(microsecond=0)
    origin: dict[str, Any] = {
        "traceId": loaded.trace_id,
        "promotedAt": moment.isoformat().replace("+00:00", "Z"),
    }
    if promotion.promoted_by:
        origin["promotedBy"] = promotion.promoted_by
    spec: dict[str, Any] = {
        "targetAgent": agent,
        "kind": promotion.kind,
        "severity": promotion.severity,
        "description": f"Promoted from {loaded.format} trace {loaded.trace_id}.",
        "origin": origin,
    }
    if turns:
        spec["conversation"] = {"turns": turns}
        if len(turns) > DEFAULT_MAX_TURNS:
            spec["conversation"]["maxTurns"] = len(turns)
    else:
        spec["input"] = _input(trace, loaded.trace_id)
    spec["assertions"] = assertions
    replays = _replays(trace) if promotion.replay else []
    if replays:
        spec["toolReplay"] = replays
    document = {
        "apiVersion": API_VERSION,
        "kind": "EvalFixture",
        "metadata": {"name": name, "labels": {"agent": agent}},
        "spec": spec,
    }
    try:
        EvalFixture.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"the promoted fixture is not valid: {where}: {first['msg']}") from None
    return document


def _input(trace: Trace, trace_id: str) -> dict[str, Any]:
    inputs = [s for s in trace.steps if s.type is StepType.input]
    if not inputs:
        raise ConfigError(f"trace {trace_id}: no user input in the trace to pre-fill the fixture")
    if len(inputs) == 1:
        return {"type": "prompt", "payload": {"prompt": inputs[0].content}}
    last = inputs[-1].index
    messages = [
        {
            "role": "user" if s.type is StepType.input else "assistant",
            "content": s.content,
        }
        for s in trace.steps
        if s.index <= last
        and s.type in (StepType.input, StepType.assistant, StepType.final)
        and s.content
    ]
    return {"type": "messages", "messages": messages}


def _replays(trace: Trace) -> list[dict[str, Any]]:
    calls: dict[str, Step] = {}
    pending: list[Step] = []
    out: list[dict[str, Any]] = []
    for step in trace.steps:
        if step.type is StepType.tool_call:
            pending.append(step)
            if step.call_id:
                calls[step.call_id] = step
        elif step.type is StepType.tool_result:
            call = calls.get(step.call_id or "") or (pending[0] if pending else None)
            if call is None or not call.tool:
                continue
            if call in pending:
                pending.remove(call)
            entry: dict[str, Any] = {"tool": call.tool}
            if call.arguments:
                entry["arguments"] = call.arguments
            entry["output"] = step.output or ""
            if step.is_error:
                entry["isError"] = True
            out.append(entry)
    return out


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 100
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def _commented(document: Mapping[str, Any]) -> CommentedMap:
    """Block style, with each assertion as one flow-style line like seed 003 writes them."""

    def convert(value: Any, flow: bool = False) -> Any:
        if isinstance(value, Mapping):
            mapping = CommentedMap((k, convert(v, flow)) for k, v in value.items())
            if flow:
                mapping.fa.set_flow_style()
            return mapping
        if isinstance(value, list):
            return CommentedSeq(convert(v, flow) for v in value)
        return value

    root: CommentedMap = convert(document)
    spec = root["spec"]
    spec["assertions"] = CommentedSeq(
        convert(a, flow=a.get("type") != "judge") for a in document["spec"]["assertions"]
    )
    for turn in spec.get("conversation", {}).get("turns", []):
        if "assertions" in turn:
            turn["assertions"] = CommentedSeq(convert(a, flow=True) for a in turn["assertions"])
    return root


def render(document: Mapping[str, Any]) -> str:
    stream = io.StringIO()
    _yaml().dump(_commented(document), stream)
    return stream.getvalue()


def write(path: Path, document: Mapping[str, Any]) -> str:
    """Add (or replace by name) the fixture in `path`; returns `added` or `replaced`."""
    yaml = _yaml()
    yaml.explicit_start = True
    name = document["metadata"]["name"]
    new = _commented(document)
    existing: list[Any] = []
    text = ""
    if path.exists():
        try:
            text = path.read_text(encoding="utf-8")
            existing = [d for d in yaml.load_all(text) if d is not None]
        except Exception as exc:  # ruamel raises many error types; all mean "not YAML we can edit"
            raise ConfigError(
                f"{path}: cannot be read as YAML to add the fixture ({exc})"
            ) from None
    strangers = [d for d in existing if not isinstance(d, Mapping) or "kind" not in d]
    if strangers or path.suffix not in (".yaml", ".yml"):
        held = "holds a document that is no resource" if strangers else "is not a YAML file"
        raise ConfigError(
            f"{path}: {held}, and promote adds the fixture to a YAML file of evalward's "
            "resources (a `.yaml` file of fixtures, or a new one); it was left as it is"
        )
    outcome = "added"
    for index, current in enumerate(existing):
        if (
            isinstance(current, Mapping)
            and current.get("kind") == "EvalFixture"
            and isinstance(current.get("metadata"), Mapping)
            and current["metadata"].get("name") == name
        ):
            existing[index] = new
            outcome = "replaced"
            break
    else:
        existing.append(new)
    path.parent.mkdir(parents=True, exist_ok=True)
    stream = io.StringIO()
    if outcome == "added" and text.strip():  # the file's own text as written, then the fixture
        yaml.dump(new, stream)
        _replace(path, text + ("" if text.endswith("\n") else "\n") + stream.getvalue())
        return outcome
    yaml.dump_all(existing, stream)
    written = stream.getvalue()
    if text and not text.lstrip().startswith("---") and written.startswith("---\n"):
        written = written[4:]  # the file had no marker before its first document: keep it so
    _replace(path, written)
    return outcome


def _replace(path: Path, text: str) -> None:
    """Write `text` beside `path` (its mode kept) and rename it over it: a write the disk
    refuses (full, a file size limit) leaves the user's fixtures file as it was, never cut
    short, and says so in one line, exit 3."""
    try:
        rewrite(path, text.encode("utf-8"))
    except OSError as exc:
        if not refused_write(exc):
            raise
        raise EvalwardError(
            f"{path}: the machine refused the write ({why_refused(exc)}), so the file is as "
            "it was. Free space (or raise the file size limit) and run `evalward promote` again"
        ) from None
