"""A scripted model server speaking two wire formats: OpenAI Chat Completions
(`POST /v1/chat/completions`) and Anthropic Messages (`POST /v1/messages`, `tool_use` /
`tool_result` blocks, `stop_reason`).

Each test chooses the script: rules matched against the request, each with replies used in
turn order (the number of assistant messages already in the conversation), or, for a
`sequence` rule, in the order requests arrive (to script 429 → 500 → success for retries).
A reply can be an error status with headers (Retry-After), a slow reply (`delay`) or raw
bytes (malformed JSON) or any JSON body (`shaped`). Every request is recorded with its path
and headers, so tests can assert on exactly what evalward sent, and checked against the
official SDKs' request types (`fakes.wire_contract`), as is every reply rendered here.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fakes.http import LoopbackServer, Request, Response
from fakes.wire_contract import (
    anthropic_reply_problem,
    anthropic_request_problem,
    openai_reply_problem,
    openai_request_problem,
)


@dataclass
class Reply:
    content: str | None = None
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    delay: float = 0.0
    cut: bool = False
    """Reset the connection in the middle of the body."""
    prompt_tokens: int = 10
    completion_tokens: int = 5
    finish_reason: str | None = None
    """Overrides the stop reason (`length`, `max_tokens`: a reply cut at its token limit)."""
    body: Any = None
    """A whole JSON body sent as is with status 200, for odd or malformed shapes."""


def text(content: str, **kwargs: Any) -> Reply:
    return Reply(content=content, **kwargs)


def tool_call(name: str, arguments: dict[str, Any] | None = None, **kwargs: Any) -> Reply:
    return Reply(tool_calls=[(name, arguments or {})], **kwargs)


def error(status: int, **kwargs: Any) -> Reply:
    return Reply(status=status, **kwargs)


def shaped(body: Any, **kwargs: Any) -> Reply:
    """HTTP 200 with exactly this JSON body."""
    return Reply(body=body, **kwargs)


Matcher = Callable[[dict[str, Any]], bool]


@dataclass
class Rule:
    matcher: Matcher
    replies: list[Reply]
    sequence: bool = False
    served: int = 0


@dataclass
class Call:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def mentions(needle: str) -> Matcher:
    """Match requests whose messages (or Anthropic `system`) contain `needle` anywhere."""
    return lambda body: (
        needle in json.dumps([body.get("system", ""), body.get("messages", [])], ensure_ascii=False)
    )


class ScriptedModelServer:
    def __init__(self) -> None:
        self.rules: list[Rule] = []
        self.requests: list[dict[str, Any]] = []
        self.calls: list[Call] = []
        self.default = text("I have no script for this request.")
        self.contract_violations: list[str] = []
        """Requests, and replies rendered here, that the official SDKs' types refuse."""
        self.check_contract = True
        self.refuses: dict[str, set[str]] = {}
        """Per model, the parameters it refuses as OpenAI's reasoning models do: `max_tokens`
        (it wants `max_completion_tokens`) and `temperature` other than 1."""
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
        anthropic = request.path.endswith("/v1/messages")
        if request.method != "POST" or not (
            anthropic or request.path.endswith("/chat/completions")
        ):
            return Response(404, {"error": {"message": f"no route {request.path}"}})
        body = request.json()
        turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        reply = self.default
        with self._lock:
            self.requests.append(body)
            self.calls.append(Call(request.path, request.headers, body))
            for rule in self.rules:
                if rule.matcher(body):
                    index = rule.served if rule.sequence else turn
                    rule.served += 1
                    reply = rule.replies[min(index, len(rule.replies) - 1)]
                    break
        refused = None if anthropic else self._refusal(body)
        if refused is not None:
            response = refused
        elif anthropic:
            response = self._render_anthropic(reply, body)
        else:
            response = self._render(reply, body)
        if self.check_contract:
            self._check(anthropic, request.headers, body, reply, response)
        return response

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

    def _check(
        self,
        anthropic: bool,
        headers: dict[str, str],
        body: Any,
        reply: Reply,
        response: Response,
    ) -> None:
        api = "anthropic" if anthropic else "openai"
        if anthropic:
            version = headers.get("anthropic-version", "")
            problem = anthropic_request_problem(body, version)
        else:
            problem = openai_request_problem(body)
        if problem:
            self.contract_violations.append(f"{api} request: {problem}")
        if reply.body is None and reply.raw is None and response.status == 200:
            check_reply = anthropic_reply_problem if anthropic else openai_reply_problem
            problem = check_reply(response.body)
            if problem:
                self.contract_violations.append(f"{api} reply rendered by the fake: {problem}")

    def _render_anthropic(self, reply: Reply, body: dict[str, Any]) -> Response:
        if reply.body is not None:
            return Response(200, reply.body, reply.headers, delay=reply.delay)
        if reply.raw is not None or reply.status != 200:
            return Response(
                reply.status,
                None
                if reply.raw is not None
                else {"type": "error", "error": {"type": "api_error", "message": "scripted error"}},
                reply.headers,
                raw=reply.raw,
                delay=reply.delay,
            )
        content: list[dict[str, Any]] = []
        if reply.content:
            content.append({"type": "text", "text": reply.content})
        for index, (name, arguments) in enumerate(reply.tool_calls):
            content.append(
                {"type": "tool_use", "id": f"toolu_{index}", "name": name, "input": arguments}
            )
        return Response(
            200,
            {
                "id": "msg_test",
                "type": "message",
                "role": "assistant",
                "model": body.get("model", ""),
                "content": content,
                "stop_reason": reply.finish_reason
                or ("tool_use" if reply.tool_calls else "end_turn"),
                "stop_sequence": None,
                "usage": {
                    "input_tokens": reply.prompt_tokens,
                    "output_tokens": reply.completion_tokens,
                },
            },
            reply.headers,
            delay=reply.delay,
            cut=reply.cut,
        )

    def _render(self, reply: Reply, body: dict[str, Any]) -> Response:
        if reply.body is not None:
            return Response(200, reply.body, reply.headers, delay=reply.delay)
        if reply.raw is not None or reply.status != 200:
            return Response(
                reply.status,
                None if reply.raw is not None else {"error": {"message": "scripted error"}},
                reply.headers,
                raw=reply.raw,
                delay=reply.delay,
            )
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{index}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
                for index, (name, arguments) in enumerate(reply.tool_calls)
            ]
        return Response(
            200,
            {
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "created": 1_764_000_000,
                "model": body.get("model", ""),
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": reply.finish_reason
                        or ("tool_calls" if reply.tool_calls else "stop"),
                    }
                ],
                "usage": {
                    "prompt_tokens": reply.prompt_tokens,
                    "completion_tokens": reply.completion_tokens,
                    "total_tokens": reply.prompt_tokens + reply.completion_tokens,
                },
            },
            reply.headers,
            delay=reply.delay,
            cut=reply.cut,
        )
