"""A pull request's bring-your-own agent calling Google's Gemini API through the model proxy
cannot send what the proxy neither reads nor bounds: a request for several candidates, which
Google writes and bills each up to `maxOutputTokens`, is refused before it leaves however
its count is spelt (the API reads a JSON string or a whole float as the number it holds), so
`max-cost-usd` is never spent past."""

from __future__ import annotations

import json

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, shaped, text
from support.actionrun import gate_pull_request
from support.byoagent import agent_python, one_agent_suite
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

PRICE_IN, PRICE_OUT = 0.3, 2.5
LIMIT = 1_000
CANDIDATES = 4
BUDGET = 0.005
"""One call at its worst (about 2,100 tokens read and the 1,000 it may write, $0.0031), not
the four candidates of 1,000 tokens Google writes and bills for it ($0.0100)."""

BASE_AGENT = """\
import json, sys
sys.stdin.readline()
print(json.dumps({"type": "final", "content": "the answer"}), flush=True)
"""

HEAD_AGENT = """\
import json, os, sys, urllib.error, urllib.request

sys.stdin.readline()
body = {
    "contents": [{"role": "user", "parts": [{"text": "several answers"}]}],
    "generationConfig": {"maxOutputTokens": %d, "candidateCount": %s},
}
request = urllib.request.Request(
    os.environ["GOOGLE_GEMINI_BASE_URL"] + "/v1beta/models/gemini-2.5-flash:generateContent",
    data=json.dumps(body).encode(), method="POST",
)
request.add_header("content-type", "application/json")
request.add_header("x-goog-api-key", os.environ["GOOGLE_API_KEY"])
try:
    status = urllib.request.urlopen(request, timeout=60).status
except urllib.error.HTTPError as refused:
    status = refused.code
print(json.dumps({"type": "final", "content": "the answer %%d" %% status}), flush=True)
"""


def candidates_reply() -> dict[str, object]:
    """Google's reply to `candidateCount` 4: four candidates, each written up to the limit,
    and `usageMetadata` counting them all."""
    candidate = {"content": {"role": "model", "parts": [{"text": "an answer"}]}}
    return {
        "candidates": [
            {**candidate, "finishReason": "MAX_TOKENS", "index": n} for n in range(CANDIDATES)
        ],
        "usageMetadata": {
            "promptTokenCount": 10,
            "candidatesTokenCount": CANDIDATES * LIMIT,
            "totalTokenCount": 10 + CANDIDATES * LIMIT,
        },
        "modelVersion": "gemini-2.5-flash",
        "responseId": "several",
    }


def gemini_pair(
    repo: GitRepo, model: ScriptedModelServer, name: str, head_program: str, eval_spec: str = ""
) -> tuple[str, str]:
    """A command agent `name` whose base answers without a call and whose head is
    `head_program`, under a base evalward.yaml whose provider `gemini` is the scripted model
    server (priced), committed as a pull request's base and head; its Eval's spec has the
    line `eval_spec` too."""
    config = (
        "providers:\n"
        f"  gemini: {{ api: gemini, baseUrl: {model.server.url}, apiKeyEnv: GEMINI_API_KEY }}\n"
        "pricing:\n"
        f"  gemini/gemini-2.5-flash: {{ input: {PRICE_IN}, output: {PRICE_OUT} }}\n"
    )
    suite = one_agent_suite(
        name,
        "ask",
        command=f"[{agent_python()[0]}, agent/{name}.py]",
        prompt="ask",
        assertion="{ type: contains, value: answer }",
        eval_spec=eval_spec,
    )
    base = repo.commit(
        "the agent",
        {
            "agents.yaml": suite,
            f"agent/{name}.py": BASE_AGENT,
            "evalward.yaml": config,
            ".gitignore": ".evalward/\n",
        },
    )
    repo.branch("change")
    return base, repo.commit("the change", {f"agent/{name}.py": head_program})


@pytest.mark.parametrize("count", ['"4"', "4.0"], ids=["a string", "a float"])
def test_several_candidates_asked_for_in_another_json_type_are_refused_before_they_leave(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str], count: str
) -> None:
    """`candidateCount` 4 written as "4" (or 4.0) was read as no number and let through: the
    call was held at one answer's 1,000 tokens while Google wrote and billed four, and the
    job spent $0.0100 of its $0.005. Any `candidateCount` but the number 1 is refused (400,
    naming it), nothing reaches the provider and nothing is spent."""
    base, head = gemini_pair(repo, model, "spender", HEAD_AGENT % (LIMIT, count))
    isolation = agent_python()[1]
    model.script("several answers", shaped(candidates_reply()))
    inputs = {"max-cost-usd": str(BUDGET), "cache": "off", "agent-isolation": isolation}

    gate_pull_request(repo, github, base, head, env | {"GEMINI_API_KEY": "gm-key-1"}, inputs)

    document = json.loads((repo.path / ".evalward/out/results.json").read_text())
    assert document["run"]["spent"]["cost_usd"] <= BUDGET, document["run"]["spent"]
    assert model.calls == []
    (head_run,) = [f for f in document["fixtures"] if f["side"] == "head"]
    (refused,) = head_run["trace"]["proxy_calls"]
    assert refused["status"] == 400 and "candidateCount" in refused["error"], refused
    assert head_run["output"] == "the answer 400"


ASKING_AGENT = """\
import json, os, sys, urllib.error, urllib.request

sys.stdin.readline()
body = {"contents": [{"role": "user", "parts": [{"text": "where does this go"}]}]}
request = urllib.request.Request(
    os.environ["GOOGLE_GEMINI_BASE_URL"] + "/v1beta/models/gemini-2.5-flash:generateContent",
    data=json.dumps(body).encode(), method="POST",
)
request.add_header("content-type", "application/json")
request.add_header("x-goog-api-key", os.environ["GOOGLE_API_KEY"])
try:
    status = urllib.request.urlopen(request, timeout=60).status
except urllib.error.HTTPError as refused:
    status = refused.code
print(json.dumps({"type": "final", "content": "the answer %d" % status}), flush=True)
"""


def test_a_gemini_provider_the_pull_request_adds_is_not_where_calls_go(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The pull request's evalward.yaml adds `api: gemini` at a server of its own, keyed by
    the job's OpenAI key, and its agent calls the model proxy's Gemini route: the provider
    settings are the base commit's, which has no Gemini provider, so the call is refused
    and no key leaves for the pull request's server."""
    python, isolation = agent_python()
    suite = one_agent_suite(
        "asker",
        "ask",
        command=f"[{python}, agent/asker.py]",
        prompt="ask",
        assertion="{ type: contains, value: answer }",
    )
    base = repo.commit(
        "the agent",
        {"agents.yaml": suite, "agent/asker.py": BASE_AGENT, ".gitignore": ".evalward/\n"},
    )
    repo.branch("change")
    config = (
        "providers:\n"
        f"  mine: {{ api: gemini, baseUrl: {model.server.url}, apiKeyEnv: OPENAI_API_KEY }}\n"
    )
    head = repo.commit("ask", {"agent/asker.py": ASKING_AGENT, "evalward.yaml": config})

    gate_pull_request(repo, github, base, head, env, {"cache": "off", "agent-isolation": isolation})

    document = json.loads((repo.path / ".evalward/out/results.json").read_text())
    assert [c.path for c in model.calls if "generateContent" in c.path] == []
    (head_run,) = [f for f in document["fixtures"] if f["side"] == "head"]
    assert head_run["output"] == "the answer 502", head_run
    (refused,) = head_run["trace"]["proxy_calls"]
    assert "no provider that speaks Gemini's API" in refused["error"], refused


THINKING_AGENT = """\
import json, os, sys, urllib.request

sys.stdin.readline()
body = {
    "contents": [{"role": "user", "parts": [{"text": "think at length"}]}],
    "generationConfig": {"maxOutputTokens": 10000},
}
request = urllib.request.Request(
    os.environ["GOOGLE_GEMINI_BASE_URL"]
    + "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
    data=json.dumps(body).encode(), method="POST",
)
request.add_header("content-type", "application/json")
request.add_header("x-goog-api-key", os.environ["GOOGLE_API_KEY"])
urllib.request.urlopen(request, timeout=600).read()
print(json.dumps({"type": "final", "content": "the answer"}), flush=True)
"""
THINKING_HELD_USD = 10_000 * PRICE_OUT / 1e6
"""What the call held for its output while in flight: its 10,000 tokens at $2.50 a million,
$0.025 (its input beside it, 2,000 tokens and its bytes, is about a fortieth)."""


def test_a_stream_the_runs_end_cuts_while_its_model_thinks_is_spent_as_the_budget_held_it(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """A Gemini stream whose model thinks before it writes carries no event while it
    thinks (its thoughts are not streamed), and the run ended first: counted by the text it
    carried, the call cost its input alone ($0.0000027) where Google bills the thinking it
    did, up to `maxOutputTokens`. A stream the run's end cuts is spent at what it held, as
    a whole reply the run's end cuts is, in the budget and in results.json."""
    base, head = gemini_pair(
        repo, model, "thinker", THINKING_AGENT, eval_spec="execution: { timeoutSeconds: 2 }"
    )
    isolation = agent_python()[1]
    model.script("think at length", text("thought", event_delay=600))  # none before the end
    inputs = {"max-cost-usd": "1.0", "cache": "off", "agent-isolation": isolation}

    gate_pull_request(repo, github, base, head, env | {"GEMINI_API_KEY": "gm-key-1"}, inputs)

    document = json.loads((repo.path / ".evalward/out/results.json").read_text())
    (head_run,) = [f for f in document["fixtures"] if f["side"] == "head"]
    (cut,) = head_run["trace"]["proxy_calls"]
    assert cut["streamed"] and "the run ended before the stream did" in cut["error"], cut
    spent = document["run"]["spent"]
    assert THINKING_HELD_USD < spent["cost_usd"] < 1.1 * THINKING_HELD_USD, spent
    assert cut["usage"]["cost_usd"] == pytest.approx(spent["cost_usd"]), cut
