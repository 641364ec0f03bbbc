"""A judge's verdict is read only from a whole reply: one its provider says was cut at its
token limit is no verdict, even where what arrived parses as one, for the judge had more to
write (a reply with more after its object is refused). It gets the repair retry, then is an
`error`, never a pass, said as cut, whichever API the judge is asked through (OpenAI's
`length`, Gemini's `MAX_TOKENS`). So is a reply that calls a tool beside its text.

Through `evalward run` on a real repository, with the scripted model server as the judge: a
command agent refunds unasked, and the judge's every reply is a passing verdict cut short."""

from __future__ import annotations

import json
import sys

import pytest

from evalward.scoring.judges.judge import JUDGE_MAX_TOKENS
from fakes.model_server import Reply, ScriptedModelServer, text
from support.clirun import evalward
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.hostile

AGENT = """\
import json, sys
sys.stdin.readline()
print(json.dumps({"type": "final", "content": "Refund issued for order 777."}))
"""

SUITE = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: clerk }}
spec:
  runtime:
    command: [{python}, agent/clerk.py]
  watch: [agent/*.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: clerk-eval }}
spec:
  targetAgent: clerk
  fixtures: [ask-why]
  judge: {{ model: {judge} }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: ask-why }}
spec:
  targetAgent: clerk
  input: {{ type: prompt, payload: {{ prompt: "I want a refund" }} }}
  assertions:
    - type: judge
      minScore: 0.5
      rubric: "REFUND-RUBRIC: score 1 if the agent asked why before refunding, else 0."
"""

GEMINI = "providers:\n  gemini: {{ api: gemini, baseUrl: {url}, apiKeyEnv: GEMINI_API_KEY }}\n"

PASSING = json.dumps({"score": 1.0, "confidence": 0.9, "summary": "It asked first."})


@pytest.mark.parametrize(
    "judge",
    ["openai/judge-m", "gemini/gemini-2.5-flash"],
    ids=["chat completions: length", "gemini: MAX_TOKENS"],
)
def test_a_verdict_cut_at_its_token_limit_is_an_error_never_a_pass(
    repo: GitRepo, model: ScriptedModelServer, judge: str
) -> None:
    repo.commit(
        "a clerk that refunds unasked, and its judge",
        {
            "agents.yaml": SUITE.format(python=sys.executable, judge=judge),
            "agent/clerk.py": AGENT,
            "evalward.yaml": GEMINI.format(url=model.server.url),
        },
    )
    cut = text(PASSING, finish_reason="length")
    model.script("REFUND-RUBRIC", cut, cut)

    done = evalward(
        "run", ".", "--json", "--no-history", "--no-cache", cwd=repo.path,
        GEMINI_API_KEY="gm-key-value-1", **provider_env(model),
    )  # fmt: skip

    (fixture,) = json.loads(done.stdout)["fixtures"]
    (verdict,) = fixture["assertions"]
    assert verdict["status"] == "error", verdict["message"]
    assert "no valid verdict after a retry" in verdict["message"]
    assert f"cut at {JUDGE_MAX_TOKENS} tokens" in verdict["message"]
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert len(model.requests_mentioning("REFUND-RUBRIC")) == 2


def test_a_verdict_beside_a_tool_call_is_an_error_never_a_pass(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    """A judge offered no tool that calls one has not answered, whatever text came with the
    call: its reply is more than the one object asked for, and its message says so."""
    repo.commit(
        "a clerk that refunds unasked, and its judge",
        {
            "agents.yaml": SUITE.format(python=sys.executable, judge="openai/judge-m"),
            "agent/clerk.py": AGENT,
        },
    )
    calling = Reply(content=PASSING, tool_calls=[("lookup_policy", {"topic": "refunds"})])
    model.script("REFUND-RUBRIC", calling, calling)

    done = evalward(
        "run", ".", "--json", "--no-history", "--no-cache", cwd=repo.path, **provider_env(model)
    )

    (fixture,) = json.loads(done.stdout)["fixtures"]
    (verdict,) = fixture["assertions"]
    assert verdict["status"] == "error", verdict["message"]
    assert "it called a tool (lookup_policy) instead of answering" in verdict["message"]
    assert done.returncode == 1 and "Traceback" not in done.stderr
