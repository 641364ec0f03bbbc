"""A pull request that renames the tool a base branch's fixture guards against.

The base's fixture (`gate-config: base`) says `toolNotCalled: refund_order`. A head agent whose
tool is now `issue_refund` can call it freely: the guard sees no `refund_order` and would
pass. Such a check of a tool the base side's agent has and the head's does not fails, saying
which tool and what to do; a guard against a tool neither side's agent has passes as before.
The pull requests run as the runner runs the action: a real repository, the fake GitHub API
and the scripted model server; the result cache's case runs the command line twice.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_script import Reply
from fakes.model_server import ScriptedModelServer, text, tool_call
from support.actionrun import ActionRun, pull_request_event, run_action
from support.clirun import evalward
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.hostile

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: refunds }}
spec:
  models: [openai/gpt-agent]
  system: {prompt}
  tools:
    - name: {tool}
      description: Refund an order.
      parameters: {{ type: object, properties: {{ id: {{ type: string }} }} }}
      mock: {{ output: refunded }}
"""

EVAL = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: refunds-eval }}
spec:
  targetAgent: refunds
  fixtures: [no-refund]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: no-refund }}
spec:
  targetAgent: refunds
  input: {{ type: prompt, payload: {{ prompt: Refund order 1 please. }} }}
  assertions:
    - {guard}
    - {{ type: contains, value: sorry }}
"""

NOT_CALLED = "{ type: toolNotCalled, tool: refund_order }"
GROUPED = "{ type: assertSet, assertions: [ { type: toolNotCalled, tool: refund_order } ] }"


def agent_asked(body: dict[str, Any], prompt: str) -> bool:
    return body.get("model") == "gpt-agent" and prompt in json.dumps(body["messages"][0])


def renamed(repo: GitRepo, guard: str) -> tuple[str, str]:
    """The base (its agent's `refund_order` guarded by `guard`) and a head that renames it."""
    base = repo.commit(
        "base",
        {
            "agents.yaml": AGENT.format(prompt="BASE-PROMPT never refund.", tool="refund_order"),
            "evals.yaml": EVAL.format(guard=guard),
        },
    )
    repo.branch("feature")
    head = repo.commit(
        "rename the tool",
        {"agents.yaml": AGENT.format(prompt="HEAD-PROMPT always refund.", tool="issue_refund")},
    )
    return base, head


def gate(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, guard: str, *, refunds: bool
) -> ActionRun:
    """Pull request 7 renaming the tool, its head agent refunding through it (or not)."""
    base, head = renamed(repo, guard)
    replies = [tool_call("issue_refund", {"id": "1"})] if refunds else []
    return gate_pull(
        github,
        model,
        (repo, base, head),
        [text("I am sorry, no refunds.")],
        [*replies, text("I am sorry, it is done.")],
    )


def gate_pull(
    github: FakeGitHub,
    model: ScriptedModelServer,
    change: tuple[GitRepo, str, str],
    base_says: list[Reply],
    head_says: list[Reply],
) -> ActionRun:
    """Pull request 7 of `change` (the repository, its base and head) gated by the action,
    the base's agent answering with `base_says` and the head's with `head_says`."""
    repo, base, head = change
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    model.script(lambda b: agent_asked(b, "BASE-PROMPT"), *base_says)
    model.script(lambda b: agent_asked(b, "HEAD-PROMPT"), *head_says)
    return run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=provider_env(model),
    )


def head_run(run: ActionRun) -> dict[str, Any]:
    found: dict[str, Any] = next(
        f for f in run.results()["fixtures"] if (f["fixture"], f["side"]) == ("no-refund", "head")
    )
    return found


@pytest.mark.parametrize("guard", [NOT_CALLED, GROUPED], ids=["not-called", "group"])
def test_a_base_guard_of_a_tool_the_pull_request_renamed_fails_and_says_why(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, guard: str
) -> None:
    run = gate(repo, github, model, guard, refunds=True)

    found = head_run(run)
    calls = [s["tool"] for s in found["trace"]["steps"] if s["type"] == "tool_call"]
    assert calls == ["issue_refund"]
    assert found["status"] == "fail", found
    checked = found["assertions"][0]
    assert (checked["status"], checked["score"]) == ("fail", 0.0), checked
    said = checked["message"]
    assert "'refund_order'" in said and "'refunds'" in said, said
    assert "removed or renamed" in said and "bypass label" in said, said
    assert found["assertions"][1]["status"] == "pass"  # the rest of the fixture reads as ever
    assert run.returncode == 1, run.stdout + run.stderr
    assert "removed or renamed" in run.stdout, run.stdout
    assert "removed or renamed" in github.comments_on(7)[0]["body"]


WANTS = (
    "{ type: toolCalled, tool: refund_order }",
    "{ type: toolArgs, tool: refund_order, args: { id: '1' } }",
    "{ type: toolSequence, tools: [refund_order] }",
    "{ type: trajectory, tools: [refund_order] }",
)
"""Every check a call of `refund_order` passes, one fixture's."""


def test_a_call_of_the_renamed_tool_by_its_old_name_is_no_call_of_it(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The base's fixture wants a call of `refund_order`; the pull request renames the tool,
    and its model (a mock script's reply, written for the base) still asks for
    `refund_order`. evalward answers that no such tool is available and nothing runs: that
    is no call of it, each check that wants one fails on the head, and the gate blocks."""
    base, head = renamed(repo, "\n    - ".join(WANTS))
    asks = [tool_call("refund_order", {"id": "1"}), text("I am sorry, it is done.")]

    run = gate_pull(github, model, (repo, base, head), asks, asks)

    found = head_run(run)
    steps = found["trace"]["steps"]
    assert [s["tool"] for s in steps if s["type"] == "tool_call"] == ["refund_order"]
    (answer,) = [s for s in steps if s["type"] == "tool_result"]
    assert answer["is_error"] and "no tool named 'refund_order'" in answer["output"], answer
    checked = found["assertions"][: len(WANTS)]
    assert [c["type"] for c in checked] == ["toolCalled", "toolArgs", "toolSequence", "trajectory"]
    assert [c["status"] for c in checked] == ["fail"] * len(WANTS), checked
    for check in checked[:2]:
        assert "the agent was not offered a tool of that name" in check["message"], check
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"


def test_control_a_base_guard_of_a_tool_neither_agent_has_still_passes(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """AgentV's `not-trajectory:tool-used`: a guard against a tool never offered, on either
    side, is left as it is by the rename of another tool."""
    run = gate(repo, github, model, "{ type: toolNotCalled, tool: delete_account }", refunds=False)

    found = head_run(run)
    assert found["status"] == "pass", found
    assert run.returncode == 0, run.stdout + run.stderr
    assert "removed or renamed" not in run.stdout, run.stdout


def test_a_pass_cached_where_no_base_compared_is_not_read_for_the_renamed_tools_head(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    """A run of the head alone (a push of its branch) scores the guard as passing: nothing
    there says the tool was renamed. The head's run against the base reads no such result."""
    renamed(repo, NOT_CALLED)
    model.script(lambda b: agent_asked(b, "BASE-PROMPT"), text("I am sorry, no refunds."))
    model.script(
        lambda b: agent_asked(b, "HEAD-PROMPT"),
        tool_call("issue_refund", {"id": "1"}),
        text("I am sorry, it is done."),
    )
    env = provider_env(model)
    alone = evalward("run", ".", "--all", cwd=repo.path, **env)
    assert alone.returncode == 0, alone.stdout + alone.stderr

    compared = evalward("run", ".", "--base", "main", cwd=repo.path, **env)
    said = compared.stdout + compared.stderr
    assert compared.returncode == 1, said
    assert "removed or renamed" in said, said


def stood_in(stand_in: str) -> str:
    """The Eval and its fixture, whose `stand_in` answers `refund_order` and whose check
    asks that the reply say the refund was refused."""
    return (
        EVAL.format(guard="{ type: contains, value: refused }")
        .replace("  assertions:", f"  {stand_in}\n  assertions:")
        .replace("    - { type: contains, value: sorry }\n", "")
    )


REPLAYED = 'toolReplay: [{ tool: refund_order, output: "refused: order 1 is final" }]'
SHADOWED = "shadowTools: [refund_order]"


@pytest.mark.parametrize("stand_in", [REPLAYED, SHADOWED], ids=["replay", "shadow"])
def test_a_base_recording_of_a_tool_the_pull_request_renamed_fails_the_run_unstarted(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, stand_in: str
) -> None:
    """The base's fixture answers `refund_order` with its recording (or a shadow's stub); the
    head renames it `issue_refund`, whose own answer is what the pull request wrote. The
    head's run would read that in place of the base's recording: it is an error instead."""
    base = repo.commit(
        "base",
        {
            "agents.yaml": AGENT.format(prompt="BASE-PROMPT", tool="refund_order"),
            "evals.yaml": stood_in(stand_in),
        },
    )
    repo.branch("feature")
    head = repo.commit(
        "rename the tool",
        {
            "agents.yaml": AGENT.format(prompt="HEAD-PROMPT", tool="issue_refund").replace(
                "mock: { output: refunded }", "mock: { output: 'refused: order 1 is final' }"
            )
        },
    )
    run = gate_pull(
        github,
        model,
        (repo, base, head),
        [tool_call("refund_order", {"id": "1"}), text("It was refused.")],
        [tool_call("issue_refund", {"id": "1"}), text("It was refused.")],
    )

    found = head_run(run)
    assert found["status"] == "error", found
    kind = stand_in.split(":")[0]
    said = json.dumps(found)
    assert f"`{kind}` of the base's fixture answers it" in said, said
    assert "'refund_order'" in said and "removed or renamed" in said, said
    assert not model.requests_mentioning("HEAD-PROMPT"), "the head's run started"
    assert run.returncode == 1, run.stdout + run.stderr
    assert "removed or renamed" in github.comments_on(7)[0]["body"]


def refunds_through_the_new_name(
    github: FakeGitHub, model: ScriptedModelServer, change: tuple[GitRepo, str, str]
) -> ActionRun:
    """Pull request 7 of `change` gated: the base's agent refuses, the head's refunds through
    `issue_refund` and says it refused."""
    return gate_pull(
        github,
        model,
        change,
        [text("It was refused, sorry.")],
        [tool_call("issue_refund", {"id": "1"}), text("It was refused, sorry.")],
    )


STDIO_SERVER = r"""
import json, sys
NAMES = %s
for line in sys.stdin:
    asked = json.loads(line)
    if "id" not in asked:
        continue
    result = {}
    if asked.get("method") == "initialize":
        result = {"protocolVersion": asked["params"]["protocolVersion"],
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "desk", "version": "1"}}
    elif asked.get("method") == "tools/list":
        result = {"tools": [{"name": name, "description": "Refund.",
                             "inputSchema": {"type": "object"}} for name in NAMES]}
    elif asked.get("method") == "tools/call":
        result = {"content": [{"type": "text", "text": "refunded"}]}
    print(json.dumps({"jsonrpc": "2.0", "id": asked["id"], "result": result}), flush=True)
"""
"""An MCP server over stdio that lists the tools NAMES names, each answering `refunded`."""
UNLISTED_SERVER = STDIO_SERVER % "[]"
"""An MCP server over stdio that offers no tool: the agent names none of its tools."""
WITH_UNLISTED = """  watch: [mcp/*.py]
  mcpServers:
    extras: { command: [/usr/bin/python3, mcp/extras.py] }
  tools:
"""


@pytest.mark.parametrize(
    ("fixture", "status"),
    [(stood_in(REPLAYED), "error"), (EVAL.format(guard=NOT_CALLED), "fail")],
    ids=["replay", "not-called"],
)
def test_a_renamed_tool_is_not_hidden_behind_an_mcp_server_whose_tools_are_not_listed(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, fixture: str, status: str
) -> None:
    """The head renames `refund_order` and adds an MCP server that names no `tools.allow`:
    its tools were not known before a run, so nothing was said of the base's recording or
    guard of `refund_order`, and the head's `issue_refund` answered and passed. Whether the
    server offers `refund_order` is not known, which is never a pass: the run is an error
    (a recording) or the check fails (a guard), saying to list the server's tools."""
    base = repo.commit(
        "base",
        {
            "agents.yaml": AGENT.format(prompt="BASE-PROMPT", tool="refund_order"),
            "evals.yaml": fixture,
        },
    )
    repo.branch("feature")
    head_agent = AGENT.format(prompt="HEAD-PROMPT", tool="issue_refund")
    head = repo.commit(
        "rename the tool behind a server",
        {
            "agents.yaml": head_agent.replace("  tools:\n", WITH_UNLISTED),
            "mcp/extras.py": UNLISTED_SERVER,
        },
    )
    run = refunds_through_the_new_name(github, model, (repo, base, head))

    found = head_run(run)
    said = json.dumps(found)
    assert found["status"] == status, said
    assert "MCP servers 'extras' list their tools with no `tools.allow`" in said, said
    assert "'refund_order'" in said, said
    assert (run.returncode, run.outputs["result"]) == (1, "fail"), run.stdout + run.stderr


SERVED = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: refunds }
spec:
  models: [openai/gpt-agent]
  system: PROMPT
  watch: [mcp/*.py]
  mcpServers:
    orders: { command: [/usr/bin/python3, mcp/desk.py] }
"""


def test_a_tool_renamed_inside_a_base_server_whose_tools_are_not_listed_is_no_way_round_its_guard(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The base's agent takes its tools from a server that names no `tools.allow`; the pull
    request renames the server's `refund_order` to `issue_refund` in the server's own code,
    and refunds through it. What the base offers was not known before a run, so nothing was
    said, and `toolNotCalled: refund_order` passed. Each side's runs now record what they
    offered their model: the base's run offered `refund_order`, the head's did not, and the
    guard fails, saying so."""
    base = repo.commit(
        "base",
        {
            "agents.yaml": SERVED.replace("PROMPT", "BASE-PROMPT"),
            "mcp/desk.py": STDIO_SERVER % '["refund_order"]',
            "evals.yaml": EVAL.format(guard=NOT_CALLED),
        },
    )
    repo.branch("feature")
    head = repo.commit(
        "rename the server's tool",
        {
            "agents.yaml": SERVED.replace("PROMPT", "HEAD-PROMPT"),
            "mcp/desk.py": STDIO_SERVER % '["issue_refund"]',
        },
    )
    run = refunds_through_the_new_name(github, model, (repo, base, head))

    found = head_run(run)
    said = json.dumps(found)
    assert found["status"] == "fail", said
    assert "offered its model the tool 'refund_order' in the base branch's run" in said, said
    assert "offered it in none of its calls" in said, said
    assert (run.returncode, run.outputs["result"]) == (1, "fail"), run.stdout + run.stderr


HUSK = """    - name: refund_order
      description: Refund an order.
      enabled: false
"""


def test_a_disabled_tool_of_the_guarded_name_keeps_no_guard_alive(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """Renamed to `issue_refund`, with a disabled `refund_order` left in `tools`: the model
    is never offered it, so `toolNotCalled: refund_order` passed whatever the agent did,
    the husk counted as the head still having the tool; it is a rename like any other."""
    base = repo.commit(
        "base",
        {
            "agents.yaml": AGENT.format(prompt="BASE-PROMPT never refund.", tool="refund_order"),
            "evals.yaml": EVAL.format(guard=NOT_CALLED),
        },
    )
    repo.branch("feature")
    head_agent = AGENT.format(prompt="HEAD-PROMPT always refund.", tool="issue_refund") + HUSK
    head = repo.commit("rename, keep a disabled husk", {"agents.yaml": head_agent})
    run = gate_pull(
        github,
        model,
        (repo, base, head),
        [text("I am sorry, no refunds.")],
        [tool_call("issue_refund", {"id": "1"}), text("I am sorry, it is done.")],
    )
    found = head_run(run)
    assert found["status"] == "fail", found["assertions"]
    assert "removed or renamed" in json.dumps(found["assertions"])
    assert run.returncode == 1, run.stdout + run.stderr


def test_control_a_tool_disabled_on_both_sides_keeps_its_guard_a_guard(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """Never offered on the base either: the pull request removed nothing."""
    agent = AGENT.format(prompt="BASE-PROMPT never refund.", tool="issue_refund") + HUSK
    base = repo.commit("base", {"agents.yaml": agent, "evals.yaml": EVAL.format(guard=NOT_CALLED)})
    repo.branch("feature")
    head = repo.commit("reword", {"agents.yaml": agent.replace("BASE-PROMPT", "HEAD-PROMPT")})
    run = gate_pull(
        github,
        model,
        (repo, base, head),
        [text("I am sorry, no refunds.")],
        [text("I am sorry, no refunds.")],
    )
    found = head_run(run)
    assert found["status"] == "pass", found["assertions"]
    assert run.returncode == 0, run.stdout + run.stderr


OWN_COMMAND = (
    AGENT.replace("      mock: {{ output: refunded }}\n", "")
    + '      command: [/bin/sh, -c, "echo REFUNDED-FOR-REAL"]\n{effects}'
)
"""The agent whose refund tool is a program of its own, which does what it says if it runs."""


@pytest.mark.parametrize("stand_in", [SHADOWED, REPLAYED], ids=["shadow", "replay"])
@pytest.mark.parametrize("new_name", ["pay__refund_order", "pay-refund_order"])
def test_an_own_tool_renamed_to_a_qualified_looking_name_is_still_stood_in_for(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, stand_in: str, new_name: str
) -> None:
    """The checks read `pay__refund_order` as `refund_order` (its qualified form), and so
    do the base fixture's `shadowTools` and `toolReplay` now: the renamed command never ran
    in their place for real, its `sideEffects` dropped, while `toolCalled` counted it."""
    evals = EVAL.format(guard="{ type: toolCalled, tool: refund_order }").replace(
        "  assertions:", f"  {stand_in}\n  assertions:"
    )
    base = repo.commit(
        "base",
        {
            "agents.yaml": OWN_COMMAND.format(
                prompt="BASE-PROMPT", tool="refund_order", effects="      sideEffects: true\n"
            ),
            "evals.yaml": evals,
        },
    )
    repo.branch("feature")
    head = repo.commit(
        "rename the tool, drop sideEffects",
        {"agents.yaml": OWN_COMMAND.format(prompt="HEAD-PROMPT", tool=new_name, effects="")},
    )
    run = gate_pull(
        github,
        model,
        (repo, base, head),
        [tool_call("refund_order", {"id": "1"}), text("I am sorry, it is done.")],
        [tool_call(new_name, {"id": "1"}), text("I am sorry, it is done.")],
    )
    found = head_run(run)
    steps = found["trace"]["steps"]
    ran = [(s["source"], s["output"]) for s in steps if s["type"] == "tool_result"]
    assert [source for source, _ in ran] == ["shadow" if stand_in == SHADOWED else "replay"]
    assert not any("REFUNDED-FOR-REAL" in output for _, output in ran), ran


OWN_BESIDE_SERVER = (
    AGENT.split("  tools:")[0]
    + """\
  watch: [mcp/*.py]
  mcpServers:
    pay:
      command: [/usr/bin/python3, mcp/desk.py]
      tools: {{ allow: [refund_order] }}
      sideEffects: [refund_order]
{own}"""
)
NAMED_AS_QUALIFIED = """  tools:
    - name: pay__refund_order
      description: Never used.
      mock: { output: unused }
"""


@pytest.mark.parametrize("shadow", ["pay.refund_order", "refund_order"])
def test_an_own_tool_named_as_an_mcp_tool_is_recorded_makes_the_head_s_run_an_error(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, shadow: str
) -> None:
    """The MCP tool is offered as `refund_order` and recorded as `pay__refund_order`: an own
    tool of that name made the base's shadow of it stand in for the own tool alone, and the
    server's side-effecting tool ran for real. The clash is the head run's error now."""
    evals = EVAL.format(guard="{ type: toolCalled, tool: refund_order }").replace(
        "  assertions:", f"  shadowTools: [{shadow}]\n  assertions:"
    )
    base = repo.commit(
        "base",
        {
            "agents.yaml": OWN_BESIDE_SERVER.format(prompt="BASE-PROMPT", own=""),
            "mcp/desk.py": STDIO_SERVER % '["refund_order"]',
            "evals.yaml": evals,
        },
    )
    repo.branch("feature")
    head = repo.commit(
        "add an own tool",
        {"agents.yaml": OWN_BESIDE_SERVER.format(prompt="HEAD-PROMPT", own=NAMED_AS_QUALIFIED)},
    )
    asks = [tool_call("refund_order", {"id": "1"}), text("I am sorry, it is done.")]
    run = gate_pull(github, model, (repo, base, head), asks, asks)
    found = head_run(run)
    steps = (found.get("trace") or {}).get("steps", [])
    assert not [s for s in steps if s["type"] == "tool_result" and s["source"] == "mcp"], steps
    assert found["status"] == "error", found
    assert "already one of the agent's own tools" in json.dumps(found), found["message"]
    assert run.returncode == 1, run.stdout + run.stderr
