"""Errors the model proxy answers itself, in each provider's own error shape, so an SDK
raises its usual exception with evalward's message in it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from evalward.http import sse
from evalward.runtime.proxy.wire.base import Api, Kind


@dataclass(frozen=True)
class ProblemKind:
    status: int
    openai_type: str
    openai_code: str | None
    anthropic_type: str
    google_status: str
    """The `status` of Google's error shape (`google.rpc.Code`'s name)."""


class WireProblem(Enum):
    """Errors the proxy answers itself, with each provider's status and error type."""

    bad_request = ProblemKind(
        400, "invalid_request_error", None, "invalid_request_error", "INVALID_ARGUMENT"
    )
    unauthorized = ProblemKind(
        401, "invalid_request_error", "invalid_api_key", "authentication_error", "UNAUTHENTICATED"
    )
    not_found = ProblemKind(
        404, "invalid_request_error", "unknown_url", "not_found_error", "NOT_FOUND"
    )
    too_large = ProblemKind(
        413, "invalid_request_error", None, "request_too_large", "INVALID_ARGUMENT"
    )
    budget = ProblemKind(
        429, "insufficient_quota", "insufficient_quota", "rate_limit_error", "RESOURCE_EXHAUSTED"
    )
    upstream = ProblemKind(502, "server_error", None, "api_error", "UNAVAILABLE")


def error_body(api: Api, problem: WireProblem, message: str) -> dict[str, Any]:
    kind = problem.value
    if api == "anthropic":
        return {"type": "error", "error": {"type": kind.anthropic_type, "message": message}}
    if api == "gemini":
        return {"error": {"code": kind.status, "message": message, "status": kind.google_status}}
    return {
        "error": {
            "message": message,
            "type": kind.openai_type,
            "param": None,
            "code": kind.openai_code,
        }
    }


def error_event(kind: Kind, message: str, sequence_number: int = 0) -> bytes:
    """An error in the middle of a stream, as that API's stream says it: the agent's SDK
    raises it instead of waiting for an end that will not come. A Responses stream numbers
    every event; the error takes the next number (`sequence_number`: the events passed on)."""
    if kind is Kind.messages:
        return sse.encode(error_body("anthropic", WireProblem.upstream, message), "error")
    if kind in (Kind.gemini, Kind.gemini_stream):
        return sse.encode(error_body("gemini", WireProblem.upstream, message))
    if kind is Kind.responses:
        data = {
            "type": "error",
            "code": "server_error",
            "message": message,
            "param": None,
            "sequence_number": sequence_number,
        }
        return sse.encode(data, "error")
    return sse.encode(error_body("openai", WireProblem.upstream, message))
