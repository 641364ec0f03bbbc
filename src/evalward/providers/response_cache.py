"""A response cache for model calls, so a rerun of an unchanged eval costs nothing.

The key is a hash of (provider, model, request body, rep index): each rep of a fixture keeps
its own reply, so reps measure variance instead of replaying the first answer. Entries are
one JSON file each, written atomically, so concurrent runs never read half a file.

Two kinds of entry share the directory under different keys: evalward's own calls (a
ChatRequest and its ChatResponse) and calls the model proxy forwards for an agent (the
agent's request body as sent, and the provider's JSON reply as received).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from evalward.errors import printable, why_refused
from evalward.files.safe_files import read_text
from evalward.providers.base import ChatRequest, ChatResponse, ToolCall
from evalward.rundata.cache_mode import CacheMode
from evalward.rundata.trace import Usage
from evalward.text import jsontext

T = TypeVar("T")

MAX_ENTRY_BYTES = 64 * 1024 * 1024
"""The largest kept reply read back (a restored cache is read as untrusted files)."""

FORMAT = 1


class ResponseCache:
    def __init__(self, directory: Path, mode: CacheMode) -> None:
        self.directory = directory
        self.mode = mode
        self.refused: OSError | None = None
        """The first write the disk refused (full, read-only, a file size limit): the reply
        is used but not kept, which costs a rerun its reuse and never the run, nor the call
        already paid for; the front end says it (`unkept`)."""

    def key(self, provider: str, request: ChatRequest) -> str:
        body = dataclasses.asdict(request)
        rep = body.pop("labels")["rep"]
        return _digest(
            {"v": FORMAT, "provider": provider, "model": request.model, "body": body, "rep": rep}
        )

    def raw_key(
        self, provider: str, route: str, body: Mapping[str, Any], rep: int, side: str
    ) -> str:
        """The key of a forwarded call: its route and the agent's whole request body, as
        sent (so a streamed and a whole request are two entries), and the side of the run
        that made it. An agent's program chooses its requests, and a stream it cuts is not
        kept, so a pull request's program could keep the reply it likes to a request the
        base's agent will send: the sides' forwarded calls never share a reply."""
        return _digest(
            {"v": FORMAT, "kind": "forwarded", "provider": provider, "body": body}
            | {"route": route, "rep": rep, "side": side}
        )

    def get_raw(self, key: str) -> dict[str, Any] | None:
        """A provider's stored JSON reply to a forwarded call."""
        return self._read(key, _forwarded)

    def put_raw(self, key: str, reply: Mapping[str, Any]) -> None:
        if self.mode.writes:
            self._write(key, {"forwarded": reply})

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> ChatResponse | None:
        return self._read(key, _decode)

    def _read(self, key: str, decode: Callable[[Any], T]) -> T | None:
        """The entry at `key` as `decode` reads it; a miss when it is absent or unreadable."""
        if not self.mode.reads:
            return None
        try:
            return decode(jsontext.loads(read_text(self._path(key), MAX_ENTRY_BYTES)))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, response: ChatResponse) -> None:
        if self.mode.writes:
            self._write(key, _encode(response))

    def _write(self, key: str, entry: Mapping[str, Any]) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        except OSError as exc:
            self.refused = self.refused or exc
            return
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(entry, handle, ensure_ascii=False)
            Path(tmp).replace(path)
        except OSError as exc:
            self.refused = self.refused or exc
        finally:  # a refused write leaves no half entry behind
            Path(tmp).unlink(missing_ok=True)

    def unkept(self) -> str | None:
        """What to say of the replies the disk refused to keep (None: every one was kept)."""
        if self.refused is None:
            return None
        return (
            f"the response cache ({printable(str(self.directory))}) did not keep every reply: "
            f"{why_refused(self.refused)}. The run used them; a rerun asks the model again "
            "for those. Free space (or make the folder writable) to keep them"
        )


def _digest(material: Mapping[str, Any]) -> str:
    """The key of an entry: the hash of what decides its reply, in a stable JSON form."""
    raw = json.dumps(material, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def _encode(response: ChatResponse) -> dict[str, Any]:
    return {
        "content": response.content,
        "tool_calls": [dataclasses.asdict(c) for c in response.tool_calls],
        "usage": response.usage.model_dump(),
        "stop_reason": response.stop_reason,
        "model": response.model,
    }


def _forwarded(data: Any) -> dict[str, Any]:
    reply = data.get("forwarded") if isinstance(data, dict) else None
    if not isinstance(reply, dict):
        raise ValueError("not a forwarded call's reply")
    return reply


def _decode(data: Any) -> ChatResponse:
    return ChatResponse(
        content=str(data["content"]),
        tool_calls=tuple(
            ToolCall(id=str(c["id"]), name=str(c["name"]), arguments=dict(c["arguments"]))
            for c in data["tool_calls"]
        ),
        usage=Usage.model_validate(data["usage"]),
        stop_reason=str(data["stop_reason"]),
        model=str(data["model"]),
        cached=True,
    )
