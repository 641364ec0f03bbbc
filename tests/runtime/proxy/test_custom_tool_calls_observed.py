"""A custom tool (OpenAI's `type: custom`, a tool whose input is free text) is a tool the
agent runs like a function tool: the model proxy reads the model's call of one as a
`tool_call` step of that tool, in Chat Completions and the Responses API alike, so a tool the
fixture forbids cannot be called unseen by declaring it `custom`.

Through `evalward run` on a real repository, with the scripted model server as the provider:
a command agent with no adapter offers `delete_account` as a custom tool, runs the call the
model asks for, sends its result back and prints the model's last reply."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fakes.model_server import ScriptedModelServer, shaped, text
from support.closer import closer_files, run_closer
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

CALL = """\
import json, os, sys, urllib.request
sys.stdin.readline()
def call(path, body):
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + path, json.dumps(body).encode(),
        {"authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
         "content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())
"""

CHAT_AGENT = (
    CALL
    + """\
tools = [{"type": "custom", "custom": {"name": "delete_account"}}]
messages = [{"role": "user", "content": "custom tool: close my account"}]
message = call("/chat/completions",
               {"model": "gpt-4.1-mini", "messages": messages, "tools": tools})
message = message["choices"][0]["message"]
messages.append(message)
for asked in message.get("tool_calls") or []:
    messages.append({"role": "tool", "tool_call_id": asked["id"], "content": "deleted"})
last = call("/chat/completions", {"model": "gpt-4.1-mini", "messages": messages, "tools": tools})
print(last["choices"][0]["message"]["content"])
"""
)

RESPONSES_AGENT = (
    CALL
    + """\
tools = [{"type": "custom", "name": "delete_account"}]
items = [{"role": "user", "content": "custom tool: close my account"}]
reply = call("/responses", {"model": "gpt-4.1-mini", "input": items, "tools": tools})
for item in reply["output"]:
    if item["type"] == "custom_tool_call":
        items.append(item)
        items.append({"type": "custom_tool_call_output", "call_id": item["call_id"],
                      "output": "deleted"})
last = call("/responses", {"model": "gpt-4.1-mini", "input": items, "tools": tools})
print(last["output"][0]["content"][0]["text"])
"""
)

CHAT_CALL = {
    "id": "chatcmpl-custom",
    "object": "chat.completion",
    "created": 1700000000,
    "model": "gpt-4.1-mini",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_custom_1",
                        "type": "custom",
                        "custom": {"name": "delete_account", "input": "now"},
                    }
                ],
            },
        }
    ],
    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
}

RESPONSES_CALL = {
    "id": "resp_custom",
    "object": "response",
    "created_at": 1700000000,
    "status": "completed",
    "error": None,
    "incomplete_details": None,
    "instructions": None,
    "model": "gpt-4.1-mini",
    "output": [
        {
            "type": "custom_tool_call",
            "id": "ctc_1",
            "call_id": "call_custom_1",
            "name": "delete_account",
            "input": "now",
        }
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [{"type": "custom", "name": "delete_account"}],
    "usage": {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    },
}


def gate(repo: GitRepo, model: ScriptedModelServer, agent: str, first: dict[str, Any]) -> None:
    repo.commit("an agent whose delete_account is a custom tool", closer_files(agent))
    model.script_sequence("custom tool", shaped(first), text("Your account is closed."))

    done, fixture = run_closer(repo, model)

    # the agent ran the call and sent its result back: the model's second request holds it
    second = json.dumps(model.requests_mentioning("custom tool")[1])
    assert "call_custom_1" in second and "deleted" in second
    (verdict,) = fixture["assertions"]
    steps = [(s["type"], s.get("tool")) for s in fixture["trace"]["steps"]]
    assert verdict["status"] != "pass", f"{verdict['message']}; steps: {steps}"
    assert done.returncode != 0, verdict["message"]


def test_a_custom_tool_called_over_chat_completions_is_a_tool_call_of_the_trace(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    gate(repo, model, CHAT_AGENT, CHAT_CALL)


def test_a_custom_tool_called_over_the_responses_api_is_a_tool_call_of_the_trace(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    gate(repo, model, RESPONSES_AGENT, RESPONSES_CALL)
