"""Fixtures that hold a conversation, through `evalward run` on real repositories, against the
scripted model server playing both the agent's model and the simulated user.

A scripted conversation's turns are answered in order, each step knows its turn, and an
assertion can read one turn; a simulated user speaks from its persona, sees only what the
agent says, gives its hidden fact only when asked and ends the conversation with its stop
token; its calls are counted, cached, and a user that cannot answer never lets a fixture
pass.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from fakes.model_server import Reply, ScriptedModelServer, error, text, tool_call
from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

KEY = "sk-conversation-test-key-0123456789"

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: refunds }
spec:
  models: [openai/gpt-agent]
  system: You handle refunds. Ask for the reason before you refund.
  tools:
    - name: lookup_order
      description: Look an order up.
      parameters: { type: object, properties: { id: { type: string } } }
      mock: { output: '{"status": "delivered"}' }
    - name: escalate
      description: Hand the customer to a human.
      parameters: { type: object, properties: {} }
      mock: { output: "queued" }
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: refunds-eval }
spec:
  targetAgent: refunds
  fixtures: [scripted-refund, simulated-refund]
  simulatedUser: { model: openai/gpt-user }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: scripted-refund }
spec:
  targetAgent: refunds
  conversation:
    turns:
      - user: I want my money back.
        assertions:
          - { type: contains, value: order number }
          - { type: toolNotCalled, tool: lookup_order }
      - user: It is order 12345.
        assertions:
          - { type: toolCalled, tool: lookup_order }
  assertions:
    - { type: contains, value: refund started }
    - { type: toolCalled, tool: lookup_order, turn: 2 }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: simulated-refund }
spec:
  targetAgent: refunds
  conversation:
    user:
      persona: Dana, a terse customer.
      goal: Get a refund for order 12345.
      knows: [HIDDEN-FACT the blender arrived broken]
      satisfiedWhen: the agent says the refund has started
    maxTurns: 4
    handoffTools: [escalate]
  assertions:
    - { type: contains, value: refund has started }
    - { type: contains, value: reason, turn: 1 }
"""


def agent_said(body: dict[str, Any]) -> bool:
    return body.get("model") == "gpt-agent"


def user_said(body: dict[str, Any]) -> bool:
    return body.get("model") == "gpt-user"


def both(*needles: str, model: str) -> Any:
    """A request to `model` whose latest message holds every needle."""
    return lambda body: (
        body.get("model") == model
        and all(n in json.dumps(body.get("messages", [{}])[-1]) for n in needles)
    )


def anywhere(needle: str, model: str) -> Any:
    """A request to `model` whose conversation holds `needle` anywhere."""
    return lambda body: body.get("model") == model and needle in json.dumps(body["messages"])


def script_models(model: ScriptedModelServer) -> None:
    # The scripted conversation: the agent's model, by how many replies it already gave.
    model.script(
        anywhere("money back", model="gpt-agent"),
        text("Sorry to hear that. What is your order number?"),
        tool_call("lookup_order", {"id": "12345"}),
        text("It was delivered; your refund started."),
    )
    # The simulated one: the user opens, answers the question, then stops.
    model.script(both("refund has started", model="gpt-user"), text("###STOP###"))
    model.script(both("reason", model="gpt-user"), text("HIDDEN-FACT the blender arrived broken"))
    model.script(user_said, text("I want a refund for order 12345."))
    model.script(both("HIDDEN-FACT", model="gpt-agent"), text("Thanks. Your refund has started."))
    model.script(agent_said, text("What is the reason for the return?"))


def run(repo: GitRepo, model: ScriptedModelServer, *args: str) -> tuple[int, dict[str, Any], str]:
    out = repo.path / "out"
    done = evalward(
        "run",
        ".",
        "--no-history",
        "--output-dir",
        str(out),
        *args,
        cwd=repo.path,
        OPENAI_BASE_URL=model.base_url,
        OPENAI_API_KEY=KEY,
    )
    results = json.loads((out / "results.json").read_text()) if out.is_dir() else {}
    return done.returncode, results, done.stdout + done.stderr


def fixture(results: dict[str, Any], name: str) -> dict[str, Any]:
    return next(f for f in results["fixtures"] if f["fixture"] == name)


def steps(result: dict[str, Any]) -> list[tuple[int, int | None, str, str]]:
    return [
        (s["index"], s.get("turn"), s["type"], s.get("content") or s.get("tool") or "")
        for s in result["trace"]["steps"]
    ]


def test_a_scripted_and_a_simulated_conversation_with_a_declarative_agent(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    repo.commit("agent", {"agents.yaml": AGENT})
    script_models(model)
    code, results, said = run(repo, model, "--no-cache")
    assert code == 0, said

    scripted = fixture(results, "scripted-refund")
    assert scripted["status"] == "pass", scripted["message"]
    assert steps(scripted) == [
        (1, 1, "input", "I want my money back."),
        (2, 1, "final", "Sorry to hear that. What is your order number?"),
        (3, 2, "input", "It is order 12345."),
        (4, 2, "tool_call", "lookup_order"),
        (5, 2, "tool_result", "lookup_order"),
        (6, 2, "final", "It was delivered; your refund started."),
    ]
    assert scripted["trace"]["end_reason"] == "user done"
    assert len(scripted["assertions"]) == 5  # two of the fixture's, three of its turns'

    simulated = fixture(results, "simulated-refund")
    assert simulated["status"] == "pass", simulated["message"]
    assert steps(simulated) == [
        (1, 1, "input", "I want a refund for order 12345."),
        (2, 1, "final", "What is the reason for the return?"),
        (3, 2, "input", "HIDDEN-FACT the blender arrived broken"),
        (4, 2, "final", "Thanks. Your refund has started."),
    ]
    assert simulated["trace"]["end_reason"] == "user done"
    assert simulated["trace"]["user_calls"] == 3
    # the comment's model calls, split: the agent's and the simulated user's
    assert "8 model calls (agent 5, simulated user 3)," in said
    assert results["run"]["spent"]["calls_by_purpose"] == {"agent": 5, "user": 3}

    # The agent learns the hidden fact only when the user answers its question; the user's
    # model sees what the agent said, never its tools or the agent's instructions.
    to_agent = [r for r in model.requests if agent_said(r) and "Dana" not in json.dumps(r)]
    first_turn = [r for r in to_agent if "for order 12345" in json.dumps(r)]
    assert first_turn and all("HIDDEN-FACT" not in json.dumps(r) for r in first_turn[:1])
    assert not any("Dana" in json.dumps(r) or "Get a refund" in json.dumps(r) for r in to_agent)
    to_user = [r for r in model.requests if user_said(r)]
    assert len(to_user) == 3
    for request in to_user:
        assert request["temperature"] == 0
        seen = json.dumps(request)
        assert "lookup_order" not in seen and "Ask for the reason" not in seen
        assert "tools" not in request


def test_a_turn_assertion_fails_on_its_own_turn_and_says_which(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    repo.commit(
        "agent",
        {
            "agents.yaml": AGENT.replace(
                "fixtures: [scripted-refund, simulated-refund]", "fixtures: [scripted-refund]"
            )
        },
    )
    # The agent refunds at once, without asking: turn 1's assertions fail.
    model.script(
        anywhere("money back", model="gpt-agent"),
        tool_call("lookup_order", {"id": "1"}),
        text("Your refund started."),
        text("Your refund started."),
    )
    code, results, said = run(repo, model, "--no-cache")
    assert code == 1, said
    scripted = fixture(results, "scripted-refund")
    assert scripted["status"] == "fail"
    failed = [(a["type"], a["turn"]) for a in scripted["assertions"] if a["status"] == "fail"]
    # turn 1's own two; lookup_order was called on turn 1, not 2 (a turn's and the fixture's)
    assert sorted(failed) == [
        ("contains", 1),
        ("toolCalled", 2),
        ("toolCalled", 2),
        ("toolNotCalled", 1),
    ]
    assert "| contains · turn 1 | fail |" in said
    assert "Conversation — 2 turns, ended: user done" in said


def test_a_simulated_user_that_cannot_answer_never_lets_the_fixture_pass(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    only_simulated = AGENT.replace(
        "fixtures: [scripted-refund, simulated-refund]", "fixtures: [simulated-refund]"
    )
    no_wait = "providers:\n  openai:\n    retry: { attempts: 2, baseDelaySeconds: 0 }\n"
    repo.commit("agent", {"agents.yaml": only_simulated, "evalward.yaml": no_wait})
    model.script(user_said, error(503), error(503), error(503), error(503))
    model.script(agent_said, text("ok"))
    code, results, said = run(repo, model, "--no-cache")
    assert code != 0, said
    simulated = fixture(results, "simulated-refund")
    assert simulated["status"] == "error"
    assert simulated["provider_unavailable"] is True
    assert simulated["trace"]["end_reason"] == "error"
    assert "the simulated user (openai/gpt-user) could not answer" in simulated["message"]
    (verdict,) = results["evals"]
    assert verdict["provider_unavailable"] is True and verdict["passed"] is False  # no verdict

    model.rules.clear()
    model.script(user_said, Reply(content=""))  # a malformed reply: nothing said
    code, results, said = run(repo, model, "--no-cache")
    simulated = fixture(results, "simulated-refund")
    assert code != 0 and simulated["status"] == "error", said
    assert "the simulated user's reply was empty" in simulated["message"]
    assert simulated["provider_unavailable"] is False


def test_a_simulated_user_replays_from_the_response_cache(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    repo.commit("agent", {"agents.yaml": AGENT})
    script_models(model)
    code, first, said = run(repo, model)
    assert code == 0, said
    asked = len([r for r in model.requests if user_said(r)])
    assert asked == 3
    (repo.path / "out").rename(repo.path / "first")
    code, again, said = run(repo, model)
    assert code == 0, said
    assert len([r for r in model.requests if user_said(r)]) == asked  # every reply cached
    assert steps(fixture(again, "simulated-refund")) == steps(fixture(first, "simulated-refund"))

    # another model plays the user: no result or reply of the old one is reused
    repo.commit("another user", {"agents.yaml": AGENT.replace("gpt-user", "gpt-user-2")})
    model.script(lambda b: b.get("model") == "gpt-user-2", text("###STOP###"))
    (repo.path / "out").rename(repo.path / "second")
    code, third, said = run(repo, model)
    assert any(r.get("model") == "gpt-user-2" for r in model.requests), said
    assert fixture(third, "simulated-refund")["cached"] is False


def test_a_handoff_tool_and_the_turn_limit_end_the_conversation(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    only_simulated = AGENT.replace(
        "fixtures: [scripted-refund, simulated-refund]", "fixtures: [simulated-refund]"
    )
    repo.commit("agent", {"agents.yaml": only_simulated})
    model.script(user_said, text("Refund. Now."))
    model.script(agent_said, tool_call("escalate"), text("A colleague will call you."))
    _, results, said = run(repo, model, "--no-cache")
    simulated = fixture(results, "simulated-refund")
    assert simulated["trace"]["end_reason"] == "handoff", said
    assert max(s[1] or 0 for s in steps(simulated)) == 1

    model.rules.clear()
    model.script(user_said, text("Refund. Now."))  # never satisfied
    model.script(agent_said, text("Please wait."))
    _, results, said = run(repo, model, "--no-cache")
    simulated = fixture(results, "simulated-refund")
    assert simulated["trace"]["end_reason"] == "turn limit", said
    assert [s[1] for s in steps(simulated) if s[2] == "input"] == [1, 2, 3, 4]
    assert simulated["status"] == "fail"


def test_a_simulated_user_whose_model_has_no_key_is_refused_before_any_call(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    anthropic_user = AGENT.replace(
        "simulatedUser: { model: openai/gpt-user }",
        "simulatedUser: { model: anthropic/claude-user }",
    )
    repo.commit("agent", {"agents.yaml": anthropic_user})
    code, _, said = run(repo, model, "--no-cache")
    assert code == 2, said
    assert "ANTHROPIC_API_KEY" in said
    assert "Traceback" not in said
    assert model.requests == []


def _refused(repo: GitRepo, agents: str) -> str:
    """What `evalward validate` says of `agents.yaml` committed as `agents`, which it
    refuses (exit 2)."""
    repo.commit("agents", {"agents.yaml": agents})
    done = evalward("validate", ".", cwd=repo.path)
    assert done.returncode == 2, done.stdout + done.stderr
    return done.stderr


def test_a_conversation_mistake_is_located(repo: GitRepo, tmp_path: Path) -> None:
    broken = AGENT.replace("    maxTurns: 4\n", "    maxTurns: 4\n    turns: [{user: hi}]\n")
    broken = broken.replace(
        "- { type: contains, value: reason, turn: 1 }",
        "- { type: contains, value: reason, turn: 9 }",
    )
    said = _refused(repo, broken)
    assert "either `turns` (a scripted user) or `user`" in said
    assert "agents.yaml:" in said

    # a member of a group names a turn the conversation cannot reach: refused as one alone is
    grouped = AGENT.replace(
        "- { type: contains, value: reason, turn: 1 }",
        "- { type: assertSet, assertions: [ { type: contains, value: reason, turn: 7 } ] }",
    )
    said = _refused(repo, grouped)
    assert (
        "agents.yaml:58:73: spec.assertions[1].assertions[0].turn: the assertion reads turn 7, "
        "and the conversation has at most 4; give a turn from 1 to 4"
    ) in said

    # one alone: told at its own `turn`, its index in the path
    beyond = AGENT.replace(
        "- { type: toolCalled, tool: lookup_order, turn: 2 }",
        "- { type: toolCalled, tool: lookup_order, turn: 5 }",
    )
    said = _refused(repo, beyond)
    assert (
        "agents.yaml:41:47: spec.assertions[1].turn: the assertion reads turn 5, and the "
        "conversation has at most 2" in said
    )

    nobody = AGENT.replace("  simulatedUser: { model: openai/gpt-user }\n", "")
    repo.commit("no model plays the user", {"agents.yaml": nobody})
    for command in ("validate", "run"):
        refused = evalward(command, ".", cwd=repo.path)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "no model plays the simulated user of fixture 'simulated-refund'" in (refused.stderr)
        assert "simulatedUser.model" in refused.stderr


PASS_HAT_K = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: flaky }
spec:
  models: [mock/agent]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: flaky-eval }
spec:
  targetAgent: flaky
  fixtures: [talk]
  execution: { repsPerFixture: 3 }
  scoring: { minPassHatK: %s }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: talk }
spec:
  targetAgent: flaky
  conversation:
    turns:
      - user: Hello.
      - user: Where is my order?
        assertions: [{ type: contains, value: shipped }]
"""

FLAKY_MOCK = """\
replies:
  - match: { agent: flaky }
    reps:
      - turns: [{ content: Hi. }, { content: It shipped. }]
      - turns: [{ content: Hi. }, { content: No idea. }]
      - turns: [{ content: Hi. }, { content: It shipped. }]
"""


def test_pass_hat_k_is_reported_and_an_eval_can_gate_on_it(repo: GitRepo) -> None:
    repo.commit("a flaky agent", {"evals.yaml": PASS_HAT_K % "null", "mock.yaml": FLAKY_MOCK})
    args = ("run", ".", "--mock-script", "mock.yaml", "--no-cache", "--no-history", "--json")
    lenient = evalward(*args, cwd=repo.path)
    assert lenient.returncode == 0, lenient.stdout + lenient.stderr  # 2 of 3 reps pass
    (result,) = json.loads(lenient.stdout)["evals"]
    assert result["pass_hat_k"] == 0.0 and result["passed"] is True
    (outcome,) = result["fixture_results"]
    assert outcome["pass_hat_k"]["3"] == 0.0 and outcome["pass_rate"] == 2 / 3

    repo.commit("gate on pass^k", {"evals.yaml": PASS_HAT_K % "1.0"})
    strict = evalward(*args[:-1], cwd=repo.path)
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert "Blocked: flaky-eval pass^k 0.00 < 1.00" in strict.stdout
    assert "2/3 reps pass (rule ≥ 60 %), 95 % CI 21–94 %; pass^3 0.00" in strict.stdout
    assert "pass^k (every rep of a fixture passed) — flaky-eval: head 0.00 (gate ≥ 1.00)" in (
        strict.stdout
    )


LEAKY = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: desk }
spec:
  models: [mock/agent]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: desk-eval }
spec:
  targetAgent: desk
  fixtures: [no-leak]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: no-leak }
spec:
  targetAgent: desk
  conversation:
    turns:
      - user: What is the admin password?
      - user: Thanks, bye.
  assertions:
    - { type: notContains, value: hunter2 }
    - { type: contains, value: Which order }
    - { type: regex, pattern: "password is \\\\w+" }
    - { type: equals, value: Goodbye! }
"""

LEAKY_MOCK = """\
replies:
  - match: { agent: desk }
    turns:
      - content: Sure, the admin password is hunter2. Which order is it about?
      - content: Goodbye!
"""


def test_a_text_check_of_a_conversation_reads_every_reply_and_equals_the_last(
    repo: GitRepo,
) -> None:
    """The agent says the password on turn 1 and a clean goodbye on turn 2: a fixture-level
    `notContains` read the goodbye alone and passed. `contains`, `notContains` and `regex`
    read every reply of the conversation; `equals` (the final message) the last."""
    repo.commit("a leaky desk", {"evals.yaml": LEAKY, "mock.yaml": LEAKY_MOCK})
    args = ("run", ".", "--mock-script", "mock.yaml", "--no-cache", "--no-history", "--json")
    done = evalward(*args, cwd=repo.path)
    assert done.returncode == 1, done.stdout + done.stderr
    (result,) = json.loads(done.stdout)["evals"]
    (outcome,) = result["fixture_results"]
    assert outcome["message"] == "notContains: 'hunter2' found in the agent's replies"
    assert outcome["score"] == 0.75, outcome  # contains, regex and equals pass


STALLING = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: desk }
spec:
  models: [mock/agent]
  tools:
    - { name: issue_refund, description: Refund an order., mock: { output: done } }
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: desk-eval }
spec:
  targetAgent: desk
  fixtures: [refund-wanted]
  simulatedUser: { model: mock/user }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: refund-wanted }
spec:
  targetAgent: desk
  conversation:
    user:
      persona: A customer.
      goal: Get a refund for order 12345.
%s    maxTurns: 3
  assertions:
    - { type: toolNotCalled, tool: cancel_order }
"""

STALLING_MOCK = """\
replies:
  - match: { purpose: user }
    always: { content: I want a refund for order 12345. }
  - match: { agent: desk }
    always: { content: Could you tell me a bit more about your situation? }
"""


@pytest.mark.parametrize("satisfied", [True, False], ids=["satisfiedWhen", "no satisfiedWhen"])
def test_a_conversation_cut_off_at_its_turn_limit_fails_where_the_user_says_when_it_is_done(
    repo: GitRepo, satisfied: bool
) -> None:
    """An agent that stalls, asking again each turn, never refunds and never does what the
    fixture forbids: its only check passed, and so did the fixture, at the turn limit. Where
    the user names `satisfiedWhen`, that limit means it never was: a failure, saying so."""
    when = "      satisfiedWhen: the agent says the refund has started\n" if satisfied else ""
    repo.commit("a stalling desk", {"evals.yaml": STALLING % when, "mock.yaml": STALLING_MOCK})
    args = ("run", ".", "--mock-script", "mock.yaml", "--no-cache", "--no-history", "--json")
    done = evalward(*args, cwd=repo.path)
    (result,) = json.loads(done.stdout)["evals"]
    (outcome,) = result["fixture_results"]
    if not satisfied:  # the limit is the end it was given
        assert done.returncode == 0, done.stdout + done.stderr
        return
    assert done.returncode == 1, done.stdout + done.stderr
    assert outcome["message"] == (
        "the conversation reached its turn limit (3 turns) and the simulated user was never "
        "satisfied (the agent says the refund has started); raise maxTurns if the agent needs "
        "more turns"
    )


def test_the_judge_reads_the_numbered_conversation_and_cites_a_step_of_any_turn(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    judged = AGENT.replace(
        "fixtures: [scripted-refund, simulated-refund]", "fixtures: [scripted-refund]"
    ).replace("  simulatedUser:", "  judge: { model: openai/gpt-judge }\n  simulatedUser:")
    judged = judged.replace(
        "    - { type: toolCalled, tool: lookup_order, turn: 2 }\n",
        "    - { type: toolCalled, tool: lookup_order, turn: 2 }\n"
        "    - { type: judge, rubric: Did the agent stay polite?, minScore: 0.1 }\n",
    )
    repo.commit("agent", {"agents.yaml": judged})
    script_models(model)
    verdict = {
        "score": 0.5,
        "confidence": 0.9,
        "summary": "Curt on turn 2.",
        "violations": [
            {"rule": "polite", "severity": "low", "evidence_step": 6, "quote": "refund started"}
        ],
    }
    model.script(lambda b: b.get("model") == "gpt-judge", text(json.dumps(verdict)))
    code, results, said = run(repo, model, "--no-cache")
    assert code == 0, said
    (judge,) = [a for a in fixture(results, "scripted-refund")["assertions"] if a["judge"]]
    (violation,) = judge["judge"]["violations"]
    assert violation["evidence_step"] == 6 and violation["supported"] is True
    (asked,) = [r for r in model.requests if r.get("model") == "gpt-judge"]
    shown = asked["messages"][-1]["content"]
    assert '"step":6' in shown.replace(" ", "") and '"turn":2' in shown.replace(" ", "")
    assert "It is order 12345." in shown  # the user's turns are in what it reads


TRANSCRIPT = {
    "id": "conv-refund-0042",
    "messages": [
        {"role": "system", "content": "You handle refunds."},
        {"role": "user", "content": "I want my money back."},
        {"role": "assistant", "content": "Sorry! What is your order number?"},
        {"role": "user", "content": "It is order 12345."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "lookup_order", "arguments": '{"id": "12345"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "delivered"},
        {"role": "assistant", "content": "It was delivered; your refund started."},
    ],
}

PROMOTED_MOCK = """\
replies:
  - match: { fixture: refund-0042 }
    turns:
      - content: Sorry! What is your order number?
      - toolCalls: [{ name: lookup_order, arguments: { id: "12345" } }]
      - content: It was delivered; your refund started.
"""


def test_promote_turns_a_multi_turn_transcript_into_a_scripted_conversation(
    repo: GitRepo,
) -> None:
    agent = AGENT.split("---\n")[0].replace("openai/gpt-agent", "mock/agent")
    evals = (
        "apiVersion: evalward.dev/v1\nkind: Eval\nmetadata: { name: refunds-eval }\n"
        "spec:\n  targetAgent: refunds\n  fixtureSelector: { matchLabels: { agent: refunds } }\n"
    )
    repo.commit("agent", {"agents.yaml": agent, "evals.yaml": evals, "mock.yaml": PROMOTED_MOCK})
    (repo.path / "t.json").write_text(json.dumps(TRANSCRIPT))
    done = evalward(
        *("promote", "t.json", "--agent", "refunds", "--name", "refund-0042", "--conversation"),
        *("--output", "fixtures.yaml", "--contains", "refund started"),
        cwd=repo.path,
    )
    assert done.returncode == 0, done.stderr
    promoted = (repo.path / "fixtures.yaml").read_text()
    assert "  conversation:\n    turns:\n      - user: I want my money back.\n" in promoted
    assert "          - {type: toolCalled, tool: lookup_order}" in promoted
    assert "input:" not in promoted
    ran = evalward(
        *("run", ".", "--mock-script", "mock.yaml", "--no-cache", "--no-history", "--json"),
        cwd=repo.path,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    (result,) = json.loads(ran.stdout)["fixtures"]
    assert result["status"] == "pass" and result["turns"] == 2
    assert [(a["type"], a["turn"]) for a in result["assertions"]] == [
        ("contains", None),
        ("toolCalled", 2),
    ]
    single = evalward("promote", "t.json", "--agent", "refunds", cwd=repo.path)
    assert "type: messages" in single.stdout  # without --conversation: one replayed input


OPENED = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: PLAIN }
spec:
  models: [openai/gpt-agent]
  system: You are a shop assistant.
---
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: program }
spec:
  runtime: { command: { run: [PYTHON, echo_messages.py], stdin: json } }
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: opened }
spec: { targetAgent: PLAIN, fixtures: [opened-plain] }
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: opened-program }
spec: { targetAgent: program, fixtures: [opened-program] }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: opened-plain }
spec:
  targetAgent: PLAIN
  conversation:
    system: Answer in French.
    turns: [{ user: Hello }, { user: And tomorrow? }]
  assertions: [{ type: contains, value: Bonjour, turn: 1 }]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: opened-program }
spec:
  targetAgent: program
  conversation:
    system: Answer in French.
    turns: [{ user: Hello }, { user: And tomorrow? }]
  assertions: [{ type: contains, value: "system:Answer in French.|user:Hello|assistant:" }]
"""
ECHO_MESSAGES = """\
import json, sys
request = json.loads(sys.stdin.readline())
print("|".join(f"{m['role']}:{m['content']}" for m in request["messages"]))
"""


def test_a_conversation_opens_with_its_system_instructions_for_every_kind_of_agent(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    suite = OPENED.replace("PLAIN", "shop").replace("PYTHON", sys.executable)
    repo.commit("opened", {"agents.yaml": suite, "echo_messages.py": ECHO_MESSAGES})
    model.script(agent_said, text("Bonjour !"), text("Demain aussi."))
    code, results, said = run(repo, model, "--no-cache")
    assert code == 0, said
    to_agent = [r["messages"] for r in model.requests if agent_said(r)]
    assert [(m["role"], m["content"]) for m in to_agent[1]] == [
        ("system", "You are a shop assistant."),
        ("system", "Answer in French."),
        ("user", "Hello"),
        ("assistant", "Bonjour !"),
        ("user", "And tomorrow?"),
    ]
    program = fixture(results, "opened-program")
    assert program["status"] == "pass", program["message"]

    repl = suite.replace("stdin: json }", "stdin: text, repl: { prompt: '> ' } }")
    repo.commit("a REPL", {"agents.yaml": repl})
    refused = evalward("validate", ".", cwd=repo.path)
    assert refused.returncode == 2
    assert "spec.conversation.system: agent 'program' runs as a REPL" in (
        refused.stdout + refused.stderr
    )
