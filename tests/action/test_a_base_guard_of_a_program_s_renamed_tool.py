"""A pull request that renames the tool a base branch's fixture guards against, in a
bring-your-own agent's program.

The base's fixture says `toolNotCalled: refund_order`. The agent is a program of its own
(`runtime:`), whose tools are not known before a run; but every request it sends its model
through evalward's model proxy names the tools it offers. A head program whose tool is now
`issue_refund` calls it freely: the guard sees no `refund_order` and would pass. Where the
base's run offered `refund_order` and the head's offered it in none of its calls, the check
fails, as it does for a declarative agent's renamed tool. The pull requests run as the runner
runs the action: a real repository, the fake GitHub API and the scripted model server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_script import Reply
from fakes.model_server import ScriptedModelServer, text, tool_call
from support.actionrun import SHARD_KEY, ActionRun, pull_request_event, run_action, run_shards
from support.agentenv import PYTHON
from support.clirun import evalward
from support.gitrepo import GitRepo
from support.resultdb import store, stored
from support.suite import provider_env

pytestmark = pytest.mark.hostile

PROGRAM = r"""
import json, os, sys, urllib.request

PROMPT = "{prompt}"
TOOLS = {tools}
request = json.loads(sys.stdin.readline())
messages = [{{"role": "system", "content": PROMPT}},
            {{"role": "user", "content": request["messages"][-1]["content"]}}]
for number in range(4):
    offered = TOOLS[min(number, len(TOOLS) - 1)]
    body = {{"model": "gpt-agent", "messages": messages}}
    if offered:
        body["tools"] = [{{"type": "function", "function": {{"name": name, "parameters": {{}}}}}}
                         for name in offered]
    sent = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=json.dumps(body).encode(),
        headers={{"content-type": "application/json",
                  "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]}})
    with urllib.request.urlopen(sent, timeout=60) as reply:
        message = json.loads(reply.read())["choices"][0]["message"]
    messages.append(message)
    calls = message.get("tool_calls") or []
    if not calls:
        print(message["content"])
        break
    for call in calls:
        messages.append({{"role": "tool", "tool_call_id": call["id"], "content": "refunded"}})
"""
"""The agent: a chat loop offering the model `tools[n]` on its n-th call (the last list on
the calls after), answering each tool call with "refunded"."""

SUITE = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: refunds }}
spec:
  runtime:
    command: {{ run: [{PYTHON}, agent/refunds.py] }}
  watch: [agent/*]
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: refunds-eval }}
spec:
  targetAgent: refunds
  fixtures: [no-refund]
  SETTINGS
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: no-refund }}
spec:
  targetAgent: refunds
  input: {{ type: prompt, payload: {{ prompt: Refund order 1 please. }} }}
  assertions:
    - {{ type: toolNotCalled, tool: GUARDED }}
    - {{ type: contains, value: sorry }}
"""


def program(prompt: str, *offered: list[str]) -> str:
    return PROGRAM.format(prompt=prompt, tools=json.dumps(list(offered)))


def agent_asked(body: dict[str, Any], prompt: str) -> bool:
    return prompt in json.dumps(body["messages"][0])


SETTINGS = {
    "fixed": "",
    "held-back": "scoring: { gate: { failOnRegression: none, baseRuns: whereRead } }",
    "adaptive": "execution: { reps: { min: 1, max: 3 } }",
}
"""The Eval's settings: fixed reps; a decision on the head alone, whose base runs are held
back for the fixtures the head does not pass; adaptive reps, whose base runs rounds ask for."""


def renamed(
    repo: GitRepo, head: str, *, guarded: str = "refund_order", settings: str = ""
) -> tuple[str, str]:
    """The base (its program offering `refund_order`, guarded against `guarded`, its Eval
    with `settings`) and a head whose program is `head`."""
    base = repo.commit(
        "base",
        {
            "evals.yaml": SUITE.replace("GUARDED", guarded).replace("SETTINGS", settings),
            "agent/refunds.py": program("BASE-PROMPT never refund.", ["refund_order"]),
        },
    )
    repo.branch("feature")
    return base, repo.commit("rename the tool", {"agent/refunds.py": head})


def gate(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    change: tuple[str, str],
    head_says: list[Reply],
    inputs: dict[str, str] | None = None,
) -> ActionRun:
    """Pull request 7 of `change` (its base and head) gated by the action, the base's agent
    answering that it will not refund and the head's with `head_says`."""
    base, head = change
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    model.script(lambda b: agent_asked(b, "BASE-PROMPT"), text("I am sorry, no refunds."))
    model.script(lambda b: agent_asked(b, "HEAD-PROMPT"), *head_says)
    return run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=provider_env(model),
        inputs={"cache": "off", **(inputs or {})},
    )


REFUNDS = [tool_call("issue_refund", {"id": "1"}), text("I am sorry, it is done.")]
"""The head's model: it calls the renamed tool, then says it is done."""


def head_run(run: ActionRun) -> dict[str, Any]:
    found: dict[str, Any] = next(
        f for f in run.results()["fixtures"] if (f["fixture"], f["side"]) == ("no-refund", "head")
    )
    return found


@pytest.mark.parametrize("settings", sorted(SETTINGS))
def test_a_base_guard_of_a_tool_the_programs_pull_request_renamed_fails_and_says_why(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, settings: str
) -> None:
    """Whichever base runs the Eval's settings make, the base's run of the fixture is done
    before the head's is scored, and says what it offered."""
    head = program("HEAD-PROMPT always refund.", ["issue_refund"])
    change = renamed(repo, head, settings=SETTINGS[settings])
    run = gate(repo, github, model, change, REFUNDS)

    found = head_run(run)
    calls = [s["tool"] for s in found["trace"]["steps"] if s["type"] == "tool_call"]
    assert calls == ["issue_refund"], found["trace"]["steps"]
    assert found["rep"] == 0, found
    assert found["trace"]["offered_tools"] == ["issue_refund"], found["trace"]
    base = next(f for f in run.results()["fixtures"] if (f["side"], f["rep"]) == ("base", 0))
    assert base["trace"]["offered_tools"] == ["refund_order"], base["trace"]
    assert found["status"] == "fail", found
    checked = found["assertions"][0]
    assert (checked["status"], checked["score"]) == ("fail", 0.0), checked
    said = checked["message"]
    assert "'refund_order'" in said and "'refunds'" in said, said
    assert "removed or renamed" in said and "bypass label" in said, said
    assert found["assertions"][1]["status"] == "pass"  # the rest of the fixture reads as ever
    assert run.returncode == 1, run.stdout + run.stderr
    assert "removed or renamed" in github.comments_on(7)[0]["body"]


@pytest.mark.parametrize(
    ("offered", "guarded"),
    [
        ([["refund_order", "issue_refund"]], "refund_order"),
        ([[], ["refund_order"]], "refund_order"),
        ([["issue_refund"]], "delete_account"),
        ([["billing__refund_order"]], "refund_order"),
    ],
    ids=["offered-not-called", "offered-on-one-call", "never-offered", "qualified"],
)
@pytest.mark.parametrize("settings", sorted(SETTINGS))
def test_control_a_head_that_offers_the_guarded_tool_or_a_guard_of_none_passes(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    offered: list[list[str]],
    guarded: str,
    settings: str,
) -> None:
    """A head program that still offers `refund_order` (beside its new tool, on one call of
    several, or qualified by its server), and a guard against a tool neither side's program
    offers: the guard reads the calls as ever, and the run passes, whichever base runs the
    Eval's settings make."""
    program_ = program("HEAD-PROMPT", *offered)
    change = renamed(repo, program_, guarded=guarded, settings=SETTINGS[settings])
    run = gate(repo, github, model, change, REFUNDS)

    found = head_run(run)
    assert found["status"] == "pass", found
    assert run.returncode == 0, run.stdout + run.stderr
    assert "removed or renamed" not in run.stdout, run.stdout


NO_MODEL = 'print("I am sorry, it is done.")\n'
"""A head program that calls no model at all: it offers no tool."""


def test_a_head_program_that_calls_no_model_fails_the_base_guard(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    run = gate(repo, github, model, renamed(repo, NO_MODEL), [])

    found = head_run(run)
    assert found["trace"]["offered_tools"] == [], found["trace"]
    assert found["status"] == "fail", found
    assert "removed or renamed" in found["assertions"][0]["message"], found
    assert run.returncode == 1, run.stdout + run.stderr


def script_both(model: ScriptedModelServer) -> None:
    """The base's agent will not refund; the head's refunds through its renamed tool."""
    model.script(lambda b: agent_asked(b, "BASE-PROMPT"), text("I am sorry, no refunds."))
    model.script(lambda b: agent_asked(b, "HEAD-PROMPT"), *REFUNDS)


def test_a_pass_cached_where_no_base_compared_is_not_read_for_the_renamed_tools_head(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    """A run of the head alone (a push of its branch) scores the guard as passing: no base
    run says what it offered. The head's run against the base reads no such result."""
    renamed(repo, program("HEAD-PROMPT always refund.", ["issue_refund"]))
    script_both(model)
    env = provider_env(model)
    alone = evalward("run", ".", "--all", cwd=repo.path, **env)
    assert alone.returncode == 0, alone.stdout + alone.stderr

    compared = evalward("run", ".", "--base", "main", cwd=repo.path, **env)
    said = compared.stdout + compared.stderr
    assert compared.returncode == 1, said
    assert "removed or renamed it:" in said, said


def test_a_base_run_cached_without_what_it_offered_runs_again(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    """A base result kept before its runs recorded the tools they offered says nothing of
    them: it is not read, the base's run is made again, and the head's guard is held."""
    renamed(repo, program("HEAD-PROMPT always refund.", ["issue_refund"]))
    script_both(model)
    env = provider_env(model)
    first = evalward("run", ".", "--base", "main", cwd=repo.path, **env)
    assert first.returncode == 1, first.stdout + first.stderr
    cache = repo.path / ".evalward" / "cache"
    kept = stored(cache)
    older = {k: r for k, r in kept.items() if r["side"] == "base"}
    assert older, kept
    for result in older.values():
        del result["trace"]["offered_tools"]
    store(cache, older)
    asked = len(model.requests_mentioning("BASE-PROMPT"))

    again = evalward("run", ".", "--base", "main", cwd=repo.path, **env)
    said = again.stdout + again.stderr
    assert again.returncode == 1, said
    assert len(model.requests_mentioning("BASE-PROMPT")) > asked, "the base's run was read"
    assert "removed or renamed it:" in said and "not known" not in said, said


@pytest.mark.parametrize(
    ("guarded", "decided"),
    [("refund_order", 1), ("delete_account", 0)],
    ids=["renamed", "never-offered"],
)
def test_a_shard_runs_the_base_run_a_guard_reads_beside_the_head_s(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    tmp_path: Path,
    guarded: str,
    decided: int,
) -> None:
    """Split in two parts, the base's run of the fixture and the head's would each have a
    part of their own, and the head's would be scored knowing nothing of what the base's
    offered: both run in one part, so the renamed tool fails and a guard of a tool neither
    side offers passes, as in one job."""
    base, head = renamed(repo, program("HEAD-PROMPT", ["issue_refund"]), guarded=guarded)
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    script_both(model)
    event = pull_request_event(github.repository, 7, base, head)
    common = {"cache": "off", "shard-key": SHARD_KEY}
    shards = tmp_path / "shards"
    run_shards(repo.path, github, event, shards, env=provider_env(model), inputs=common)

    merged = run_action(
        repo.path,
        github,
        event,
        inputs={**common, "merge": str(shards / "shard-*-of-2.json")},
        env=provider_env(model),
        run_dir=tmp_path / "runner-merge",
    )
    said = merged.stdout + merged.stderr
    assert merged.returncode == decided, said
    assert "not known" not in json.dumps(merged.results()), said
    assert ("removed or renamed it:" in said) == bool(decided), said


DECLARATIVE = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: refunds }
spec:
  models: [openai/gpt-agent]
  system: BASE-PROMPT never refund.
  tools:
    - name: refund_order
      description: Refund an order.
      parameters: { type: object, properties: { id: { type: string } } }
      mock: { output: refunded }
"""
"""The base's agent as a definition: its tools are the ones it lists."""


def test_a_declarative_tool_renamed_as_the_agent_becomes_a_program_fails_the_base_guard(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The pull request makes the declarative agent a program of its own, whose tool is
    `issue_refund`: what the head offers is known only as it runs, and what the base has is
    its definition's list."""
    agent, rest = SUITE.replace("GUARDED", "refund_order").replace("SETTINGS", "").split("---\n", 1)
    base = repo.commit("base", {"agents.yaml": DECLARATIVE, "evals.yaml": rest})
    repo.branch("feature")
    head = repo.commit(
        "the agent is a program",
        {
            "agents.yaml": agent,
            "agent/refunds.py": program("HEAD-PROMPT always refund.", ["issue_refund"]),
        },
    )
    run = gate(repo, github, model, (base, head), REFUNDS)

    found = head_run(run)
    assert found["status"] == "fail", found
    said = found["assertions"][0]["message"]
    assert "has the tool 'refund_order' on the base branch" in said, said
    assert "removed or renamed it:" in said, said
    assert run.returncode == 1, run.stdout + run.stderr


def test_a_program_s_tool_renamed_as_the_agent_becomes_a_definition_fails_the_base_guard(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The other way round: the base's agent is a program offering `refund_order`, and the
    pull request makes it a definition whose tool is `issue_refund`. What the head has is
    its definition's list, known before it runs; what the base offered, only as its run of
    the fixture ends."""
    agent, rest = SUITE.replace("GUARDED", "refund_order").replace("SETTINGS", "").split("---\n", 1)
    base = repo.commit(
        "base",
        {
            "agents.yaml": agent,
            "evals.yaml": rest,
            "agent/refunds.py": program("BASE-PROMPT never refund.", ["refund_order"]),
        },
    )
    repo.branch("feature")
    definition = DECLARATIVE.replace("BASE-PROMPT never", "HEAD-PROMPT always").replace(
        "refund_order", "issue_refund"
    )
    head = repo.commit("the agent is a definition", {"agents.yaml": definition})
    run = gate(repo, github, model, (base, head), REFUNDS)

    found = head_run(run)
    assert found["status"] == "fail", found
    said = found["assertions"][0]["message"]
    assert "offered its model the tool 'refund_order' in the base branch's run" in said, said
    assert "removed or renamed it:" in said, said
    assert run.returncode == 1, run.stdout + run.stderr


LONG_DECOY = "a" * 187 + "-refund_order" + "_v2"
"""A tool 203 characters long, `…-refund_order_v2`: not `refund_order` (its last segment is
`refund_order_v2`), though its first 200 characters end in `-refund_order`."""


def test_a_name_past_the_kept_length_does_not_stand_for_the_tool_its_prefix_names(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """A head program that renames `refund_order` and offers, beside its new tool, one whose
    name is longer than a run keeps: what it offered is not a prefix of that name, which
    would read as `refund_order` and make the guard see calls of a tool never offered."""
    head = program("HEAD-PROMPT always refund.", [LONG_DECOY, "issue_refund"])
    run = gate(repo, github, model, renamed(repo, head), REFUNDS)

    found = head_run(run)
    assert run.returncode == 1, run.stdout + run.stderr
    assert found["status"] == "fail", found
    assert "removed or renamed it:" in found["assertions"][0]["message"], found
    assert found["trace"]["offered_tools"] == ["issue_refund"], found["trace"]


REACT_PROGRAM = r"""
import json, os, re, sys, urllib.request

PROMPT = "PROMPT_HERE"
TOOLS = TOOLS_HERE + ["finish"]
listed = "\n".join(
    f"        ({number}) {name}, whose description is <desc>Acts.</desc>. It takes arguments {{}}."
    for number, name in enumerate(TOOLS, 1))
SYSTEM = (
    "Your output fields are:\n1. `next_thought` (str)\n"
    "2. `next_tool_name` (Literal[" + ", ".join(repr(name) for name in TOOLS) + "])\n"
    "3. `next_tool_args` (dict[str, Any])\n"
    "All interactions will be structured in the following way, with the appropriate values "
    "filled in.\n\n[[ ## next_thought ## ]]\n{next_thought}\n\n"
    "[[ ## next_tool_name ## ]]\n{next_tool_name}\n\n[[ ## next_tool_args ## ]]\n"
    "{next_tool_args}\n\n[[ ## completed ## ]]\n"
    "In adhering to this structure, your objective is: \n        " + PROMPT + "\n"
    "        When selecting the next_tool_name and its next_tool_args, the tool must be one "
    "of:\n        \n" + listed)
question = json.loads(sys.stdin.readline())["messages"][-1]["content"]
trajectory = ""
for number in range(4):
    user = f"[[ ## question ## ]]\n{question}\n\n[[ ## trajectory ## ]]\n{trajectory}"
    body = {"model": "gpt-agent",
            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]}
    sent = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=json.dumps(body).encode(),
        headers={"content-type": "application/json",
                 "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
    with urllib.request.urlopen(sent, timeout=60) as reply:
        said = json.loads(reply.read())["choices"][0]["message"]["content"]
    fields = dict(re.findall(r"\[\[ ## (\w+) ## \]\]\n(.*?)\n\n", said + "\n\n", re.S))
    tool = fields.get("next_tool_name", "finish").strip()
    if tool == "finish":
        print(fields.get("next_thought", said))
        break
    trajectory += (
        f"[[ ## thought_{number} ## ]]\n{fields['next_thought']}\n\n"
        f"[[ ## tool_name_{number} ## ]]\n{tool}\n\n"
        f"[[ ## tool_args_{number} ## ]]\n{fields['next_tool_args']}\n\n"
        f"[[ ## observation_{number} ## ]]\nrefunded\n\n")
"""
"""The agent as DSPy's ReAct writes its requests (its ChatAdapter): no `tools` field, the
tools listed in the system instructions, and each call the model's text asks for."""


def react_program(prompt: str, tools: list[str]) -> str:
    return REACT_PROGRAM.replace("PROMPT_HERE", prompt).replace("TOOLS_HERE", json.dumps(tools))


def react_step(thought: str, tool: str, args: dict[str, Any]) -> Reply:
    """A ReAct step as DSPy's ChatAdapter asks the model to write it."""
    return text(
        f"[[ ## next_thought ## ]]\n{thought}\n\n[[ ## next_tool_name ## ]]\n{tool}\n\n"
        f"[[ ## next_tool_args ## ]]\n{json.dumps(args)}\n\n[[ ## completed ## ]]"
    )


def react_gate(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, head_tools: list[str]
) -> ActionRun:
    """Pull request 7, the base's ReAct program offering `refund_order` and the head's
    `head_tools`, whose model calls `issue_refund` and then says it is done."""
    base = repo.commit(
        "base",
        {
            "evals.yaml": SUITE.replace("GUARDED", "refund_order").replace("SETTINGS", ""),
            "agent/refunds.py": react_program("BASE-PROMPT never refund.", ["refund_order"]),
        },
    )
    repo.branch("feature")
    head = repo.commit(
        "rename the tool",
        {"agent/refunds.py": react_program("HEAD-PROMPT always refund.", head_tools)},
    )
    # each step is a fresh request: the one after the refund carries its observation
    model.script(
        lambda b: agent_asked(b, "HEAD-PROMPT") and "observation_0" in json.dumps(b["messages"]),
        react_step("I am sorry, it is done.", "finish", {}),
    )
    says = [react_step("I refund it.", "issue_refund", {"id": "1"})]
    return gate(repo, github, model, (base, head), says)


def test_a_tool_renamed_in_a_react_prompt_fails_the_base_guard(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """DSPy's ReAct offers its tools in its prompt's text, not in a `tools` field, and the
    model calls them in its reply's text: what such a run offered is the tools its
    instructions list, so a head that renamed `refund_order` there fails the base's guard."""
    run = react_gate(repo, github, model, ["issue_refund"])

    found = head_run(run)
    calls = [s["tool"] for s in found["trace"]["steps"] if s["type"] == "tool_call"]
    assert calls == ["issue_refund"], found["trace"]["steps"]
    base_run = next(f for f in run.results()["fixtures"] if f["side"] == "base")
    assert base_run["trace"]["offered_tools"] == ["refund_order"], base_run["trace"]
    assert found["trace"]["offered_tools"] == ["issue_refund"], found["trace"]
    assert found["status"] == "fail", found
    assert "removed or renamed it:" in found["assertions"][0]["message"], found
    assert run.returncode == 1, run.stdout + run.stderr


def test_control_a_react_head_that_still_lists_the_guarded_tool_passes(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    run = react_gate(repo, github, model, ["refund_order", "issue_refund"])

    found = head_run(run)
    assert found["trace"]["offered_tools"] == ["refund_order", "issue_refund"], found["trace"]
    assert found["status"] == "pass", found
    assert run.returncode == 0, run.stdout + run.stderr
