"""An OpenAI-compatible chat server that answers from a table and grades rubrics by their
quoted terms: one server for promptfoo and evalward alike, so that when the two give a test
different verdicts, the difference is theirs, not the model's.

- A request is answered with the `reply` of the first table entry whose `contains` is in the
  conversation (every message's text); none fits: `default`.
- A grading request, promptfoo's llm-rubric (`<Output>…</Output><Rubric>…</Rubric>`) or
  evalward's judge (the trace between its data markers), passes when every term the rubric
  quotes in single quotes is in the graded output (any case), and is answered in the verdict
  shape the grader asked for.
- `messages` that is not a non-empty list is answered 400, as OpenAI answers it.
- Usage is a quarter of the characters, so prices give both tools the same cost, and every
  reply waits `delay` seconds, so latency bounds on either side of it are decided alike.
- Anthropic's Messages API (`POST /v1/messages`) is answered from the same table, in its
  shape; its `system` counts as the conversation's first message.
- `POST /v1/embeddings` answers each input with a vector of its words (each lower-cased word
  counted in one of `DIMENSIONS` places chosen by its hash): texts that share words are
  similar, texts that share none are not, the same for either tool.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from fakes.http import LoopbackServer, Request, Response

PROMPTFOO_GRADER = "You are grading output according to a user-specified rubric"
EVALWARD_OPEN, EVALWARD_CLOSE = "<<<EVALWARD-DATA>>>", "<<<END-EVALWARD-DATA>>>"


@dataclass
class Entry:
    contains: str
    reply: str


def load_table(path: Path) -> tuple[list[Entry], str]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    entries = [Entry(str(e["contains"]), str(e["reply"])) for e in data.get("replies", [])]
    return entries, str(data.get("default", "I cannot help with that."))


def quoted_terms(rubric: str) -> list[str]:
    return re.findall(r"(?<!\w)'([^']+)'(?!\w)", rubric)


def passes(rubric: str, output: str) -> bool:
    return all(term.lower() in output.lower() for term in quoted_terms(rubric))


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _between(text: str, start: str, end: str) -> str:
    _, found, rest = text.partition(start)
    return rest.partition(end)[0] if found else ""


ROUTES = ("/chat/completions", "/embeddings", "/messages")
"""The model APIs' routes it serves, each a POST."""


class ReplyTableServer:
    def __init__(self, table: list[Entry], default: str, delay: float = 0.02) -> None:
        self.table = table
        self.default = default
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        """Every request's JSON body, in order."""
        self.received: list[Request] = []
        """Every call of a model API it serves, as it arrived (its target, with the query,
        and its headers). A request elsewhere is answered 404 and not kept: another test's
        client (a readiness probe's `GET /`) may reach the port this server took after that
        test's server let it go, and it is no call evalward made."""
        self.server = LoopbackServer(self.handle)
        self.base_url = f"{self.server.url}/v1"

    def close(self) -> None:
        self.server.close()

    def answer(self, messages: list[dict[str, Any]]) -> str:
        texts = [_text(m.get("content")) for m in messages]
        system = texts[0] if texts else ""
        if system.startswith(PROMPTFOO_GRADER):
            user = texts[-1]
            output = _between(user, "<Output>\n", "\n</Output>")
            ok = passes(_between(user, "<Rubric>\n", "\n</Rubric>"), output)
            return json.dumps({"reason": "by the table", "pass": ok, "score": 1.0 if ok else 0.0})
        if EVALWARD_OPEN in system and "Rubric:\n" in system:
            rubric = _between(system, "Rubric:\n", "\n\nReply with")
            data = json.loads(_between(texts[-1], EVALWARD_OPEN + "\n", "\n" + EVALWARD_CLOSE))
            finals = [s.get("text", "") for s in data.get("trace", []) if s.get("type") == "final"]
            ok = passes(rubric, finals[-1] if finals else "")
            verdict = {"score": 1 if ok else 0, "confidence": 0.9, "summary": "by the table"}
            return json.dumps({**verdict, "violations": []})
        conversation = "\n".join(texts)
        return next((e.reply for e in self.table if e.contains in conversation), self.default)

    def handle(self, request: Request) -> Response:
        if request.method != "POST" or not request.path.endswith(ROUTES):
            return Response(404, {"error": {"message": f"no route {request.path}"}})
        self.received.append(request)
        if request.path.endswith("/embeddings"):
            body = request.json()
            self.requests.append(body)
            return Response(200, embeddings(body), delay=self.delay)
        if request.path.endswith("/messages"):
            body = request.json()
            self.requests.append(body)
            return Response(200, self.anthropic(body), delay=self.delay)
        body = request.json()
        self.requests.append(body)
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return Response(400, invalid_messages(messages))
        content = self.answer(messages)
        prompt = sum(len(_text(m.get("content"))) for m in messages)
        return Response(
            200,
            {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "model"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content, "refusal": None},
                        "finish_reason": "stop",
                        "logprobs": None,
                    }
                ],
                "usage": {
                    "prompt_tokens": math.ceil(prompt / 4),
                    "completion_tokens": math.ceil(len(content) / 4),
                    "total_tokens": math.ceil(prompt / 4) + math.ceil(len(content) / 4),
                },
            },
            delay=self.delay,
        )

    def anthropic(self, body: dict[str, Any]) -> dict[str, Any]:
        """A Messages API reply: the table's answer to the system and the messages."""
        system = body.get("system")
        messages = ([{"content": system}] if system else []) + list(body.get("messages") or [])
        content = self.answer(messages)
        prompt = sum(len(_text(m.get("content"))) for m in messages)
        return {
            "id": f"msg_{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "model"),
            "content": [{"type": "text", "text": content}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": math.ceil(prompt / 4),
                "output_tokens": math.ceil(len(content) / 4),
            },
        }


def invalid_messages(messages: Any) -> dict[str, Any]:
    """OpenAI's answer to `messages` that is not a non-empty list (an object, say)."""
    kind = "an object" if isinstance(messages, dict) else type(messages).__name__
    return {
        "error": {
            "message": f"Invalid type for 'messages': expected an array of objects, but got "
            f"{kind} instead.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "invalid_type",
        }
    }


DIMENSIONS = 64


def word_vector(text: str) -> list[float]:
    """A text's words, counted by the hash of each (lower-cased)."""
    vector = [0.0] * DIMENSIONS
    for word in re.findall(r"\w+", text.lower()):
        vector[hashlib.sha256(word.encode()).digest()[0] % DIMENSIONS] += 1.0
    return vector


def embeddings(body: dict[str, Any]) -> dict[str, Any]:
    given = body.get("input")
    texts = [given] if isinstance(given, str) else list(given or [])
    tokens = sum(math.ceil(len(str(t)) / 4) for t in texts)
    return {
        "object": "list",
        "data": [
            {"object": "embedding", "index": i, "embedding": word_vector(str(t))}
            for i, t in enumerate(texts)
        ],
        "model": body.get("model", "embedding"),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


SECOND_SERVER = "http://second-server.invalid"
"""Where a configuration of tests/data/promptfoo names a second model server (an `apiBaseUrl`
at this host, `…/v1` for an OpenAI-compatible one, the bare host for an Azure resource): its
tests serve the folder's `second.yaml` there, and write that server's URL in its place."""


def second_server(example: Path) -> ReplyTableServer | None:
    """The second model server of `example`, when it has one."""
    table = example / "second.yaml"
    return ReplyTableServer(*load_table(table)) if table.exists() else None


def point_at(folder: Path, server: ReplyTableServer | None) -> None:
    """Point the copy of a configuration in `folder` at its second server."""
    if server is not None:
        config = folder / "promptfooconfig.yaml"
        config.write_text(config.read_text().replace(SECOND_SERVER, server.server.url))


def second_env(server: ReplyTableServer | None) -> dict[str, str]:
    """Where an Azure provider that names no resource finds it, as promptfoo finds it: at
    the second server (AZURE_API_BASE_URL), set for the import and both tools' runs."""
    return {"AZURE_API_BASE_URL": server.server.url} if server is not None else {}


def model_env(server: ReplyTableServer) -> dict[str, str]:
    """The environment either tool runs a suite of tests/data/promptfoo in: OpenAI's and
    Anthropic's APIs at `server`, and a key for each vendor its providers name."""
    return {
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "sk-test-key",
        "ANTHROPIC_BASE_URL": server.server.url,
        "ANTHROPIC_API_KEY": "sk-ant-test-key",
        "AZURE_API_KEY": "azure-test-key",
    }
