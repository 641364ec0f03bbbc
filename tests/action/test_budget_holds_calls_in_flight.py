"""`max-cost-usd` holds calls in flight: a pull request's bring-your-own agent that opens many
expensive calls at once, before any reply is counted, is let through only the calls whose
worst case (what the request's size can make it read, and the output it may write) the
budget can still hold; the rest are refused (429), so the job spends within the budget, and
the run is an error naming the limit."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import gate_pull_request
from support.byoagent import agent_python, one_agent_suite
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

CALLS = 8
MAX_TOKENS = 100_000
PROMPT_CHARS = 40_000
CALL_USD = (10_000 * 0.4 + MAX_TOKENS * 1.6) / 1e6
"""What one of the agent's calls costs at gpt-4.1-mini's price, as the model server reports it:
10,000 tokens read (its 40 KB prompt) and the 100,000 it was allowed to write, $0.164."""
BUDGET = 0.4
"""Two such calls at their worst (about $0.18 each), not three; eight cost $1.31."""

BASE_AGENT = """\
import json, sys
sys.stdin.readline()
print(json.dumps({"type": "final", "content": "the answer"}), flush=True)
"""

HEAD_AGENT = f"""\
import json, os, sys, threading, urllib.error, urllib.request

sys.stdin.readline()
URL = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
AUTH = "Bearer " + os.environ["OPENAI_API_KEY"]


def send(body):
    request = urllib.request.Request(URL, data=json.dumps(body).encode(), method="POST")
    request.add_header("content-type", "application/json")
    request.add_header("authorization", AUTH)
    try:
        return urllib.request.urlopen(request, timeout=60)
    except urllib.error.HTTPError as refused:
        return refused


opened = [None] * {CALLS}


def spend(number):
    prompt = "spend #%d " % number + "x" * {PROMPT_CHARS}
    opened[number] = send({{
        "model": "gpt-4.1-mini", "stream": True, "max_completion_tokens": {MAX_TOKENS},
        "messages": [{{"role": "user", "content": prompt}}],
    }})


threads = [threading.Thread(target=spend, args=(n,)) for n in range({CALLS})]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
# every call is let through or refused, and none has been answered: let the model answer
send({{"model": "gpt-4.1-mini", "max_completion_tokens": 1,
      "messages": [{{"role": "user", "content": "release"}}]}}).read()
statuses = []
for reply in opened:
    reply.read()
    statuses.append(str(reply.status if hasattr(reply, "status") else reply.code))
print(json.dumps({{"type": "final", "content": "the answer " + " ".join(statuses)}}), flush=True)
"""


def test_concurrent_calls_past_what_the_budget_holds_at_their_worst_are_refused(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The head's agent opens eight streamed calls at once, each allowed 100,000 output
    tokens, and the model holds every stream until all eight were let through or refused:
    counted only as their replies arrive, all eight went out and the job spent three times
    its budget. Reserved at their worst, two go out, six are refused, and the job spends
    within the budget."""
    python, isolation = agent_python()
    suite = one_agent_suite(
        "spender",
        "ask",
        command=f"[{python}, agent/spender.py]",
        prompt="ask",
        assertion="{ type: contains, value: answer }",
    )
    base = repo.commit(
        "the agent",
        {"agents.yaml": suite, "agent/spender.py": BASE_AGENT, ".gitignore": ".evalward/\n"},
    )
    repo.branch("change")
    head = repo.commit("spend at once", {"agent/spender.py": HEAD_AGENT})
    answered = threading.Event()

    def released(body: dict[str, Any]) -> bool:
        if "release" not in json.dumps(body):
            return False
        answered.set()
        return True

    model.script(released, text("released"))
    model.script(
        "spend #", text("spent", prompt_tokens=10_000, completion_tokens=MAX_TOKENS, hold=answered)
    )
    inputs = {"max-cost-usd": str(BUDGET), "cache": "off", "agent-isolation": isolation}

    run = gate_pull_request(repo, github, base, head, env, inputs)

    document = json.loads((repo.path / ".evalward/out/results.json").read_text())
    sent = [body for body in model.requests if "spend #" in json.dumps(body)]
    assert document["run"]["spent"]["cost_usd"] <= BUDGET, (len(sent), document["run"]["spent"])
    assert len(sent) == 2
    (head_run,) = [f for f in document["fixtures"] if f["side"] == "head"]
    assert head_run["status"] == "error"
    assert "a model call was refused: the job's cost budget cannot hold" in head_run["message"]
    assert "(max-cost-usd)" in head_run["message"]
    assert (run.returncode, run.outputs["result"]) == (1, "fail")
