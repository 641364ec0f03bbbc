"""`max-cost-usd` holds calls in flight: a pull request's bring-your-own agent that opens many
expensive calls at once, before any reply is counted, is let through only the calls whose
worst case (what the request's size can make it read, and the output it may write) the
budget can still hold beside them; the rest wait for those to settle and, what is left then
holding none of them, are refused (429), so the job spends within the budget, and the run is
an error naming the limit."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, shaped, text
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
statuses = []
for reply in opened:
    reply.read()
    statuses.append(str(reply.status if hasattr(reply, "status") else reply.code))
print(json.dumps({{"type": "final", "content": "the answer " + " ".join(statuses)}}), flush=True)
"""


def spender(
    repo: GitRepo,
    head_program: str,
    *,
    assertion: str = "{ type: contains, value: answer }",
    eval_spec: str = "",
) -> tuple[str, str]:
    """A command agent `spender` whose base answers without a call and whose head is
    `head_program`, committed as a pull request's base and head; its fixture checks
    `assertion`, and its Eval's spec has the line `eval_spec` too (a judge, a timeout)."""
    python, _ = agent_python()
    suite = one_agent_suite(
        "spender",
        "ask",
        command=f"[{python}, agent/spender.py]",
        prompt="ask",
        assertion=assertion,
        eval_spec=eval_spec,
    )
    base = repo.commit(
        "the agent",
        {"agents.yaml": suite, "agent/spender.py": BASE_AGENT, ".gitignore": ".evalward/\n"},
    )
    repo.branch("change")
    return base, repo.commit("spend", {"agent/spender.py": head_program})


def inputs(budget: float) -> dict[str, str]:
    return {"max-cost-usd": str(budget), "cache": "off", "agent-isolation": agent_python()[1]}


def test_concurrent_calls_past_what_the_budget_holds_at_their_worst_are_refused(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The head's agent opens eight streamed calls at once, each allowed 100,000 output
    tokens, and the model holds every stream until two have reached it: counted only as
    their replies arrive, all eight went out and the job spent three times its budget.
    Reserved at their worst, two go out; the six others wait for them, and once their
    replies spent $0.33 none fits what is left: they are refused, and the job spends within
    the budget."""
    base, head = spender(repo, HEAD_AGENT)
    answered, arrived = threading.Event(), []

    def spending(body: dict[str, Any]) -> bool:
        if "spend #" not in json.dumps(body):
            return False
        arrived.append(body)
        if len(arrived) >= 2:
            answered.set()
        return True

    model.script(
        spending, text("spent", prompt_tokens=10_000, completion_tokens=MAX_TOKENS, hold=answered)
    )

    run = gate_pull_request(repo, github, base, head, env, inputs(BUDGET))

    document = json.loads((repo.path / ".evalward/out/results.json").read_text())
    sent = [body for body in model.requests if "spend #" in json.dumps(body)]
    assert document["run"]["spent"]["cost_usd"] <= BUDGET, (len(sent), document["run"]["spent"])
    assert len(sent) == 2
    (head_run,) = [f for f in document["fixtures"] if f["side"] == "head"]
    assert head_run["status"] == "error"
    assert "a model call was refused: the job's cost budget cannot hold" in head_run["message"]
    assert "(max-cost-usd)" in head_run["message"]
    assert (run.returncode, run.outputs["result"]) == (1, "fail")


BACKGROUND_AGENT = """\
import json, os, sys, urllib.error, urllib.request

sys.stdin.readline()
body = {
    "model": "gpt-4.1-mini", "background": True, "store": True, "max_output_tokens": 100000,
    "input": "write in the background",
}
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/responses", data=json.dumps(body).encode(), method="POST"
)
request.add_header("content-type", "application/json")
request.add_header("authorization", "Bearer " + os.environ["OPENAI_API_KEY"])
try:
    status = urllib.request.urlopen(request, timeout=60).status
except urllib.error.HTTPError as refused:
    status = refused.code
print(json.dumps({"type": "final", "content": "the answer %d" % status}), flush=True)
"""
QUEUED = {
    "id": "resp_bg",
    "object": "response",
    "created_at": 0,
    "status": "queued",
    "background": True,
    "model": "gpt-4.1-mini",
    "output": [],
    "usage": None,
}
"""OpenAI's answer to a background request: the response is written later, and its usage
read from `GET /v1/responses/{id}`, a route the model proxy does not serve."""


def test_a_background_response_whose_output_and_usage_come_later_is_refused(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """A Responses request with `background: true` is answered at once, queued, with no
    usage: the proxy counted it as its input alone ($0.0000036) while the provider went on
    to write up to 100,000 tokens nobody counted, and the gate passed. It is refused before
    it leaves (400, naming `background`), so nothing is spent on it."""
    base, head = spender(repo, BACKGROUND_AGENT)
    model.script("in the background", shaped(QUEUED))
    model.check_contract = False  # the queued reply is OpenAI's, not the fake's rendering

    run = gate_pull_request(repo, github, base, head, env, inputs(1.0))
    assert run.returncode == 0, run.stderr[-2000:]

    document = json.loads((repo.path / ".evalward/out/results.json").read_text())
    assert [body for body in model.requests if body.get("background")] == []
    (head_run,) = [f for f in document["fixtures"] if f["side"] == "head"]
    assert head_run["output"] == "the answer 400"
    (refused,) = head_run["trace"]["proxy_calls"]
    assert refused["status"] == 400 and "`background`" in refused["error"]
    assert document["run"]["spent"]["model_calls"] == 0


CACHING_AGENT = """\
import json, os, sys, urllib.error, urllib.request

sys.stdin.readline()
system = [{"type": "text", "text": "Be thorough. " * 31000, "cache_control": {"type": "ephemeral"}}]
body = {
    "model": "claude-haiku-4-5", "max_tokens": 100, "system": system,
    "messages": [{"role": "user", "content": "cache this"}],
}
request = urllib.request.Request(
    os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages", data=json.dumps(body).encode(), method="POST"
)
request.add_header("content-type", "application/json")
request.add_header("x-api-key", os.environ["ANTHROPIC_API_KEY"])
request.add_header("anthropic-version", "2023-06-01")
try:
    status = urllib.request.urlopen(request, timeout=60).status
except urllib.error.HTTPError as refused:
    status = refused.code
print(json.dumps({"type": "final", "content": "the answer %d" % status}), flush=True)
"""
CACHE_WRITTEN = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-haiku-4-5",
    "content": [{"type": "text", "text": "cached"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 10,
        "cache_creation_input_tokens": 100_000,
        "cache_read_input_tokens": 0,
        "output_tokens": 5,
    },
}
"""Anthropic's reply to a request whose 400 KB system prompt it wrote to its prompt cache: its
`input_tokens` are the 10 after the cache's breakpoint, and the 100,000 it wrote, billed at
1.25 times the input price ($0.125 at claude-haiku-4-5's), are counted apart."""


def test_what_anthropic_wrote_to_its_prompt_cache_is_counted(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """A call whose system prompt is marked `cache_control` is billed for the tokens written
    to the cache, which Anthropic's `input_tokens` leaves out: counted by `input_tokens`
    alone, the call cost $0.000035 against the budget and the run's usage, where it is billed
    $0.125."""
    base, head = spender(repo, CACHING_AGENT)
    model.script("cache this", shaped(CACHE_WRITTEN))
    model.check_contract = False  # the reply is Anthropic's, not the fake's rendering
    anthropic = {"ANTHROPIC_BASE_URL": model.anthropic_url, "ANTHROPIC_API_KEY": "sk-ant-test"}

    run = gate_pull_request(repo, github, base, head, env | anthropic, inputs(1.0))

    assert run.returncode == 0, run.stderr[-2000:]
    document = json.loads((repo.path / ".evalward/out/results.json").read_text())
    assert len(model.requests) == 1
    assert document["run"]["spent"]["cost_usd"] >= 100_000 * 1.25 / 1e6


PRIORITY_AGENT = """\
import json, os, sys, urllib.error, urllib.request

sys.stdin.readline()
body = {
    "model": "gpt-4.1-mini", "service_tier": "priority", "max_completion_tokens": 1000,
    "messages": [{"role": "user", "content": "answer first"}],
}
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=json.dumps(body).encode(),
    method="POST",
)
request.add_header("content-type", "application/json")
request.add_header("authorization", "Bearer " + os.environ["OPENAI_API_KEY"])
try:
    status = urllib.request.urlopen(request, timeout=60).status
except urllib.error.HTTPError as refused:
    status = refused.code
print(json.dumps({"type": "final", "content": "the answer %d" % status}), flush=True)
"""


def test_a_call_for_a_service_tier_billed_above_the_price_table_is_refused(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """OpenAI bills `service_tier: priority` at up to twice the standard prices the price
    table holds, so the budget counted such a call at half what it cost: while `max-cost-usd`
    is set it is refused as a model with no price is, and the run is an error."""
    base, head = spender(repo, PRIORITY_AGENT)

    run = gate_pull_request(repo, github, base, head, env, inputs(1.0))

    document = json.loads((repo.path / ".evalward/out/results.json").read_text())
    assert [body for body in model.requests if body.get("service_tier")] == []
    (head_run,) = [f for f in document["fixtures"] if f["side"] == "head"]
    assert head_run["status"] == "error"
    assert "service_tier 'priority'" in head_run["message"]
    assert (run.returncode, run.outputs["result"]) == (1, "fail")


LONG_TRACE_AGENT = """\
import json, sys

sys.stdin.readline()
for number in range(200):
    call = "c%d" % number
    print(json.dumps({"type": "tool_call", "tool": "lookup", "arguments": {}, "id": call}))
    print(json.dumps({"type": "tool_result", "tool": "lookup", "output": "x" * 8000, "id": call}))
print(json.dumps({"type": "final", "content": "the answer"}), flush=True)
"""
VERDICT = json.dumps(
    {"score": 1, "confidence": 1, "summary": "It answered.", "violations": [],
     "what_would_raise_score": "nothing"}
)  # fmt: skip


def test_a_judge_asked_to_read_a_long_run_is_held_to_the_budget_at_its_worst(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The head's agent makes no model call but prints a run of 1.6 MB (200 tool results of
    8 KB, each shown to the judge whole), so the judge the plan counted at a few cents reads
    400,000 tokens: asked regardless of the budget, it cost three times the whole of it. Held
    at its worst, it is refused, the judge cannot grade the run, and the gate fails."""
    base, head = spender(
        repo,
        LONG_TRACE_AGENT,
        assertion="{ type: judge, rubric: Answers the question., minScore: 0.5 }",
        eval_spec="judge: { model: openai/gpt-4.1-mini }",
    )

    def long_read(body: dict[str, Any]) -> bool:
        return "Grade the run" in json.dumps(body) and len(json.dumps(body)) > 1_000_000

    model.script(long_read, text(VERDICT, prompt_tokens=400_000))
    model.script("Grade the run", text(VERDICT))

    run = gate_pull_request(repo, github, base, head, env, inputs(0.05))

    document = json.loads((repo.path / ".evalward/out/results.json").read_text())
    assert document["run"]["spent"]["cost_usd"] <= 0.05, document["run"]["spent"]
    assert [body for body in model.requests if long_read(body)] == []
    (head_run,) = [f for f in document["fixtures"] if f["side"] == "head"]
    assert head_run["status"] == "error", head_run["status"]
    assert "the job's cost budget cannot hold this call" in json.dumps(head_run)
    assert (run.returncode, run.outputs["result"]) == (1, "fail")


CUT_AGENT = """\
import json, os, sys, urllib.request

sys.stdin.readline()
body = {
    "model": "gpt-4.1-mini", "max_completion_tokens": 10000,
    "messages": [{"role": "user", "content": "answer at your leisure"}],
}
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=json.dumps(body).encode(),
    method="POST",
)
request.add_header("content-type", "application/json")
request.add_header("authorization", "Bearer " + os.environ["OPENAI_API_KEY"])
urllib.request.urlopen(request, timeout=600).read()
print(json.dumps({"type": "final", "content": "the answer"}), flush=True)
"""
CUT_HELD_USD = 10_000 * 1.6 / 1e6
"""What the call held for its output while in flight: its 10,000 tokens at gpt-4.1-mini's
price, $0.016 (its input beside it, 2,000 tokens and its bytes, is less than a tenth)."""


def test_a_whole_reply_cut_at_the_runs_end_is_spent_in_results_as_the_budget_counted_it(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The head's agent waits for a whole reply the model never sends before the run's time
    is up: the call is cut, and `max-cost-usd` counts it at the most it could cost (it was
    sent, and what it cost is unknown). results.json's spending said $0 where the budget
    had counted $0.017: it now says what the budget counted, and so does the call's record
    in the run's trace."""
    base, head = spender(repo, CUT_AGENT, eval_spec="execution: { timeoutSeconds: 2 }")
    model.script("at your leisure", text("late", delay=600))  # answered only as it closes

    run = gate_pull_request(repo, github, base, head, env, inputs(1.0))

    document = json.loads((repo.path / ".evalward/out/results.json").read_text())
    (head_run,) = [f for f in document["fixtures"] if f["side"] == "head"]
    (cut,) = head_run["trace"]["proxy_calls"]
    assert "the run ended before this call was answered" in cut["error"], cut
    spent = document["run"]["spent"]
    assert CUT_HELD_USD < spent["cost_usd"] < 1.1 * CUT_HELD_USD, spent
    assert spent["model_calls"] == 1, spent
    assert cut["usage"]["cost_usd"] == pytest.approx(spent["cost_usd"]), cut
    assert (run.returncode, run.outputs["result"]) == (1, "fail")
