"""A scripted `Reply` rendered in each wire format the fake model server speaks.

Bodies are JSON objects; a stream is a list of `(event name or None, data)` pairs, in the
order and with the fields the real APIs send them (the official SDKs' types are the judge:
`fakes.wire_contract`). Streams split text and tool arguments into several deltas, so a
client that keeps only the last delta, or a proxy that buffers, shows up in a test.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from typing import Any

from fakes.model_script import Reply

CREATED = 1_764_000_000
Event = tuple[str | None, Any]
NORMAL_STOPS = {None, "stop", "end_turn", "tool_calls", "tool_use", "completed"}


def split(text: str, pieces: int) -> list[str]:
    """`text` in up to `pieces` consecutive non-empty parts (none for an empty text)."""
    size = -(-len(text) // max(1, pieces))
    return [text[start : start + size] for start in range(0, len(text), size)] if text else []


def arguments_json(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments)


# --- OpenAI Chat Completions -----------------------------------------------------------------


def chat_finish_reason(reply: Reply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


def chat_usage(reply: Reply) -> dict[str, int]:
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }


def chat_completion(reply: Reply, body: dict[str, Any], serial: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{index}",
                "type": "function",
                "function": {"name": name, "arguments": arguments_json(arguments)},
            }
            for index, (name, arguments) in enumerate(reply.tool_calls)
        ]
    return {
        "id": f"chatcmpl-{serial}",
        "object": "chat.completion",
        "created": CREATED,
        "model": body.get("model", ""),
        "choices": [{"index": 0, "message": message, "finish_reason": chat_finish_reason(reply)}],
        "usage": chat_usage(reply),
    }


def chat_chunks(reply: Reply, body: dict[str, Any], serial: int) -> list[Event]:
    """`chat.completion.chunk` events: the role, the text in pieces, each tool call (id and
    name first, then its arguments in fragments), the finish reason, the usage chunk when
    `stream_options.include_usage` asks for it, then `[DONE]`."""
    options = body.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    base: dict[str, Any] = {
        "id": f"chatcmpl-{serial}",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": body.get("model", ""),
    }
    if include_usage:
        base["usage"] = None

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> Event:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return None, {**base, "choices": [choice]}

    events = [chunk({"role": "assistant", "content": "" if reply.content else None})]
    events += [chunk({"content": piece}) for piece in split(reply.content or "", reply.pieces)]
    for index, (name, arguments) in enumerate(reply.tool_calls):
        opening = {"index": index, "id": f"call_{index}", "type": "function"}
        function = {"name": name, "arguments": ""}
        events.append(chunk({"tool_calls": [{**opening, "function": function}]}))
        for fragment in split(arguments_json(arguments), reply.pieces):
            call = {"index": index, "function": {"arguments": fragment}}
            events.append(chunk({"tool_calls": [call]}))
    events.append(chunk({}, chat_finish_reason(reply)))
    if include_usage:
        events.append((None, {**base, "choices": [], "usage": chat_usage(reply)}))
    events.append((None, "[DONE]"))
    return events


def openai_error() -> dict[str, Any]:
    return {"error": {"message": "scripted error"}}


# --- OpenAI Responses ------------------------------------------------------------------------


def _response_tools(body: dict[str, Any]) -> list[Any]:
    """The request's tools as the Response object echoes them (function tools with every
    field the API fills in)."""
    tools = body.get("tools")
    if not isinstance(tools, list):
        return []
    echoed: list[Any] = []
    for tool in tools:
        if isinstance(tool, dict) and tool.get("type") == "function":
            tool = {
                "type": "function",
                "name": tool.get("name"),
                "description": tool.get("description"),
                "parameters": tool.get("parameters"),
                "strict": tool.get("strict", True),
            }
        echoed.append(tool)
    return echoed


def _response(
    body: dict[str, Any],
    response_id: str,
    status: str,
    output: list[dict[str, Any]],
    usage: dict[str, Any] | None,
    incomplete: bool = False,
) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": body.get("model", ""),
        "output": output,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "temperature": body.get("temperature", 1.0),
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": _response_tools(body),
        "top_p": body.get("top_p", 1.0),
        "truncation": body.get("truncation", "disabled"),
        "text": {"format": {"type": "text"}},
        "metadata": body.get("metadata", {}),
        "usage": usage,
    }


def _responses_usage(reply: Reply) -> dict[str, Any]:
    return {
        "input_tokens": reply.prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": reply.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _output_items(reply: Reply, serial: int, done: bool) -> list[dict[str, Any]]:
    """The reply's output items: its message, then its function calls; `done` gives them
    whole (status `completed`), otherwise as first announced (empty, `in_progress`)."""
    status = "completed" if done else "in_progress"
    items: list[dict[str, Any]] = []
    if reply.content is not None:
        content = [_text_part(reply.content)] if done else []
        items.append(
            {
                "type": "message",
                "id": f"msg_{serial}",
                "status": status,
                "role": "assistant",
                "content": content,
            }
        )
    for index, (name, arguments) in enumerate(reply.tool_calls):
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{serial}_{index}",
                "call_id": f"call_{serial}_{index}",
                "name": name,
                "arguments": arguments_json(arguments) if done else "",
                "status": status,
            }
        )
    return items


def response_body(reply: Reply, body: dict[str, Any], serial: int) -> dict[str, Any]:
    incomplete = reply.finish_reason not in NORMAL_STOPS
    output = _output_items(reply, serial, done=True)
    status = "incomplete" if incomplete else "completed"
    usage = _responses_usage(reply)
    return _response(body, f"resp_{serial}", status, output, usage, incomplete)


def response_events(reply: Reply, body: dict[str, Any], serial: int) -> list[Event]:
    """`response.*` events, each with its `sequence_number`, ending with the whole response
    in `response.completed` (or `response.incomplete`)."""
    events: list[Event] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append((kind, {"type": kind, "sequence_number": len(events), **fields}))

    started = _response(body, f"resp_{serial}", "in_progress", [], None)
    emit("response.created", response=started)
    emit("response.in_progress", response=started)
    announced = _output_items(reply, serial, done=False)
    finished = _output_items(reply, serial, done=True)
    for index, (item, whole) in enumerate(zip(announced, finished, strict=True)):
        place = {"item_id": item["id"], "output_index": index}
        emit("response.output_item.added", output_index=index, item=item)
        if item["type"] == "message":
            text = whole["content"][0]["text"]
            emit("response.content_part.added", **place, content_index=0, part=_text_part(""))
            for piece in split(text, reply.pieces):
                emit(
                    "response.output_text.delta", **place, content_index=0, delta=piece, logprobs=[]
                )
            emit("response.output_text.done", **place, content_index=0, text=text, logprobs=[])
            emit("response.content_part.done", **place, content_index=0, part=_text_part(text))
        else:
            for fragment in split(whole["arguments"], reply.pieces):
                emit("response.function_call_arguments.delta", **place, delta=fragment)
            emit("response.function_call_arguments.done", **place, arguments=whole["arguments"])
        emit("response.output_item.done", output_index=index, item=whole)
    final = response_body(reply, body, serial)
    emit(f"response.{final['status']}", response=final)
    return events


# --- Anthropic Messages ----------------------------------------------------------------------


def _stop_reason(reply: Reply) -> str:
    return reply.finish_reason or ("tool_use" if reply.tool_calls else "end_turn")


def message_body(reply: Reply, body: dict[str, Any], serial: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.content:
        content.append({"type": "text", "text": reply.content})
    for index, (name, arguments) in enumerate(reply.tool_calls):
        content.append(
            {"type": "tool_use", "id": f"toolu_{index}", "name": name, "input": arguments}
        )
    return {
        "id": f"msg_{serial}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", ""),
        "content": content,
        "stop_reason": _stop_reason(reply),
        "stop_sequence": None,
        "usage": {"input_tokens": reply.prompt_tokens, "output_tokens": reply.completion_tokens},
    }


def message_events(reply: Reply, body: dict[str, Any], serial: int) -> list[Event]:
    """`message_start`, a `ping`, each content block (start, deltas, stop), `message_delta`
    with the stop reason and the output tokens so far, `message_stop`."""
    whole = message_body(reply, body, serial)
    started = {**whole, "content": [], "stop_reason": None}
    started["usage"] = {
        "input_tokens": reply.prompt_tokens,
        "output_tokens": min(1, reply.completion_tokens),
    }
    events: list[Event] = [("message_start", {"type": "message_start", "message": started})]
    events.append(("ping", {"type": "ping"}))
    for index, block in enumerate(whole["content"]):
        if block["type"] == "text":
            opening = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in split(block["text"], reply.pieces)]
        else:
            opening = {**block, "input": {}}
            fragments = split(arguments_json(block["input"]), reply.pieces)
            deltas = [{"type": "input_json_delta", "partial_json": f} for f in fragments]
        start = {"type": "content_block_start", "index": index, "content_block": opening}
        events.append(("content_block_start", start))
        for delta in deltas:
            event = {"type": "content_block_delta", "index": index, "delta": delta}
            events.append(("content_block_delta", event))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    delta = {"stop_reason": whole["stop_reason"], "stop_sequence": None}
    usage = {"output_tokens": reply.completion_tokens}
    events.append(("message_delta", {"type": "message_delta", "delta": delta, "usage": usage}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


# --- Google's Gemini API ------------------------------------------------------------------------

GEMINI_STOPS = {"length": "MAX_TOKENS", "max_tokens": "MAX_TOKENS"}


def _gemini_usage(reply: Reply, *, done: bool) -> dict[str, Any]:
    """`usageMetadata`: the prompt's count in every chunk, the answer's in the last."""
    usage: dict[str, Any] = {"promptTokenCount": reply.prompt_tokens}
    if reply.cached_tokens:
        usage["cachedContentTokenCount"] = reply.cached_tokens
    if done:
        usage["candidatesTokenCount"] = reply.completion_tokens
        if reply.thoughts_tokens:
            usage["thoughtsTokenCount"] = reply.thoughts_tokens
    written = reply.completion_tokens + reply.thoughts_tokens if done else 0
    return usage | {"totalTokenCount": reply.prompt_tokens + written}


def _gemini_chunk(
    parts: list[dict[str, Any]], reply: Reply, body: dict[str, Any], serial: int, *, done: bool
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if done:
        candidate["finishReason"] = GEMINI_STOPS.get(reply.finish_reason or "", "STOP")
    return {
        "candidates": [candidate],
        "usageMetadata": _gemini_usage(reply, done=done),
        "modelVersion": str(body.get("model", "")),
        "responseId": f"gemini-response-{serial}",
    }


def _gemini_calls(reply: Reply) -> list[dict[str, Any]]:
    return [{"functionCall": {"name": name, "args": args}} for name, args in reply.tool_calls]


def gemini_body(reply: Reply, body: dict[str, Any], serial: int) -> dict[str, Any]:
    """A `GenerateContentResponse` (the model is the path's: the fake puts it in `body`)."""
    parts = ([{"text": reply.content}] if reply.content else []) + _gemini_calls(reply)
    return _gemini_chunk(parts, reply, body, serial, done=True)


def gemini_chunks(reply: Reply, body: dict[str, Any], serial: int) -> list[Event]:
    """`streamGenerateContent?alt=sse`: the text in pieces, one chunk each, then each call
    whole (the API never splits one), the last chunk with the finish reason and usage."""
    parts = [[{"text": piece}] for piece in split(reply.content or "", reply.pieces)]
    parts += [[call] for call in _gemini_calls(reply)]
    parts = parts or [[{"text": ""}]]
    return [
        (None, _gemini_chunk(part, reply, body, serial, done=index == len(parts) - 1))
        for index, part in enumerate(parts)
    ]


def gemini_error(status: int) -> dict[str, Any]:
    names = {400: "INVALID_ARGUMENT", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}
    name = names.get(status, "INTERNAL")
    return {"error": {"code": status, "message": f"scripted {name}", "status": name}}


def anthropic_error(kind: str = "api_error") -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": f"scripted {kind}"}}


def stream_error(api: str, kind: str, sequence_number: int) -> Event:
    """The event an API ends a begun stream with when it fails: Anthropic's `error` event,
    the Responses API's `error` event, a Chat Completions chunk holding only `error`."""
    message = f"scripted {kind}"
    if api == "messages":
        return "error", anthropic_error(kind)
    if api == "responses":
        error = {"type": "error", "code": kind, "message": message, "param": None}
        return "error", {**error, "sequence_number": sequence_number}
    return None, {"error": {"message": message, "type": kind, "param": None, "code": kind}}


# --- embeddings and the model list -----------------------------------------------------------

DEFAULT_DIMENSIONS = 1536


def embedding(item: str | list[int], dimensions: int = DEFAULT_DIMENSIONS) -> list[float]:
    """The fake's vector for one input: a unit vector drawn from the input's hash, with
    float32 values (so `encoding_format: base64` and `float` give the same numbers)."""
    key = item if isinstance(item, str) else json.dumps(item)
    digest = hashlib.shake_256(key.encode()).digest(2 * dimensions)
    raw = [(value - 32767.5) for value in struct.unpack(f"<{dimensions}H", digest)]
    norm = sum(v * v for v in raw) ** 0.5 or 1.0
    packed = struct.pack(f"<{dimensions}f", *(v / norm for v in raw))
    return list(struct.unpack(f"<{dimensions}f", packed))


def embedding_inputs(value: Any) -> list[str | list[int]]:
    """The inputs of an embeddings request: a string, a token array, or a list of either."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        return [value]
    return list(value) if isinstance(value, list) else []


def embeddings_body(body: dict[str, Any]) -> dict[str, Any]:
    inputs = embedding_inputs(body.get("input"))
    dimensions = body.get("dimensions") or DEFAULT_DIMENSIONS
    base64_wanted = body.get("encoding_format") == "base64"
    data = []
    for index, item in enumerate(inputs):
        vector: Any = embedding(item, dimensions)
        if base64_wanted:
            vector = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
        data.append({"object": "embedding", "index": index, "embedding": vector})
    tokens = sum(max(1, len(i.split())) if isinstance(i, str) else len(i) for i in inputs)
    usage = {"prompt_tokens": tokens, "total_tokens": tokens}
    return {"object": "list", "data": data, "model": body.get("model", ""), "usage": usage}


def openai_models(ids: list[str]) -> dict[str, Any]:
    data = [{"id": i, "object": "model", "created": CREATED, "owned_by": "system"} for i in ids]
    return {"object": "list", "data": data}


def anthropic_models(ids: list[str], query: dict[str, list[str]]) -> dict[str, Any]:
    """One page of Anthropic's model list (`limit`, `after_id`, `before_id` honoured)."""
    limit = int((query.get("limit") or ["20"])[0])
    start, end = 0, len(ids)
    if after := (query.get("after_id") or [""])[0]:
        start = ids.index(after) + 1 if after in ids else len(ids)
    if before := (query.get("before_id") or [""])[0]:
        end = ids.index(before) if before in ids else 0
        start = max(start, end - limit)
    page = ids[start : min(end, start + limit)]
    data = [
        {
            "type": "model",
            "id": i,
            "display_name": i.replace("-", " ").title(),
            "created_at": "2026-01-01T00:00:00Z",
            "lifecycle": "active",
        }
        for i in page
    ]
    return {
        "data": data,
        "has_more": start + len(page) < end,
        "first_id": page[0] if page else None,
        "last_id": page[-1] if page else None,
    }
