"""A pull request chooses what its variants spend. The search starts a trial while the budget
left covers what the gate's runs of the regressing fixtures made; a variant whose program
makes no model call at all (it gives up at once, or sleeps to the fixture's timeout) spent
nothing, so every trial found the whole budget still there and the search ran to its cap of
trials, each as long as the pull request makes it: attribution, which runs before the
comment and the check are written, took as long as 24 timeouts per regression. A trial
counts against the budget at least what it was expected to need."""

from __future__ import annotations

import json
import sys

import pytest

from fakes.model_server import ScriptedModelServer, text
from support.clirun import run_for_results
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.hostile

GUARDS = 12
"""The head's program's hunks: each a line apart, each needed for the program to call."""

PROGRAM = """\
import json, os, sys, urllib.request

request = json.loads(sys.stdin.readline())
{guards}
RULES = "{rules}"
if len([name for name in dir() if name.startswith("GUARD_")]) != {count}:
    print(json.dumps({{"type": "final", "content": "gave up"}}), flush=True)
    sys.exit(0)
for _ in range({calls}):
    body = {{"model": "gpt-4.1-mini", "messages": [{{"role": "user", "content": RULES}}]}}
    asked = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={{
            "content-type": "application/json",
            "authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
        }},
    )
    with urllib.request.urlopen(asked, timeout=30) as reply:
        answer = json.load(reply)["choices"][0]["message"]["content"]
print(json.dumps({{"type": "final", "content": answer}}), flush=True)
"""
"""A clerk that gives up, with no call, unless it holds `count` guards, and otherwise asks the
model `calls` times with `rules`."""

SUITE = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: clerk }}
spec:
  runtime:
    command: [{sys.executable}, agent/clerk.py]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: clerk-eval }}
spec:
  targetAgent: clerk
  fixtures: [refund]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: refund }}
spec:
  targetAgent: clerk
  input: {{ type: prompt, payload: {{ prompt: "refund order 1" }} }}
  assertions: [{{ type: contains, value: approved }}]
"""


def _program(guards: int, rules: str, count: int | None = None, calls: int = 1) -> str:
    """The clerk with its first `guards` guards, each a line of its own among the parts, that
    asks the model while it holds `count` of them (by default as many)."""
    lines = "".join(
        f"# part {n}\n" + (f"GUARD_{n} = {n}\n" if n < guards else "") for n in range(GUARDS)
    )
    held = guards if count is None else count
    return PROGRAM.format(guards=lines, rules=rules, count=held, calls=calls)


def test_variants_that_make_no_call_still_count_against_the_budget(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    model.script(lambda body: "NEVER REFUND" in json.dumps(body), text("refused"))
    model.script(lambda body: True, text("approved"))
    repo.commit(
        "the clerk",
        {
            "agents.yaml": SUITE,
            "agent/clerk.py": _program(0, "Refunds are approved."),
            ".gitignore": ".evalward/\nout/\n",
            "evalward.yaml": "attribution: { mode: on-block, budget: 3 }\n",
        },
    )
    repo.branch("guarded")
    # every guard a hunk of its own; the head calls the model (a call a run, as the base
    # does) and is told NEVER REFUND; each variant that lacks a guard makes no call
    repo.commit("a guarded clerk", {"agent/clerk.py": _program(GUARDS, "NEVER REFUND.")})

    code, results, said = run_for_results(repo.path, "--base", "main", **provider_env(model))

    assert code == 1, said[-3000:]
    section = results["attribution"]
    assert section["budgetModelCalls"] == 6  # 3 × the run's two calls, base and head
    (regression,) = section["regressions"]
    # each trial needs about one call (what the gate's runs of the fixture made)
    assert len(regression["trials"]) <= 6, [t["hunks"] for t in regression["trials"]]
    assert regression["reason"].startswith("attribution stopped at its budget"), regression
    assert "variants counted for 6 though they made 0" in regression["reason"], regression
    # every hunk of the change, those no trial reached too: the guards, and the rules with
    # the count on the line after them
    hunks = [(h["path"], h["first"]) for h in regression["hunks"]]
    assert len(hunks) == GUARDS + 1 and len(set(hunks)) == len(hunks), hunks


def test_a_head_that_makes_no_call_cannot_make_its_variants_count_for_less_than_the_base(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    """Under adaptive reps a variant counts at least one run of its fixture, as the base ran
    it: the base's program asks the model twice a run, and the pull request's, whose every
    guard is a hunk, gives up at once with none, as does every variant of it. Had the floor
    been the fewest calls any gate run made, the head's runs would have made it nothing (one
    call, the least a trial counts) and the search would run five variants of the budget's
    six calls, each as long as the pull request makes it; it runs three."""
    model.script(lambda body: True, text("approved"))
    reps = "  execution: { reps: { min: 1, max: 8 } }\n"
    adaptive = SUITE.replace("  fixtures: [refund]\n", f"  fixtures: [refund]\n{reps}")
    repo.commit(
        "the clerk",
        {
            "agents.yaml": adaptive,
            "agent/clerk.py": _program(0, "refund?", count=0, calls=2),
            ".gitignore": ".evalward/\nout/\n",
            "evalward.yaml": "attribution: { mode: on-block, budget: 3 }\n",
        },
    )
    repo.branch("guarded")
    guarded = _program(GUARDS, "refund?", count=0, calls=2)  # any guard: it gives up
    repo.commit("a guarded clerk", {"agent/clerk.py": guarded})

    # the result cache on, as by default: the variants read the base's run from it
    code, results, said = run_for_results(
        repo.path, "--base", "main", cache=True, **provider_env(model)
    )

    assert code == 1, said[-3000:]
    assert results["run"]["spent"]["model_calls"] == 2  # the base's one run; the head's none
    section = results["attribution"]
    assert (section["budgetModelCalls"], section["spentModelCalls"]) == (6, 0)
    (regression,) = section["regressions"]
    assert len(regression["trials"]) == 3, [t["hunks"] for t in regression["trials"]]
    assert "variants counted for 6 though they made 0" in regression["reason"], regression
