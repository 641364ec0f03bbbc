"""A `latency` assertion with `scope: step` is decided on what evalward timed: a model call
the proxy measured is a step's duration, so an agent that writes a short `duration_ms` on an
event of its own cannot make a slow run's slowest step look fast.

Through `evalward run` on a real repository, with the scripted model server as the provider:
a command agent makes one model call through the proxy, which the server answers after
1.5 s, and reports one `assistant` event that says it took 3 ms."""

from __future__ import annotations

import json
import sys

import pytest

from fakes.model_server import ScriptedModelServer, text, tool_call
from support.byoagent import one_agent_suite
from support.clirun import evalward
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.hostile

AGENT = """\
import json, os, sys, urllib.request
sys.stdin.readline()
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    json.dumps({"model": "gpt-4.1-mini",
                "messages": [{"role": "user", "content": "slow call: hello"}]}).encode(),
    {"authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
     "content-type": "application/json"},
)
with urllib.request.urlopen(request, timeout=30) as answer:
    said = json.loads(answer.read())["choices"][0]["message"]["content"]
print(json.dumps({"type": "assistant", "content": "thinking", "duration_ms": 3}))
print(json.dumps({"type": "final", "content": said}))
"""

SLOW_SECONDS = 1.5


def test_a_slow_model_call_is_the_slowest_step_whatever_duration_the_agent_reports(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    repo.commit(
        "an agent that reports its steps as fast",
        {
            "agents.yaml": one_agent_suite(
                "quick",
                "answer-fast",
                command=f"[{sys.executable}, agent/quick.py]",
                prompt="hello",
                assertion="{ type: latency, scope: step, maxMs: 1000 }",
            ),
            "agent/quick.py": AGENT,
        },
    )
    model.script("slow call", text("Hello there.", delay=SLOW_SECONDS))

    done = evalward("run", ".", "--json", "--no-history", cwd=repo.path, **provider_env(model))

    (fixture,) = json.loads(done.stdout)["fixtures"]
    (call,) = fixture["trace"]["proxy_calls"]
    assert call["duration_ms"] >= SLOW_SECONDS * 1000  # evalward timed the call itself
    (latency,) = fixture["assertions"]
    assert latency["status"] != "pass", latency["message"]
    assert done.returncode != 0, latency["message"]


TOOL_AGENT = """\
import json, os, sys, time, urllib.request
sys.stdin.readline()
def chat(messages):
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        json.dumps({"model": "gpt-4.1-mini", "messages": messages, "tools": [
            {"type": "function", "function": {"name": "slow_lookup", "parameters": {}}}]}).encode(),
        {"authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
         "content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())["choices"][0]["message"]
messages = [{"role": "user", "content": "slow tool: where is my order"}]
message = chat(messages)
messages.append(message)
for call in message.get("tool_calls") or []:
    print(json.dumps({"type": "tool_result", "tool": "slow_lookup", "id": call["id"],
                      "output": "shipped", "duration_ms": 2}), flush=True)
    time.sleep(SLOW)  # the tool is slow
    messages.append({"role": "tool", "tool_call_id": call["id"], "content": "shipped"})
print(chat(messages)["content"])
""".replace("SLOW", str(SLOW_SECONDS))


def test_a_slow_tool_call_is_timed_from_the_call_whatever_duration_the_agent_reports(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    repo.commit(
        "an agent that reports its slow tool as fast",
        {
            "agents.yaml": one_agent_suite(
                "quick",
                "lookup-fast",
                command=f"[{sys.executable}, agent/quick.py]",
                prompt="where is my order",
                assertion="{ type: latency, tool: slow_lookup, maxMs: 1000 }",
            ),
            "agent/quick.py": TOOL_AGENT,
        },
    )
    model.script("slow tool", tool_call("slow_lookup"), text("It shipped."))

    done = evalward("run", ".", "--json", "--no-history", cwd=repo.path, **provider_env(model))

    (fixture,) = json.loads(done.stdout)["fixtures"]
    first, second = fixture["trace"]["proxy_calls"]
    # evalward saw the result come back no sooner than the tool's time after the call
    assert second["started_at"] - first["started_at"] >= SLOW_SECONDS
    (latency,) = fixture["assertions"]
    assert latency["status"] != "pass", latency["message"]
    assert done.returncode != 0, latency["message"]
