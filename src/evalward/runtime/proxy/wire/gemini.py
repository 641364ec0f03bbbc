"""Google's Gemini API (`POST /{v1,v1beta}/models/{model}:generateContent`, and
`:streamGenerateContent?alt=sse`), whole and streamed.

The model is named in the path, not the body: the proxy reads it from there into the body it
meters and caches by (`model`), and sends the body upstream without it. A stream is a run of
`GenerateContentResponse` chunks, one per event, each holding the parts the model wrote since
the last; the last carries the whole call's `usageMetadata`.

A call the Gemini API asks for has no id; a tool's result names its call only by the
function's name. So the k-th call of the reply to a request whose conversation already holds
n model turns is `gemini-{n}-{k}`, and a `functionResponse` in a later request is the result
of the first call of the same name in the model turn before it not yet answered.

Refused before anything leaves: a tool that is no `functionDeclarations` (the provider runs
`googleSearch`, `codeExecution`, `urlContext` and the like itself, and those calls would not
be the run's steps), `cachedContent` (a context the provider keeps, whose tools and
instructions evalward never sees), more than one candidate (the agent could act on one the
trace does not read), and a field evalward reads spelled in snake case (the API takes
`generation_config` as it takes `generationConfig`; one spelling is read, so the other is
refused rather than let through unread).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from evalward.errors import WireError
from evalward.http import sse
from evalward.http.sse import Event
from evalward.providers import gemini
from evalward.providers.base import (
    ChatMessage,
    ChatRequest,
    ChatResponse,
    RunLabels,
    ToolCall,
    ToolSpec,
)
from evalward.rundata.trace import Usage
from evalward.runtime.proxy.wire.base import (
    PASSED_ON,
    Kind,
    SeenResult,
    Turn,
    event_object,
    items,
    lenient_text,
    mapping,
)
from evalward.runtime.proxy.wire.walk import walk
from evalward.text.cuts import cap_chars

SNAKE_CASE = {
    "generation_config": "generationConfig",
    "max_output_tokens": "maxOutputTokens",
    "candidate_count": "candidateCount",
    "cached_content": "cachedContent",
    "system_instruction": "systemInstruction",
    "function_declarations": "functionDeclarations",
    "function_call": "functionCall",
    "function_response": "functionResponse",
    "inline_data": "inlineData",
    "file_data": "fileData",
    "mime_type": "mimeType",
}
"""The fields evalward reads, in the snake case the API also takes, and as it reads them."""
READ_PARTS = ("text", "functionCall", "inlineData", "thought", "thoughtSignature")
"""What a reply's part may hold that the proxy reads, or that calls nothing: any other
(`executableCode`, `codeExecutionResult`, `toolCall`) is a call it does not observe."""


class GenerateContent:
    """`generateContent`, or with `stream` its `streamGenerateContent?alt=sse`."""

    def __init__(self, *, stream: bool) -> None:
        self.stream = stream
        self.kind = Kind.gemini_stream if stream else Kind.gemini

    def streamed(self, body: Mapping[str, Any]) -> bool:
        del body
        return self.stream

    @staticmethod
    def upstream(body: dict[str, Any]) -> dict[str, Any]:
        """The body without the `model` the proxy put in it: the path names it."""
        return {key: value for key, value in body.items() if key != "model"}

    @staticmethod
    def accumulator(body: Mapping[str, Any]) -> _Chunks:
        del body
        return _Chunks()

    @staticmethod
    def replay(body: Mapping[str, Any], reply: Mapping[str, Any]) -> list[bytes]:
        """A whole reply as a stream of one chunk, as the API streams a short one."""
        del body
        return [sse.encode(dict(reply))]

    @staticmethod
    def usage(reply: Mapping[str, Any]) -> Usage:
        return gemini.usage(reply, PASSED_ON)

    @staticmethod
    def unobserved(body: Mapping[str, Any]) -> str | None:
        snake = _snake_case(body)
        if snake is not None:
            return (
                f"evalward's model proxy reads `{SNAKE_CASE[snake]}`, not `{snake}`: write it "
                "as the Gemini API's reference spells it, so the field it reads is the one sent"
            )
        if body.get("cachedContent") is not None:
            return (
                "evalward's model proxy does not serve `cachedContent`: the provider keeps that "
                "context, and evalward cannot see the tools and instructions it holds or bound "
                "what it costs; send the contents themselves"
            )
        for index, tool in enumerate(items(body.get("tools"))):
            other = next(
                (cap_chars(str(key), 60) for key in tool if key != "functionDeclarations"), None
            )
            if other is not None:
                return (
                    f"evalward's model proxy does not serve tools[{index}].{other}: the provider "
                    "calls it itself, and evalward does not read those calls as the run's tool "
                    "calls; offer what it does as a function the agent runs"
                )
        config = mapping(body.get("generationConfig"))
        if "candidateCount" in config and not _one(config["candidateCount"]):
            return (
                "evalward's model proxy serves one candidate, not candidateCount "
                f"{cap_chars(json.dumps(config['candidateCount']), 60)}: the agent could act on a "
                "candidate the run's trace does not read, and each is billed up to "
                "maxOutputTokens; leave candidateCount out (or write it as the number 1)"
            )
        return None

    @staticmethod
    def turn(reply: Mapping[str, Any], request: Mapping[str, Any] | None = None) -> Turn:
        turns = sum(1 for c in items((request or {}).get("contents")) if c.get("role") == "model")
        said = gemini.parse_response(reply, "", PASSED_ON, unnamed=f"gemini-{turns}")
        candidates = items(reply.get("candidates"))
        unread: list[str] = [f"{len(candidates)} candidates"] if len(candidates) > 1 else []
        content = mapping(candidates[0].get("content")) if candidates else {}
        for part in items(content.get("parts")):
            other = next((cap_chars(str(key), 60) for key in part if key not in READ_PARTS), None)
            if other is not None and f"a `{other}` part" not in unread:
                unread.append(f"a `{other}` part")
        return Turn(said.content, said.tool_calls, said.stop_reason, tuple(unread))

    @staticmethod
    def offered(body: Mapping[str, Any]) -> list[str]:
        return [
            str(declared["name"])
            for tool in items(body.get("tools"))
            for declared in items(tool.get("functionDeclarations"))
            if declared.get("name")
        ]

    @staticmethod
    def results(body: Mapping[str, Any]) -> list[SeenResult]:
        seen: list[SeenResult] = []
        calls: list[tuple[str, str]] = []
        turn = -1
        for content in items(body.get("contents")):
            parts = items(content.get("parts"))
            if content.get("role") == "model":
                turn += 1
                asked = [mapping(p.get("functionCall")) for p in parts if p.get("functionCall")]
                calls = [
                    (str(call.get("name") or ""), str(call.get("id") or f"gemini-{turn}-{k}"))
                    for k, call in enumerate(asked)
                ]
                continue
            for part in parts:
                answer = mapping(part.get("functionResponse"))
                if not answer:
                    continue
                call_id = str(answer.get("id") or "")
                name = str(answer.get("name") or "")
                if not call_id:
                    found = next((c for c in calls if c[0] == name), None)
                    if found is None:
                        continue
                    calls.remove(found)
                    call_id = found[1]
                response = answer.get("response")
                output = (
                    json.dumps(response) if isinstance(response, dict) else lenient_text(response)
                )
                is_error = isinstance(response, dict) and "error" in response
                seen.append(SeenResult(call_id, output, is_error))
        return seen

    @staticmethod
    def chat_request(body: Mapping[str, Any], labels: RunLabels) -> ChatRequest:
        config = mapping(body.get("generationConfig"))
        temperature = config.get("temperature")
        limit = config.get("maxOutputTokens")
        return ChatRequest(
            model=str(body.get("model", "")),
            messages=tuple(_messages(body)),
            tools=tuple(_tools(body)),
            temperature=float(temperature) if isinstance(temperature, int | float) else None,
            max_tokens=limit if isinstance(limit, int) and not isinstance(limit, bool) else None,
            labels=labels,
        )

    @staticmethod
    def reply(response: ChatResponse, body: Mapping[str, Any], number: int) -> dict[str, Any]:
        parts = gemini.said_parts(response.content, response.tool_calls)
        return {
            "candidates": [
                {
                    "content": {"role": "model", "parts": parts},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": response.usage.input_tokens,
                "candidatesTokenCount": response.usage.output_tokens,
                "totalTokenCount": response.usage.total_tokens,
            },
            "modelVersion": str(body.get("model", "")),
            "responseId": f"evalward-{number}",
        }


def worst_output(body: Mapping[str, Any]) -> int | None:
    """`generationConfig.maxOutputTokens`, which bounds the thinking too (a small limit
    leaves a thinking model no room to answer); None when the request states none."""
    limit = mapping(body.get("generationConfig")).get("maxOutputTokens")
    return limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else None


def unbounded_part(body: Mapping[str, Any]) -> str | None:
    """A part the provider reads that its bytes do not bound: a file by URI (`fileData`), or
    any inline data. Audio and video are read by the second, a PDF by the page, and an image
    by its 768-pixel tiles (258 tokens each, Google's token guide says, with no bound on
    their number), so a few kilobytes of a large plain picture cost more than any count of
    its bytes."""
    for _, value in walk(body):  # either spelling, however deep: a result's parts hold data too
        if not isinstance(value, dict):
            continue
        if value.get("fileData", value.get("file_data")) is not None:
            return "a `fileData` part, a file the provider reads by its URI"
        data = value.get("inlineData", value.get("inline_data"))
        if data is not None:
            kind = cap_chars(str(mapping(data).get("mimeType", mapping(data).get("mime_type"))), 60)
            return f"an `inlineData` part of type {kind!r}, read by its pixels, pages or seconds"
    return None


def _one(count: object) -> bool:
    """Whether `candidateCount` asks for one candidate: the API reads a number as a JSON
    string or a whole float too (`"4"`, `4.0`), so only the integer 1 (or null) is one."""
    return count is None or (type(count) is int and count <= 1)


def _snake_case(body: Mapping[str, Any]) -> str | None:
    """The first field of `SNAKE_CASE` where the request's structure has it: the body, its
    `generationConfig`, a tool, a part of `contents` or `systemInstruction` (or of a
    function's result) and the file or data in it. A tool's schema, a call's arguments and a
    result's `response` are the agent's own data, whose keys are not fields."""
    config = mapping(body.get("generationConfig"))
    contents = [*items(body.get("contents")), mapping(body.get("systemInstruction"))]
    parts = [part for content in contents for part in items(content.get("parts"))]
    parts += [  # a function's result may hold parts of its own (an image it made)
        inner
        for part in parts
        for inner in items(mapping(part.get("functionResponse")).get("parts"))
    ]
    media = [mapping(part.get(key)) for part in parts for key in ("inlineData", "fileData")]
    places = [body, config, *items(body.get("tools")), *parts, *media]
    return next((str(key) for place in places for key in place if key in SNAKE_CASE), None)


class _Chunks:
    """Stream chunks added up into one `GenerateContentResponse`: the first candidate's parts
    in order (a text part's text joined to the one before it of its kind), the last chunk's
    `finishReason`, `usageMetadata` and ids."""

    def __init__(self) -> None:
        self.error: str | None = None
        self._reply: dict[str, Any] | None = None
        self._parts: list[dict[str, Any]] = []
        self._candidate: dict[str, Any] = {}
        self._more = 0

    def feed(self, event: Event) -> bool:
        if (data := event_object(event)) is None:
            return True
        if "error" in data:
            self.error = lenient_text(mapping(data.get("error")).get("message") or data)
            return True
        self._reply = {
            **(self._reply or {}),
            **{k: v for k, v in data.items() if k != "candidates"},
        }
        candidates = items(data.get("candidates"))
        self._more = max(self._more, len(candidates))
        if candidates:
            first = candidates[0]
            self._candidate |= {k: v for k, v in first.items() if k != "content"}
            for part in items(mapping(first.get("content")).get("parts")):
                self._add(dict(part))
        return True

    def _add(self, part: dict[str, Any]) -> None:
        last = self._parts[-1] if self._parts else None
        plain = set(part) <= {"text", "thought"} and isinstance(part.get("text"), str)
        same = last is not None and set(last) <= {"text", "thought"}
        if plain and same and last is not None and last.get("thought") == part.get("thought"):
            last["text"] = str(last.get("text") or "") + part["text"]
            return
        self._parts.append(part)

    def result(self) -> dict[str, Any] | None:
        if self._reply is None:
            return None
        candidate = {**self._candidate, "content": {"role": "model", "parts": self._parts}}
        extra = [{"index": n} for n in range(1, self._more)]
        return {**self._reply, "candidates": [candidate, *extra]}


def _messages(body: Mapping[str, Any]) -> list[ChatMessage]:
    """The conversation as a provider sends it, for a mock script's rules."""
    out: list[ChatMessage] = []
    system = mapping(body.get("systemInstruction"))
    text = "".join(str(p.get("text") or "") for p in items(system.get("parts")))
    if text:
        out.append(ChatMessage(role="system", content=text))
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        raise WireError("`contents` must be a non-empty list")
    calls: list[tuple[str, str]] = []
    turn = -1  # the model turns so far: a call is numbered as `GenerateContent.turn` does
    for content in items(contents):
        parts = items(content.get("parts"))
        said = "".join(str(p.get("text") or "") for p in parts if p.get("thought") is not True)
        if content.get("role") == "model":
            turn += 1
            asked = [mapping(p.get("functionCall")) for p in parts if p.get("functionCall")]
            made = tuple(
                ToolCall(
                    str(c.get("id") or f"gemini-{turn}-{k}"),
                    str(c.get("name") or ""),
                    dict(mapping(c.get("args"))),
                )
                for k, c in enumerate(asked)
            )
            calls = [(c.name, c.id) for c in made]
            out.append(ChatMessage("assistant", said, tool_calls=made))
            continue
        for part in parts:
            answer = mapping(part.get("functionResponse"))
            if answer:
                name = str(answer.get("name") or "")
                found = next((c for c in calls if c[0] == name), (name, ""))
                if found in calls:
                    calls.remove(found)
                output = json.dumps(answer.get("response"), default=str)
                out.append(
                    ChatMessage("tool", output, tool_call_id=str(answer.get("id") or found[1]))
                )
        if said:
            out.append(ChatMessage("user", said))
    return out


def _tools(body: Mapping[str, Any]) -> list[ToolSpec]:
    tools = []
    for tool in items(body.get("tools")):
        for declared in items(tool.get("functionDeclarations")):
            if not declared.get("name"):
                raise WireError("each of `functionDeclarations` must be an object with a `name`")
            schema = declared.get("parametersJsonSchema") or declared.get("parameters")
            tools.append(
                ToolSpec(
                    name=str(declared["name"]),
                    description=str(declared.get("description") or ""),
                    parameters=dict(mapping(schema)),
                )
            )
    return tools
