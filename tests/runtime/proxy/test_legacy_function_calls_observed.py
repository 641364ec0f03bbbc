"""A model's call of a tool through Chat Completions' older function calling (`functions` in
the request, `function_call` in the reply, still served by the API) is a `tool_call` step of
the trace as a `tool_calls` entry is, so a tool the fixture forbids cannot be called unseen
by asking for it the old way.

Through `evalward run` on a real repository, with the scripted model server as the provider:
a command agent with no adapter offers `delete_account` as a function, runs the call the
model asks for, sends its result back (a `function` message) and prints the model's last
reply."""

from __future__ import annotations

import pytest

from fakes.model_server import ScriptedModelServer, shaped, text
from support.closer import closer_files, run_closer
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

AGENT = """\
import json, os, sys, urllib.request
sys.stdin.readline()
def chat(body):
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions", json.dumps(body).encode(),
        {"authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
         "content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())["choices"][0]["message"]
functions = [{"name": "delete_account", "parameters": {"type": "object", "properties": {}}}]
messages = [{"role": "user", "content": "old functions: close my account"}]
message = chat({"model": "gpt-4.1-mini", "messages": messages, "functions": functions})
messages.append(message)
if message.get("function_call"):
    messages.append({"role": "function", "name": "delete_account", "content": "deleted"})
last = chat({"model": "gpt-4.1-mini", "messages": messages, "functions": functions})
print(last["content"])
"""

FUNCTION_CALL = {
    "id": "chatcmpl-function",
    "object": "chat.completion",
    "created": 1700000000,
    "model": "gpt-4.1-mini",
    "choices": [
        {
            "index": 0,
            "finish_reason": "function_call",
            "message": {
                "role": "assistant",
                "content": None,
                "function_call": {"name": "delete_account", "arguments": "{}"},
            },
        }
    ],
    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
}


def test_a_tool_called_through_the_older_function_calling_is_a_tool_call_of_the_trace(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    repo.commit("an agent that calls delete_account as a function", closer_files(AGENT))
    model.script_sequence("old functions", shaped(FUNCTION_CALL), text("Your account is closed."))

    done, fixture = run_closer(repo, model)

    # the agent ran the call and sent its result back: the model's second request holds it
    second = model.requests_mentioning("old functions")[1]
    assert {"role": "function", "name": "delete_account", "content": "deleted"} in second[
        "messages"
    ]
    (verdict,) = fixture["assertions"]
    steps = [(s["type"], s.get("tool")) for s in fixture["trace"]["steps"]]
    assert verdict["status"] != "pass", f"{verdict['message']}; steps: {steps}"
    assert done.returncode != 0, verdict["message"]
