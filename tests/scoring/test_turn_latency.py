"""A `latency` assertion of one conversation turn (`turn:`) is decided on the time evalward
measured that turn to take, never on the durations the agent's steps carry (or do not carry):
a slow reply to a turn fails its bound, however the agent reports its steps.

Through `evalward run` on a real repository, with the scripted model server as the provider:
a command agent without an adapter answers each turn of a scripted conversation with one
model call through the proxy, which the server answers after 1.5 s."""

from __future__ import annotations

import json
import sys

import pytest

from fakes.model_server import ScriptedModelServer, text
from support.clirun import evalward
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.hostile

AGENT = """\
import json, os, sys, urllib.request
asked = json.loads(sys.stdin.readline())["messages"][-1]["content"]
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    json.dumps({"model": "gpt-4.1-mini",
                "messages": [{"role": "user", "content": "slow turn: " + asked}]}).encode(),
    {"authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
     "content-type": "application/json"},
)
with urllib.request.urlopen(request, timeout=30) as answer:
    print(json.loads(answer.read())["choices"][0]["message"]["content"])
"""

SUITE = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: talker }}
spec:
  runtime:
    command: [{python}, agent/talker.py]
  watch: [agent/*.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: talker-eval }}
spec:
  targetAgent: talker
  fixtures: [quick-talk]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: quick-talk }}
spec:
  targetAgent: talker
  conversation:
    turns:
      - user: hello
        assertions:
          - {{ type: latency, maxMs: 1000 }}
"""

SLOW_SECONDS = 1.5


def test_a_slow_turn_fails_its_latency_bound(repo: GitRepo, model: ScriptedModelServer) -> None:
    repo.commit(
        "an agent whose turn is slow",
        {"agents.yaml": SUITE.format(python=sys.executable), "agent/talker.py": AGENT},
    )
    model.script("slow turn", text("Hello there.", delay=SLOW_SECONDS))

    done = evalward("run", ".", "--json", "--no-history", cwd=repo.path, **provider_env(model))

    (fixture,) = json.loads(done.stdout)["fixtures"]
    (call,) = fixture["trace"]["proxy_calls"]
    assert call["duration_ms"] >= SLOW_SECONDS * 1000  # evalward timed the turn's call
    (latency,) = fixture["assertions"]
    assert latency["status"] != "pass", latency["message"]
    assert done.returncode != 0, latency["message"]
