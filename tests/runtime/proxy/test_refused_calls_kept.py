"""A run's trace keeps a record of the first 100 requests its model proxy refused, each with
its path and message cut to a bound, and counts the rest on one record after them: an agent
that sends requests the proxy refuses (they cost it nothing) cannot grow what evalward holds
and writes with each one. Through `evalward run` on a real repository, an agent sends 300
requests of a 7,000-character path; the run's trace shows 100 of them and says the other 200
were not kept."""

from __future__ import annotations

import json
import sys

import pytest

from evalward.runtime.proxy.call_record import ENDPOINT_CHARS, MAX_REFUSALS_KEPT, REFUSAL_CHARS
from support.byoagent import one_agent_suite
from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

AGENT = """\
import json, os, sys, urllib.error, urllib.request
sys.stdin.readline()
base, key = os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"]
statuses = set()
for number in range(300):
    request = urllib.request.Request(
        base + "/" + str(number) + "x" * 7000, headers={"authorization": "Bearer " + key}
    )
    try:
        urllib.request.urlopen(request, timeout=60).read()
    except urllib.error.HTTPError as failed:
        failed.read()
        statuses.add(failed.code)
print(json.dumps({"type": "final", "content": "refused with " + json.dumps(sorted(statuses))}))
"""


def test_a_run_keeps_the_first_refused_requests_and_counts_the_rest(repo: GitRepo) -> None:
    repo.commit(
        "an agent that sends 300 requests the proxy refuses",
        {
            "agents.yaml": one_agent_suite(
                "knocker",
                "knock",
                command=f"{{ run: [{sys.executable}, agent/agent.py] }}",
                prompt="say hello",
                assertion="{ type: contains, value: refused }",
            ),
            "agent/agent.py": AGENT,
        },
    )
    done = evalward("run", ".", "--json", "--no-history", cwd=repo.path)
    assert done.returncode != 4, done.stderr[-3000:]
    (fixture,) = json.loads(done.stdout)["fixtures"]
    trace = fixture["trace"]
    finals = [s["content"] for s in trace["steps"] if s["type"] == "final"]
    assert finals == ["refused with [404]"], trace["steps"]
    *kept, unkept = trace["proxy_calls"]
    assert len(kept) == MAX_REFUSALS_KEPT
    assert [c["endpoint"][:9] for c in kept[:2]] == ["GET /v1/0", "GET /v1/1"]
    for call in kept:
        assert call["status"] == 404
        assert len(call["endpoint"]) <= ENDPOINT_CHARS + 1
        assert len(call["error"]) <= REFUSAL_CHARS + 1
    assert unkept["error"] == (
        "200 more refused requests were not kept: a run keeps the first 100 the proxy refused"
    )
    assert trace["model_calls"] == 0
