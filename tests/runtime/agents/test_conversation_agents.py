"""Every agent kind holds a conversation, through `evalward run`: a command agent on the
OpenAI Agents SDK (started once per turn, the conversation so far as its prompt), an http
agent (one request per turn, one conversation id), an agent that shows everything it was
given (no persona, goal or hidden fact in it), and hostile agents, bounded."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from fakes.model_server import ScriptedModelServer, mentions, text, tool_call
from support.clirun import run_for_results
from support.gitrepo import GitRepo
from support.jsonserver import READY, json_server

pytestmark = pytest.mark.e2e

AGENTS = Path(__file__).resolve().parents[2] / "agents"
KEY = "sk-conversation-agents-key-0123456789"

EVAL = """\
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: talk-eval }}
spec:
  targetAgent: {agent}
  fixtures: [{fixture}]
  judge: {{ model: openai/gpt-user }}
  execution: {{ timeoutSeconds: {timeout} }}
"""

SCRIPTED = """\
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: talk }}
spec:
  targetAgent: {agent}
  conversation:
    turns:
      - user: I want my money back.
        assertions: [{{ type: contains, value: order number }}]
      - user: It is order 12345.
        assertions:
          - {{ type: toolCalled, tool: lookup_order }}
          - {{ type: contains, value: shipped }}
"""

SIMULATED = """\
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: secretive }}
spec:
  targetAgent: {agent}
  conversation:
    user:
      persona: PERSONA-TEXT a customer called Dana
      goal: GOAL-TEXT a refund for order 12345
      knows: [HIDDEN-FACT the blender arrived broken]
      satisfiedWhen: SATISFIED-TEXT the refund has started
    maxTurns: 2
  assertions: [{{ type: notContains, value: HIDDEN-FACT }}]
"""


def agent_yaml(name: str, runtime: str) -> str:
    return (
        f"apiVersion: evalward.dev/v1\nkind: Agent\nmetadata: {{ name: {name} }}\n"
        f"spec:\n  runtime:\n{runtime}  watch: [agent/*.py]\n"
    )


HTTP_RUNTIME = (
    "    http:\n"
    f'      start: [{sys.executable}, agent/server.py, "{{port}}"]\n'
    "      ready: http://127.0.0.1:{port}/ready\n"
    "      url: http://127.0.0.1:{port}/run\n"
)


def talk_suite(
    agent: str, runtime: str, script: tuple[str, str], *, timeout: int = 60
) -> dict[str, str]:
    """The agent, its Eval over the scripted `talk` fixture, and the agent's program at
    `script[0]` (a path under the repository) holding `script[1]`."""
    path, source = script
    return {
        "agents.yaml": agent_yaml(agent, runtime)
        + EVAL.format(agent=agent, fixture="talk", timeout=timeout)
        + SCRIPTED.format(agent=agent),
        path: source,
    }


def run(repo: GitRepo, model: ScriptedModelServer) -> tuple[int, dict[str, Any], str]:
    return run_for_results(repo.path, OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY=KEY)


def only_fixture(results: dict[str, Any]) -> dict[str, Any]:
    (result,) = results["fixtures"]
    return result


def steps(result: dict[str, Any]) -> list[tuple[int | None, str, str]]:
    return [
        (s.get("turn"), s["type"], s.get("tool") or s.get("content", "")[:40])
        for s in result["trace"]["steps"]
    ]


def test_an_agents_sdk_agent_holds_a_scripted_conversation_unchanged(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    runtime = f'    command: {{ run: [{sys.executable}, agent/agent.py, "{{input}}"] }}\n'
    agent = (AGENTS / "agents_sdk_agent.py").read_text()
    files = talk_suite("support", runtime, ("agent/agent.py", agent), timeout=120)
    repo.commit("an Agents SDK agent", files)
    # Turn 2's request holds the whole conversation: the SDK agent is given it as its prompt.
    model.script(
        mentions("It is order 12345"),
        tool_call("lookup_order", {"order_id": "12345"}),
        text("Order 12345 has shipped; I will refund it when it is back."),
    )
    model.script(mentions("money back"), text("Sorry! What is your order number?"))
    code, results, said = run(repo, model)
    assert code == 0, said
    result = only_fixture(results)
    assert steps(result) == [
        (1, "input", "I want my money back."),
        (1, "final", "Sorry! What is your order number?"),
        (2, "input", "It is order 12345."),
        (2, "tool_call", "lookup_order"),
        (2, "tool_result", "lookup_order"),
        (2, "final", "Order 12345 has shipped; I will refund i"),
    ]
    second = [r for r in model.requests if "It is order 12345" in json.dumps(r)]
    assert "Sorry! What is your order number?" in json.dumps(second[0])  # it saw turn 1
    assert result["trace"]["end_reason"] == "user done"


HTTP_AGENT = json_server(
    READY
    + """
    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["content-length"])))
        conversation = request["conversation"]
        first = sessions.setdefault(conversation["id"], request["messages"][0]["content"])
        count = len(request["messages"])
        said = f"turn {conversation['turn']}; you first said: {first}; messages {count}"
        if conversation["turn"] == 2:
            said += "; order number noted, it has shipped"
            trace = [{"type": "tool_call", "tool": "lookup_order", "arguments": {"id": "12345"}},
                     {"type": "tool_result", "tool": "lookup_order", "output": "shipped"},
                     {"type": "final", "content": said}]
        else:
            trace = [{"type": "final", "content": said + "; your order number?"}]
        self.reply({"trace": trace})
""",
    preamble="import json, sys\nsessions = {}\n",
)


def test_an_http_agent_gets_one_request_per_turn_with_one_conversation_id(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    files = talk_suite("desk", HTTP_RUNTIME, ("agent/server.py", HTTP_AGENT))
    repo.commit("an http agent", files)
    code, results, said = run(repo, model)
    assert code == 0, said
    finals = [s["content"] for s in only_fixture(results)["trace"]["steps"] if s["type"] == "final"]
    assert finals == [
        "turn 1; you first said: I want my money back.; messages 1; your order number?",
        "turn 2; you first said: I want my money back.; messages 3; order number noted, "
        "it has shipped",
    ]


SHOW_ALL = """\
import json, os, sys
given = sys.stdin.read()
print(json.dumps({"env": dict(os.environ), "stdin": given, "argv": sys.argv}))
"""


def test_an_agent_that_shows_all_it_was_given_finds_no_persona_goal_or_hidden_fact(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    runtime = f"    command: {{ run: [{sys.executable}, agent/show.py], stdin: json }}\n"
    files = {
        "agents.yaml": agent_yaml("shower", runtime)
        + EVAL.format(agent="shower", fixture="secretive", timeout=60)
        + SIMULATED.format(agent="shower"),
        "agent/show.py": SHOW_ALL,
    }
    repo.commit("an agent that shows everything", files)
    model.script(lambda body: body.get("model") == "gpt-user", text("Refund order 12345, please."))
    code, results, said = run(repo, model)
    result = only_fixture(results)
    finals = [s["content"] for s in result["trace"]["steps"] if s["type"] == "final"]
    assert len(finals) == 2, said  # two turns, then the turn limit
    assert result["trace"]["end_reason"] == "turn limit"
    for shown in finals:
        given = json.loads(shown)
        assert "Refund order 12345" in given["stdin"]  # what the user said reaches it
        for secret in ("PERSONA-TEXT", "GOAL-TEXT", "HIDDEN-FACT", "SATISFIED-TEXT", KEY):
            assert secret not in shown
    # at its turn limit the simulated user was not done: the goal was not met, a failure
    assert result["status"] == "fail", result["message"]
    assert (
        "the conversation reached its turn limit (2 turns) and the simulated user was never "
        "satisfied (SATISFIED-TEXT the refund has started)" in result["message"]
    )
    # the simulated user was told all of it, and saw the agent's replies
    asked = [r for r in model.requests if r.get("model") == "gpt-user"]
    assert "HIDDEN-FACT" in json.dumps(asked[0]) and "GOAL-TEXT" in json.dumps(asked[0])
    assert code == 1


FLOOD = """\
import sys
print("x" * 2_000_000)
"""

SILENT = """\
import json, sys, time
request = json.loads(sys.stdin.read())
if request["conversation"]["turn"] == 2:
    time.sleep(3600)
print("Your order number, please?")
"""


def test_hostile_agents_in_a_conversation_are_bounded_with_a_clear_message(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    flood = f"    command: {{ run: [{sys.executable}, agent/flood.py] }}\n"
    files = talk_suite("flood", flood, ("agent/flood.py", FLOOD))
    repo.commit("an agent that answers megabytes", files)
    code, results, said = run(repo, model)
    result = only_fixture(results)
    assert code == 1 and result["status"] == "error", said
    assert result["trace"]["end_reason"] == "error"
    assert (
        "the agent's reply to turn 1 holds 2,000,000 characters, more than the 65,536"
        in (result["message"])
    )

    hang = f"    command: {{ run: [{sys.executable}, agent/hang.py], stdin: json }}\n"
    repo.commit(
        "an agent that never answers turn 2",
        talk_suite("hang", hang, ("agent/hang.py", SILENT), timeout=3),
    )
    code, results, said = run(repo, model)
    result = only_fixture(results)
    assert result["trace"]["end_reason"] == "timeout", said
    assert result["status"] == "skipped" and result["timed_out"] is True
    assert [s[0] for s in steps(result) if s[1] == "input"] == [1, 2]


@pytest.mark.parametrize("kind", ["command", "http"])
def test_a_turn_gets_what_is_left_of_the_conversation_not_the_agents_whole_time(
    repo: GitRepo, model: ScriptedModelServer, kind: str
) -> None:
    """An agent's own `timeoutSeconds` bounds one start or one request; within a conversation
    each turn gets no more than what is left of the Eval's `execution.timeoutSeconds`."""
    if kind == "command":
        runtime = (
            f"    command: {{ run: [{sys.executable}, agent/hang.py], stdin: json,"
            " timeoutSeconds: 3600 }\n"
        )
        script = ("agent/hang.py", SILENT)
    else:
        runtime = HTTP_RUNTIME + "      timeoutSeconds: 3600\n"
        script = ("agent/server.py", SILENT_SERVER)
    repo.commit(
        "an agent that never answers turn 2, with an hour of its own",
        talk_suite("hang", runtime, script, timeout=3),
    )
    code, results, said = run(repo, model)
    result = only_fixture(results)
    assert code == 1 and result["trace"]["end_reason"] == "timeout", said
    assert result["status"] == "skipped" and result["timed_out"] is True
    assert "3600" not in result["message"] and "3,600" not in result["message"], said
    assert [s[0] for s in steps(result) if s[1] == "input"] == [1, 2]


SILENT_SERVER = json_server(
    READY
    + """
    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if request["conversation"]["turn"] == 2:
            time.sleep(3600)
        self.reply({"trace": [{"type": "final", "content": "Your order number, please?"}]})
""",
    preamble="import json, sys, time\n",
)


REPL = """\
import json
print("Welcome to the order desk.")
said = []
while True:
    try:
        line = input("> ")
    except EOFError:
        break
    said.append(line)
    if len(said) == 1:
        print("Happy to help. What is your order number?")
        continue
    order = line.split()[-1].strip(".")
    print(json.dumps({"type": "tool_call", "tool": "lookup_order", "arguments": {"id": order}}))
    print(json.dumps({"type": "tool_result", "tool": "lookup_order", "output": "shipped"}))
    print(f"Order {order} has shipped. You first said: {said[0]}")
"""

REPL_FIXTURE = """\
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: one-line }
spec:
  targetAgent: desk
  input: { type: prompt, payload: { prompt: Hello } }
  assertions: [{ type: contains, value: order number }]
"""


def test_a_repl_agent_is_started_once_and_given_one_turn_per_line(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    runtime = (
        f"    command:\n      run: [{sys.executable}, agent/repl.py]\n      stdin: text\n"
        '      repl: { prompt: "> " }\n'
    )
    evals = EVAL.format(agent="desk", fixture="talk", timeout=60).replace(
        "fixtures: [talk]", "fixtures: [talk, one-line]"
    )
    files = {
        "agents.yaml": agent_yaml("desk", runtime)
        + evals
        + SCRIPTED.format(agent="desk")
        + REPL_FIXTURE,
        "agent/repl.py": REPL,
    }
    repo.commit("a REPL agent", files)
    code, results, said = run(repo, model)
    assert code == 0, said
    by_name = {f["fixture"]: f for f in results["fixtures"]}
    talk = by_name["talk"]
    assert steps(talk) == [
        (1, "input", "I want my money back."),
        (1, "final", "Happy to help. What is your order number"),
        (2, "input", "It is order 12345."),
        (2, "tool_call", "lookup_order"),
        (2, "tool_result", "lookup_order"),
        (2, "final", "Order 12345 has shipped. You first said:"),
    ]
    final = talk["trace"]["steps"][-1]["content"]
    assert final == "Order 12345 has shipped. You first said: I want my money back."  # one process
    assert "Welcome" not in json.dumps(talk["trace"]["steps"])  # the banner is no reply
    assert by_name["one-line"]["status"] == "pass"  # a single input is one turn

    silent = REPL.replace('input("> ")', 'input("? ")')
    shorter = files["agents.yaml"].replace("timeoutSeconds: 60", "timeoutSeconds: 3")
    repo.commit(
        "a REPL agent that shows another prompt",
        {"agent/repl.py": silent, "agents.yaml": shorter},
    )
    code, results, said = run(repo, model)
    talk = next(f for f in results["fixtures"] if f["fixture"] == "talk")
    assert code == 1 and talk["status"] in ("error", "skipped"), said
    assert "the agent showed no prompt '> '" in talk["message"]


FLOOD_SERVER = json_server(
    READY
    + """
    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        trace = [{"type": "tool_call", "tool": "search", "arguments": {}},
                 {"type": "tool_result", "tool": "search", "output": "x" * 17_000_000},
                 {"type": "final", "content": "Here is what I found."}]
        self.reply({"trace": trace})
"""
)


def test_an_agent_that_floods_every_turn_is_stopped_when_the_conversation_holds_too_much(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    files = talk_suite("flooder", HTTP_RUNTIME, ("agent/server.py", FLOOD_SERVER))
    repo.commit("an agent that floods every turn", files)
    code, results, said = run(repo, model)
    result = only_fixture(results)
    assert code == 1 and result["status"] == "error", said
    assert result["end_reason"] == "error"
    assert "after turn 2 the conversation's trace holds 34,000," in result["message"]
    assert "more than the 33,554,432 a run may hold" in result["message"]
