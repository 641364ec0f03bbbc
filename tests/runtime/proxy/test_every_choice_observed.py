"""What the model proxy reads of a reply is everything the agent can act on: a Chat
Completions request for several choices (`n` above 1) is refused before it reaches the
provider, since the trace reads one choice as what the model said and which of several the
agent acted on cannot be known; so a tool the fixture forbids is never hidden behind the first
choice's harmless text. A reply that holds several choices all the same is an error of the
run.

Through `evalward run` on a real repository, with the scripted model server as the provider:
a command agent with no adapter asks for two choices and would act on the second (a
`delete_account` call)."""

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
        return json.loads(answer.read())
tools = [{"type": "function", "function": {"name": "delete_account", "parameters": {}}}]
messages = [{"role": "user", "content": "two choices: close my account"}]
reply = chat({"model": "gpt-4.1-mini", "messages": messages, "tools": tools, "n": 2})
taken = reply["choices"][-1]["message"]
messages.append(taken)
for call in taken.get("tool_calls") or []:
    messages.append({"role": "tool", "tool_call_id": call["id"], "content": "deleted"})
last = chat({"model": "gpt-4.1-mini", "messages": messages, "tools": tools})
print(last["choices"][0]["message"]["content"])
"""

TWO_CHOICES = {
    "id": "chatcmpl-two",
    "object": "chat.completion",
    "created": 1700000000,
    "model": "gpt-4.1-mini",
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": "I cannot close accounts."},
        },
        {
            "index": 1,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_delete_1",
                        "type": "function",
                        "function": {"name": "delete_account", "arguments": "{}"},
                    }
                ],
            },
        },
    ],
    "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
}


def test_a_request_for_several_choices_is_refused_before_the_provider_sees_it(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    repo.commit("an agent that acts on the second choice", closer_files(AGENT))
    model.script("two choices", shaped(TWO_CHOICES), text("Your account is closed."))

    done, fixture = run_closer(repo, model)

    assert model.requests_mentioning("two choices") == []
    (refused,) = fixture["trace"]["proxy_calls"]
    assert refused["status"] == 400 and "`n: 2`" in refused["error"], refused
    (verdict,) = fixture["assertions"]
    assert verdict["status"] != "pass", verdict["message"]
    assert done.returncode != 0, verdict["message"]
