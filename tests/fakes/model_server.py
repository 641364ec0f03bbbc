"""A scripted model server speaking the wire formats agents use: OpenAI Chat Completions
(`POST /v1/chat/completions`) and Responses (`POST /v1/responses`), Anthropic Messages
(`POST /v1/messages`) — each streamed (Server-Sent Events) when the request says
`stream: true` — plus OpenAI embeddings (`POST /v1/embeddings`) and the model list
(`GET /v1/models`, in Anthropic's shape when the request carries `anthropic-version`), and
Google's Gemini API (`POST /v1beta/models/{model}:generateContent`, and
`:streamGenerateContent?alt=sse` streamed; `/v1` too), held to Google's REST reference.

Each test chooses the script (`fakes.model_script`): rules matched against the request, each
with replies used in turn order, or, for a `sequence` rule, in the order requests arrive (to
script 429 → 500 → success for retries). A reply can be an error status with headers
(Retry-After), a slow reply (`delay`), a slow or held stream (`event_delay`, `hold`), a
connection cut mid-body or mid-stream (`cut`), an error event mid-stream (`stream_error`),
raw bytes (malformed JSON) or any JSON body (`shaped`). A request that asks for a stream and
is scripted an error gets it as a plain JSON reply, as the real APIs answer. Every request is
recorded with its path and headers, so tests can assert on exactly what they were sent, and
checked against the official SDKs' request types (`fakes.wire_contract`), as is every reply
and every stream event rendered here.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fakes import wire_contract as contract
from fakes import wire_render as render
from fakes.http import EventStream, LoopbackServer, Request, Response, sse
from fakes.model_script import (
    Matcher,
    Reply,
    Rule,
    chat_turns,
    error,
    input_items,
    mentions,
    responses_turns,
    shaped,
    text,
    tool_call,
)

__all__ = [
    "Call",
    "Matcher",
    "Reply",
    "Rule",
    "ScriptedModelServer",
    "error",
    "mentions",
    "shaped",
    "text",
    "tool_call",
]

ROUTES = {
    "/v1/messages": "messages",
    "/chat/completions": "chat",
    "/responses": "responses",
    "/embeddings": "embeddings",
}
Renderer = Callable[[Reply, dict[str, Any], int], Any]
GEMINI = re.compile(r"/v1(?:beta)?/models/([^/]+):(generateContent|streamGenerateContent)")
BODIES: dict[str, Renderer] = {
    "chat": render.chat_completion,
    "responses": render.response_body,
    "messages": render.message_body,
    "gemini": render.gemini_body,
}
STREAMS: dict[str, Renderer] = {
    "chat": render.chat_chunks,
    "responses": render.response_events,
    "messages": render.message_events,
    "gemini_stream": render.gemini_chunks,
}
REQUEST_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "chat": contract.openai_request_problem,
    "responses": contract.responses_request_problem,
    "embeddings": contract.embeddings_request_problem,
    "gemini": contract.gemini_request_problem,
    "gemini_stream": contract.gemini_request_problem,
}
REPLY_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "gemini": contract.gemini_reply_problem,
    "chat": contract.openai_reply_problem,
    "responses": contract.response_problem,
    "messages": contract.anthropic_reply_problem,
    "embeddings": contract.embeddings_reply_problem,
}
API_NAMES = {
    "chat": "openai",
    "responses": "openai responses",
    "embeddings": "openai embeddings",
    "messages": "anthropic",
    "gemini": "gemini",
    "gemini_stream": "gemini",
}


@dataclass
class Call:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    events: list[render.Event] = field(default_factory=list)
    """A streamed reply's events as rendered: `(event name or None, data)`."""
    stream: EventStream | None = None
    """A streamed reply's progress: `sent` (when each event left), `finished`, `completed`."""


def _route(request: Request) -> str | None:
    if request.method == "GET":
        return "models" if request.path.endswith("/models") else None
    if request.method != "POST":
        return None
    gemini = GEMINI.fullmatch(request.path)
    if gemini is not None:
        return "gemini_stream" if gemini.group(2) == "streamGenerateContent" else "gemini"
    return next((api for tail, api in ROUTES.items() if request.path.endswith(tail)), None)


class ScriptedModelServer:
    def __init__(self) -> None:
        self.rules: list[Rule] = []
        self.requests: list[dict[str, Any]] = []
        """Every request's body (`{}` for `GET /v1/models`), in arrival order."""
        self.calls: list[Call] = []
        self.default = text("I have no script for this request.")
        self.models = ["gpt-4.1-mini", "text-embedding-3-small", "claude-haiku-4-5"]
        """What `GET /v1/models` lists."""
        self.targets: list[str] = []
        """Every request's method and target as it arrived (`GET /v1/models?limit=20`),
        routed or not, in arrival order."""
        self.contract_violations: list[str] = []
        """Requests, and replies rendered here, that the official SDKs' types refuse."""
        self.check_contract = True
        self.refuses: dict[str, set[str]] = {}
        """Per model, the parameters it refuses as OpenAI's reasoning models do: `max_tokens`
        (it wants `max_completion_tokens`) and `temperature` other than 1."""
        self._histories: dict[str, list[Any]] = {}
        """Per response served, its whole conversation: input, then output."""
        self._lock = threading.Lock()
        self.server = LoopbackServer(self._handle)

    @property
    def base_url(self) -> str:
        return f"{self.server.url}/v1"

    def close(self) -> None:
        self.server.close()

    @property
    def anthropic_url(self) -> str:
        return self.server.url

    def script(self, matcher: Matcher | str, *replies: Reply) -> None:
        match = mentions(matcher) if isinstance(matcher, str) else matcher
        self.rules.append(Rule(match, list(replies)))

    def script_sequence(self, matcher: Matcher | str, *replies: Reply) -> None:
        """Replies in arrival order of matching requests; the last one repeats."""
        match = mentions(matcher) if isinstance(matcher, str) else matcher
        self.rules.append(Rule(match, list(replies), sequence=True))

    def requests_mentioning(self, needle: str) -> list[dict[str, Any]]:
        return [r for r in self.requests if mentions(needle)(r)]

    def _handle(self, request: Request) -> Response:
        with self._lock:
            self.targets.append(f"{request.method} {request.target}")
        api = _route(request)
        if api is None:
            return Response(404, {"error": {"message": f"no route {request.path}"}})
        if api == "models":
            return self._models(request)
        body = request.json()
        fields = body if isinstance(body, dict) else {}
        gemini = GEMINI.fullmatch(request.path)
        if gemini is not None:  # the model is the path's: rules and replies read it there
            fields = {**fields, "model": gemini.group(1)}
        reply = self.default
        with self._lock:
            serial = len(self.calls)
            conversation = self._conversation(fields) if api == "responses" else fields
            turn = (
                responses_turns(conversation.get("input"))
                if api == "responses"
                else chat_turns(fields)
            )
            call = Call(request.path, request.headers, body)
            self.requests.append(body)
            self.calls.append(call)
            for rule in self.rules:
                if rule.matcher(conversation):
                    index = rule.served if rule.sequence else turn
                    rule.served += 1
                    reply = rule.replies[min(index, len(rule.replies) - 1)]
                    break
        refused = self._refusal(fields) if api in ("chat", "responses") else None
        streaming = api == "gemini_stream" or (api != "embeddings" and fields.get("stream") is True)
        response = refused or self._render(api, reply, fields, serial, streaming, call)
        rendered = reply.body is None and reply.raw is None and response.status == 200
        if api == "responses" and rendered:
            output = render.response_body(reply, fields, serial)["output"]
            with self._lock:
                history = [*input_items(conversation.get("input")), *output]
                self._histories[f"resp_{serial}"] = history
        if self.check_contract:
            self._check_request(api, request.headers, body)
            if rendered:
                self._check_reply(api, response, call.events)
        return response

    def _conversation(self, body: dict[str, Any]) -> dict[str, Any]:
        """A Responses request as the real API sees it: after `previous_response_id` (a
        response served here), its `input` is that response's conversation followed by the
        new items. Scripts match, and turns are counted, on this."""
        history = self._histories.get(str(body.get("previous_response_id")))
        if history is None:
            return body
        return {**body, "input": [*history, *input_items(body.get("input"))]}

    def _refusal(self, body: dict[str, Any]) -> Response | None:
        """OpenAI's HTTP 400 for a parameter the model does not take, word for word."""
        refuses = self.refuses.get(str(body.get("model")), set())
        if "max_tokens" in refuses and "max_tokens" in body:
            message = (
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead."
            )
            param, code = "max_tokens", "unsupported_parameter"
        elif "temperature" in refuses and body.get("temperature", 1) != 1:
            message = (
                f"Unsupported value: 'temperature' does not support {body['temperature']} with "
                "this model. Only the default (1) value is supported."
            )
            param, code = "temperature", "unsupported_value"
        else:
            return None
        error = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
        return Response(400, {"error": error})

    def _render(
        self,
        api: str,
        reply: Reply,
        body: dict[str, Any],
        serial: int,
        streaming: bool,
        call: Call,
    ) -> Response:
        if reply.body is not None:
            return Response(200, reply.body, reply.headers, delay=reply.delay)
        if reply.raw is not None or reply.status != 200:
            failure = render.anthropic_error() if api == "messages" else render.openai_error()
            if api.startswith("gemini"):
                failure = render.gemini_error(reply.status)
            return Response(
                reply.status,
                None if reply.raw is not None else failure,
                reply.headers,
                raw=reply.raw,
                delay=reply.delay,
            )
        if not streaming:
            reply_body = (
                render.embeddings_body(body)
                if api == "embeddings"
                else BODIES[api](reply, body, serial)
            )
            return Response(200, reply_body, reply.headers, delay=reply.delay, cut=reply.cut)
        events: list[render.Event] = STREAMS[api](reply, body, serial)
        stop = len(events) // 2 if reply.break_after is None else reply.break_after
        if reply.stream_error is not None:
            events = [*events[:stop], render.stream_error(api, reply.stream_error, stop)]
        call.events = events
        call.stream = EventStream(
            [sse(data, name) for name, data in events],
            delay=reply.event_delay,
            cut_after=stop if reply.cut else None,
            hold_after=reply.hold_after if reply.hold is not None else None,
            hold=reply.hold,
        )
        return Response(200, headers=reply.headers, delay=reply.delay, stream=call.stream)

    def _models(self, request: Request) -> Response:
        anthropic = "anthropic-version" in request.headers
        if anthropic:
            body = render.anthropic_models(self.models, request.query)
            problem = contract.anthropic_models_problem(body)
        else:
            body = render.openai_models(self.models)
            problem = contract.openai_models_problem(body)
        with self._lock:
            self.requests.append({})
            self.calls.append(Call(request.path, request.headers, {}))
            if problem and self.check_contract:
                api = "anthropic" if anthropic else "openai"
                self.contract_violations.append(f"{api} model list rendered by the fake: {problem}")
        return Response(200, body)

    def _check_request(self, api: str, headers: dict[str, str], body: Any) -> None:
        if api == "messages":
            version = headers.get("anthropic-version", "")
            problem = contract.anthropic_request_problem(body, version)
        else:
            problem = REQUEST_CHECKS[api](body)
        if problem:
            self.contract_violations.append(f"{API_NAMES.get(api, api)} request: {problem}")

    def _check_reply(self, api: str, response: Response, events: list[render.Event]) -> None:
        name = API_NAMES.get(api, api)
        problems: list[str] = []
        if not events:
            problem = REPLY_CHECKS[api](response.body)
            problems += [f"{name} reply rendered by the fake: {problem}"] if problem else []
        for index, (event, data) in enumerate(events):
            if api == "messages":
                problem = contract.anthropic_event_problem(event, data)
            elif api == "responses":
                problem = contract.response_event_problem(data)
                if problem is None and event != data.get("type"):
                    problem = f"event {event!r} carries data of type {data.get('type')!r}"
            elif api == "gemini_stream":
                problem = contract.gemini_reply_problem(data)
            else:
                problem = None if data == "[DONE]" else contract.chat_chunk_problem(data)
            if problem:
                problems.append(f"{name} stream event {index} rendered by the fake: {problem}")
        self.contract_violations += problems
