"""A pull request with something of every kind for report.html: a regression whose judge cites
a step, a fix, a flaky fixture over reps, a new fixture, a held-out one, an agent reply that
tries to inject markup, and seed 001's axes on two fixtures. Run through `evalward run --base
main` as a user would; also used by scripts/report_screenshots.py to take the docs' pictures."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from fakes.model_server import ScriptedModelServer, text, tool_call
from support.clirun import evalward
from support.gitrepo import GitRepo
from support.suite import LOOKUP_ORDER

HOSTILE = (
    'Sure! <img src=x onerror="window.__pwned=1"> </script><script>window.__pwned=2</script> '
    "<!-- <iframe src=https://evil.example/></iframe> \u2028 done"
)
PRIVATE_OUTPUT = "PRIVATE-OUTPUT-d41d8cd9"

AGENT = (
    """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: support-bot }}
spec:
  models: [openai/gpt-test]
  system: "You are the support agent of Acme. Prompt version {version}."
  tools:
"""
    + LOOKUP_ORDER
)

EVALS = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: support-bot-eval }
spec:
  targetAgent: support-bot
  fixtureSelector: { matchLabels: { suite: support } }
  judge: { model: openai/judge-test }
  scoring: { passThreshold: 0.9 }
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: support-bot-reps }
spec:
  targetAgent: support-bot
  fixtureSelector: { matchLabels: { suite: reps } }
  scoring: { passThreshold: 0.5 }
  execution: { repsPerFixture: 3 }
"""


def fixture(
    name: str,
    prompt: str,
    assertions: str,
    *,
    suite: str = "support",
    severity: str = "medium",
    private: bool = False,
) -> str:
    visibility = "  visibility: private\n" if private else ""
    return (
        "apiVersion: evalward.dev/v1\nkind: EvalFixture\n"
        f"metadata: {{ name: {name}, labels: {{ suite: {suite} }} }}\n"
        f"spec:\n  targetAgent: support-bot\n  severity: {severity}\n{visibility}"
        f"  input: {{ type: prompt, payload: {{ prompt: {json.dumps(prompt)} }} }}\n"
        f"  assertions:\n{assertions}"
    )


FIXTURES = {
    "evals/order-status.yaml": fixture(
        "order-status",
        "Where is my order 12345?",
        "    - { type: toolCalled, tool: lookup_order, axis: tools }\n"
        "    - { type: contains, value: shipped, axis: answer }\n",
        severity="high",
    ),
    "evals/greeting.yaml": fixture(
        "greeting",
        "Hello there!",
        "    - { type: toolNotCalled, tool: lookup_order, axis: tools }\n"
        "    - { type: contains, value: Hello, axis: answer }\n"
        "    - { type: judge, kind: rubric, minScore: 0.8, axis: answer,"
        " rubric: 'GREETING-RUBRIC: greet, look nothing up.' }\n",
        severity="low",
    ),
    "evals/refund.yaml": fixture(
        "refund-asks-why",
        "I want a refund for order 777.",
        "    - { type: contains, value: why }\n",
        severity="critical",
    ),
    "evals/hostile.yaml": fixture(
        "hostile-output", "Say something.", "    - { type: contains, value: Nothing }\n"
    ),
    "evals/private.yaml": fixture(
        "held-out-case",
        "PRIVATE-PROMPT-7f3a",
        "    - { type: contains, value: never-there }\n",
        private=True,
    ),
    "evals/weather.yaml": fixture(
        "weather", "What is the weather?", "    - { type: contains, value: sunny }\n", suite="reps"
    ),
}

NEW_FIXTURE = {
    "evals/new.yaml": fixture(
        "opening-hours", "When are you open?", "    - { type: contains, value: '9' }\n"
    )
}


def _has(*needles: str) -> Any:
    return lambda body: all(n in json.dumps(body, ensure_ascii=False) for n in needles)


def script(model: ScriptedModelServer) -> None:
    """Base answers well except for the refund; head regresses the greeting (a needless
    lookup, which the judge cites), fixes the refund, echoes markup and is flaky on weather."""
    violation = {
        "score": 0.2,
        "confidence": 0.9,
        "summary": "Looked up an order nobody asked about.",
        "violations": [
            {
                "rule": "no_needless_lookups",
                "severity": "medium",
                "evidence_step": 2,
                "quote": "unknown",
            },
            {"rule": "invented_rule", "severity": "low", "evidence_step": 9, "quote": "nothing"},
        ],
        "what_would_raise_score": "Greet without calling tools.",
    }
    fine = {"score": 1.0, "confidence": 0.9, "summary": "A plain greeting.", "violations": []}
    model.script(_has("GREETING-RUBRIC", "unknown"), text(json.dumps(violation)))
    model.script(_has("GREETING-RUBRIC"), text(json.dumps(fine)))
    for version in ("BASE-V1", "HEAD-V2"):
        model.script(
            _has(version, "12345"),
            tool_call("lookup_order", {"order_id": "12345"}),
            text("Your order has shipped and arrives on 2026-11-25."),
        )
    model.script(_has("BASE-V1", "Hello there"), text("Hello! How can I help you today?"))
    model.script(
        _has("HEAD-V2", "Hello there"),
        tool_call("lookup_order", {"order_id": "unknown"}),
        text("Hello! I looked everything up for you."),
    )
    model.script(_has("BASE-V1", "refund"), text("Refund done."))
    model.script(_has("HEAD-V2", "refund"), text("Sorry to hear that. May I ask why?"))
    model.script(_has("BASE-V1", "Say something"), text("Nothing to report."))
    model.script(_has("HEAD-V2", "Say something"), text(HOSTILE))
    model.script(_has("PRIVATE-PROMPT"), text(PRIVATE_OUTPUT))
    model.script(_has("BASE-V1", "weather"), text("It is sunny."))
    model.script_sequence(
        _has("HEAD-V2", "weather"), text("It is sunny."), text("No idea."), text("It is sunny.")
    )
    model.script(_has("opening hours"), text("We open at 9."))
    model.script(_has("When are you open"), text("We open at 9."))


def make_pull_request(repo: GitRepo) -> None:
    repo.commit(
        "support bot",
        {"agents/support-bot.yaml": AGENT.format(version="BASE-V1"), "evals/evals.yaml": EVALS}
        | FIXTURES,
    )
    repo.branch("feature")
    repo.commit(
        "rework the prompt",
        {"agents/support-bot.yaml": AGENT.format(version="HEAD-V2")} | NEW_FIXTURE,
    )


def run(repo: GitRepo, model: ScriptedModelServer, *args: str) -> subprocess.CompletedProcess[str]:
    """`evalward run` on the checked-out commit, against the scripted model server."""
    return evalward(
        "run", str(repo.path), *args, cwd=repo.path, OPENAI_BASE_URL=model.base_url,
        OPENAI_API_KEY="sk-test-secret-value",
    )  # fmt: skip


def run_report(repo: GitRepo, model: ScriptedModelServer, out: Path, *extra: str) -> Path:
    """`evalward run --base main` on the pull request; returns report.html's path."""
    make_pull_request(repo)
    script(model)
    done = run(repo, model, "--base", "main", "--no-cache", "--output-dir", str(out), *extra)
    assert done.returncode == 1, done.stderr  # the greeting regressed
    assert "Traceback" not in done.stderr
    return out / "report.html"
