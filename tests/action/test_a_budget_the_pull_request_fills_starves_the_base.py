"""A pull request that fills `max-cost-usd` with an Eval of its own, so that what the
estimate leaves for the calls it cannot count ahead holds no call of the base's program at its
worst: the base's runs are refused their calls and fail, and the regression they would show
is not seen."""

from __future__ import annotations

import json

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import gate_pull_request
from support.byoagent import agent_python
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

PROGRAM = """\
import json, os, sys, urllib.request

prompt = json.loads(sys.stdin.readline())["messages"][-1]["content"]
body = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "SIDE " + prompt}]}
LIMIT
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=json.dumps(body).encode())
request.add_header("content-type", "application/json")
request.add_header("authorization", "Bearer " + os.environ["OPENAI_API_KEY"])
with urllib.request.urlopen(request, timeout=60) as reply:
    said = json.loads(reply.read())["choices"][0]["message"]["content"]
print(json.dumps({"type": "final", "content": said}), flush=True)
"""
"""The agent: one call, its reply the answer. The base names no output limit (held at the
most a priced model writes, 128,000 tokens: $0.2048 at gpt-4.1-mini's price)."""


def suite(python: str) -> str:
    return f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: desk }}
spec:
  runtime:
    command: [{python}, agent/desk.py]
  watch: [agent/*.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: desk-eval }}
spec:
  targetAgent: desk
  fixtures: [one, two]
  scoring: {{ passThreshold: 0.5, gate: {{ failOnRegression: any }} }}
  execution: {{ parallel: 1 }}  # one call in flight at a time: each fits $0.30 alone
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: one }}
spec:
  targetAgent: desk
  input: {{ type: prompt, payload: {{ prompt: "question one" }} }}
  assertions:
    - {{ type: contains, value: answer }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: two }}
spec:
  targetAgent: desk
  input: {{ type: prompt, payload: {{ prompt: "question two" }} }}
  assertions:
    - {{ type: contains, value: answer }}
"""


FILLER = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: filler }
spec:
  models: [openai/gpt-4.1-mini]
  systemFile: filler/system.md
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: filler-eval }
spec:
  targetAgent: filler
  fixtures: [f1, f2, f3, f4, f5, f6, f7, f8]
""" + "".join(
    f"""---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: f{n} }}
spec:
  targetAgent: filler
  input: {{ type: prompt, payload: {{ prompt: "filler {n}" }} }}
  assertions:
    - {{ type: contains, value: fine }}
"""
    for n in range(1, 9)
)
"""An Eval the pull request adds: a declarative agent whose 160 KB system prompt the estimate
counts at 40,000 tokens a call, four fixtures ($0.064 set aside ahead at gpt-4.1-mini)."""


def change(repo: GitRepo, *, filler: bool) -> tuple[str, str]:
    python, _ = agent_python()
    base_program = PROGRAM.replace("SIDE", "BASE").replace("LIMIT\n", "")
    base = repo.commit(
        "the agent",
        {
            "agents.yaml": suite(python),
            "agent/desk.py": base_program,
            ".gitignore": ".evalward/\n",
        },
    )
    repo.branch("change")
    head_program = PROGRAM.replace("SIDE", "HEAD").replace(
        "LIMIT", 'body["max_completion_tokens"] = 50'
    )
    files = {"agent/desk.py": head_program}
    if filler:
        files |= {"filler.yaml": FILLER, "filler/system.md": "Be fine. " * 17_800}
    return base, repo.commit("the change", files)


@pytest.mark.parametrize("filler", [False, True], ids=["alone", "budget-filled"])
def test_a_regression_is_not_hidden_by_starving_the_base_of_its_budget(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    filler: bool,
) -> None:
    """The head answers fixture two wrongly (a regression: the base answers it), within the
    Eval's 0.5 threshold. Alone, the base's calls fit the $0.30 budget and the regression
    blocks. With an Eval of the pull request's own set aside ahead ($0.13), what is left
    holds no call of the base's at its worst ($0.2056): its runs are refused and fail, which
    read as the base failing fixture two and passed the gate (exit 0). They are no baseline:
    the Eval is incomplete, and the gate does not pass."""
    model.script("HEAD question two", text("nope"))
    model.script("question", text("the answer"))
    model.script("filler", text("fine"))
    base, head = change(repo, filler=filler)
    inputs = {
        "max-cost-usd": "0.30",
        "allow-incomplete": "true",  # excuses runs a budget the base cannot fit skips, not these
        "cache": "off",
        "agent-isolation": agent_python()[1],
    }

    run = gate_pull_request(repo, github, base, head, env, inputs)

    document = json.loads((repo.path / ".evalward/out/results.json").read_text())
    runs = {(f["eval"], f["fixture"], f["side"]): f for f in document["fixtures"]}
    assert runs[("desk-eval", "two", "head")]["status"] == "fail", runs
    said = run.stdout + run.stderr
    assert run.returncode == 1, said
    if not filler:  # the base's calls fit: the regression blocks
        assert "regression, passed on base and fails on head" in said, said
        return
    refused = runs[("desk-eval", "two", "base")]
    assert refused["status"] == "error" and refused["budget_refused"], refused
    assert "cannot hold this call" in refused["message"], refused
    assert "budget refused a model call of 2 of its base runs" in said, said
    assert run.outputs["result"] in ("fail", "incomplete"), run.outputs


LONG_BASE = """\
import json, sys

question = json.loads(sys.stdin.readline())["messages"][-1]["content"]
for number in range(200):
    call = "c%d" % number
    print(json.dumps({"type": "tool_call", "tool": "lookup", "arguments": {}, "id": call}))
    print(json.dumps({"type": "tool_result", "tool": "lookup", "output": "x" * 8000, "id": call}))
print(json.dumps({"type": "final", "content": "the answer"}), flush=True)
"""
"""The base's agent: a run of 1.6 MB, which its judge reads whole (400,000 tokens at its
worst, $0.16 at gpt-4.1-mini's price)."""
SHORT_HEAD = """\
import json, sys

question = json.loads(sys.stdin.readline())["messages"][-1]["content"]
said = "nope" if "two" in question else "the answer"
print(json.dumps({"type": "final", "content": said}), flush=True)
"""
"""The head's agent: short runs, and a wrong answer to fixture two."""
VERDICT = json.dumps(
    {"score": 1, "confidence": 1, "summary": "It answered.", "violations": [],
     "what_would_raise_score": "nothing"}
)  # fmt: skip


def test_a_base_run_whose_judge_the_budget_refused_is_no_baseline(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The base's runs are judged, and the budget cannot hold their judge's calls at their
    worst: refused, the judge cannot grade them and they are errors, which read as the base
    failing fixture two, the head's regression of it unseen (exit 0). A judge the budget
    refused says nothing of the base: the Eval is incomplete."""
    python, _ = agent_python()
    judged = (
        suite(python)
        .replace("[{python}, agent/desk.py]", f"[{python}, agent/desk.py]")
        .replace(
            "  fixtures: [one, two]\n",
            "  fixtures: [one, two]\n  judge: { model: openai/gpt-4.1-mini }\n",
        )
        .replace(
            "    - { type: contains, value: answer }\n",
            "    - { type: contains, value: answer }\n"
            "    - { type: judge, rubric: Answers the question., minScore: 0.5 }\n",
        )
    )
    base = repo.commit(
        "the agent",
        {"agents.yaml": judged, "agent/desk.py": LONG_BASE, ".gitignore": ".evalward/\n"},
    )
    repo.branch("change")
    head = repo.commit("short answers", {"agent/desk.py": SHORT_HEAD})
    model.script("Grade the run", text(VERDICT))
    inputs = {
        "max-cost-usd": "0.05",
        "cache": "off",
        "agent-isolation": python and agent_python()[1],
    }

    run = gate_pull_request(repo, github, base, head, env, inputs)

    document = json.loads((repo.path / ".evalward/out/results.json").read_text())
    runs = {(f["fixture"], f["side"]): f for f in document["fixtures"]}
    assert runs[("two", "head")]["status"] == "fail", runs
    refused = runs[("two", "base")]
    assert refused["status"] == "error", refused
    assert "cannot hold this call" in json.dumps(refused["assertions"]), refused
    said = run.stdout + run.stderr
    assert run.returncode == 1, said
    assert refused["budget_refused"], refused
    assert "budget refused a model call of 2 of its base runs" in said, said
