"""OpenAI embeddings (`POST /v1/embeddings`) and the model lists (`GET /v1/models`), as the
proxy answers them under a mock script, where no provider is called.

A mock embedding is a unit vector drawn from a hash of the input, so equal texts get equal
vectors and a rerun gets the same ones: what a retrieval step in a dry run needs (it finds
the exact text it stored), with no claim to meaning. Its length is the request's
`dimensions`, else 1536, the length of OpenAI's `text-embedding-3-small`; `encoding_format:
base64` (the `openai` SDK's default) is packed as little-endian float32, as the API does.
"""

from __future__ import annotations

import base64
import hashlib
import math
import struct
from collections.abc import Iterable, Mapping
from typing import Any

from evalward.errors import WireError
from evalward.rundata.trace import Usage
from evalward.runtime.proxy.wire.base import count, mapping

DEFAULT_DIMENSIONS = 1536
MAX_DIMENSIONS = 8192
MAX_INPUTS = 2048


def usage(reply: Mapping[str, Any]) -> Usage:
    return Usage(input_tokens=count(mapping(reply.get("usage")).get("prompt_tokens")))


def mock_reply(body: Mapping[str, Any]) -> dict[str, Any]:
    """The embeddings of `body["input"]`, computed here."""
    inputs = _inputs(body.get("input"))
    dimensions = body.get("dimensions", DEFAULT_DIMENSIONS)
    if not isinstance(dimensions, int) or isinstance(dimensions, bool):
        raise WireError("`dimensions` must be an integer")
    if not 1 <= dimensions <= MAX_DIMENSIONS:
        raise WireError(f"`dimensions` must be between 1 and {MAX_DIMENSIONS}")
    as_base64 = body.get("encoding_format") == "base64"
    data = []
    tokens = 0
    for index, text in enumerate(inputs):
        vector = _vector(text, dimensions)
        tokens += max(1, len(text) // 4)
        encoded: object = (
            base64.b64encode(struct.pack(f"<{dimensions}f", *vector)).decode()
            if as_base64
            else vector
        )
        data.append({"object": "embedding", "index": index, "embedding": encoded})
    return {
        "object": "list",
        "data": data,
        "model": str(body.get("model", "")),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def _inputs(value: object) -> list[str]:
    """Strings, or token arrays (kept as their text form: only equality matters here)."""
    if isinstance(value, str):
        values: list[object] = [value]
    elif isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        values = [value]
    elif isinstance(value, list) and value:
        values = list(value)
    else:
        raise WireError("`input` must be a string, a list of strings or of token arrays")
    if len(values) > MAX_INPUTS:
        raise WireError(f"`input` may hold at most {MAX_INPUTS} items")
    out = []
    for index, item in enumerate(values):
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, list) and all(isinstance(t, int) for t in item):
            out.append(" ".join(str(t) for t in item))
        else:
            raise WireError(f"input[{index}] must be a string or a list of token ids")
    return out


def _vector(text: str, dimensions: int) -> list[float]:
    raw = bytearray()
    counter = 0
    while len(raw) < dimensions * 4:
        raw += hashlib.sha256(f"{counter}\0{text}".encode()).digest()
        counter += 1
    numbers = [
        (value / 2**31) - 1.0 for value in struct.unpack(f"<{dimensions}I", raw[: dimensions * 4])
    ]
    norm = math.sqrt(sum(n * n for n in numbers)) or 1.0
    return [n / norm for n in numbers]


def models_list(ids: Iterable[str], *, anthropic: bool) -> dict[str, Any]:
    """A model list in the provider's shape."""
    names = sorted(set(ids))
    if anthropic:
        data = [
            {
                "type": "model",
                "id": name,
                "display_name": name,
                "created_at": "1970-01-01T00:00:00Z",
            }
            for name in names
        ]
        return {
            "data": data,
            "has_more": False,
            "first_id": names[0] if names else None,
            "last_id": names[-1] if names else None,
        }
    return {
        "object": "list",
        "data": [{"id": n, "object": "model", "created": 0, "owned_by": "evalward"} for n in names],
    }
