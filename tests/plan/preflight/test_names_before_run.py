"""Names that would make a check vacuous, blame the agent or run a tool meant to be stood in
for, refused by `validate` and by a run before its first model call, each at the file and
line of the name with the nearest one: a tool an assertion, `shadowTools` or `toolReplay`
names that the declarative agent does not have, a Python scorer's function its file does not
define, and an agent, fixture or Eval a mock script's `match`
names that no definition has. What cannot be known before a run (an MCP server's tools it
lists, a bring-your-own agent's tools, names a scorer binds dynamically) is left alone, and
so is a base branch's fixture that gates a pull request which removed its tool."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

import pytest

from fakes.model_server import ScriptedModelServer
from plan.preflight.test_validate_before_run import line_of, problems
from support.byoagent import one_agent_suite
from support.clirun import evalward
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.integration

SUITE = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: clerk }
spec:
  models: [openai/gpt-4.1-mini]
  system: Answer questions about orders.
  tools:
    - name: lookup_order
      description: Look up an order by its id.
      parameters: { type: object, properties: { order_id: { type: string } } }
      mock: { output: { status: shipped } }
    - name: refund_order
      description: Refund an order.
      mock: { output: { refunded: true } }
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: clerk-eval }
spec:
  targetAgent: clerk
  fixtures: [status, refund-talk]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: status }
spec:
  targetAgent: clerk
  input: { type: prompt, payload: { prompt: "Where is order 12345?" } }
  shadowTools: [refund_order]
  toolReplay: [{ tool: lookup_order, output: { status: shipped } }]
  assertions:
    - { type: toolCalled, tool: lookup_order, before: [refund_order] }
    - { type: toolNotCalled, tool: refund_order, after: [lookup_order] }
    - { type: toolArgs, tool: lookup_order, args: { order_id: "12345" } }
    - { type: toolSequence, tools: [lookup_order] }
    - { type: trajectory, tools: [lookup_order], mode: subset }
    - { type: latency, tool: lookup_order, maxMs: 5000 }
    - type: assertSet
      assertions:
        - { type: toolCalled, tool: lookup_order }
        - { type: contains, value: shipped }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: refund-talk }
spec:
  targetAgent: clerk
  conversation:
    turns:
      - user: Refund order 12345, it arrived broken.
        assertions: [{ type: toolCalled, tool: refund_order }]
  assertions:
    - { type: contains, value: refund }
"""
TOOLS = "(lookup_order, refund_order)"


def passes(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning" not in done.stdout, done.stdout


def refused_alike(
    repo: GitRepo, model: ScriptedModelServer, at: str, said: str, *options: str
) -> None:
    """`validate` and `run` each refuse with the one problem `said` at `at` (`file:line`),
    and no model is asked."""
    for command in (["validate", "."], ["run", ".", "--no-cache", "--no-history"]):
        found = problems(evalward(*command, *options, cwd=repo.path, **provider_env(model)))
        assert len(found) == 1, (command, found)
        assert found[0].startswith(f"{at}:"), (command, found[0])
        assert found[0].endswith(said), (command, found[0])
    assert model.requests == []


# --- a tool the agent does not have ----------------------------------------------------------


@dataclass(frozen=True)
class Misnamed:
    id: str
    old: str
    new: str
    said: str
    """What the message says, after its `file:line:column: `."""


def tool_message(kind: str, written: str, close: str, wants_a_call: bool, said: str = "") -> str:
    said = said or (
        "the agent cannot pass it" if wants_a_call else "it passes whatever the agent does"
    )
    return (
        f"`{kind}` names the tool {written!r}, which agent 'clerk' does not have (did you mean "
        f"{close!r}?), so {said}: name one of the agent's tools {TOOLS}"
    )


STANDS_IN_FOR_NONE = "it stands in for none and the tool meant runs"
MISNAMED = [
    Misnamed(
        "shadowTools",
        "shadowTools: [refund_order]",
        "shadowTools: [refund_ordr]",
        "spec.shadowTools[0]: "
        + tool_message("shadowTools", "refund_ordr", "refund_order", False, STANDS_IN_FOR_NONE),
    ),
    Misnamed(
        "toolReplay",
        "[{ tool: lookup_order, output",
        "[{ tool: lookup_ordr, output",
        "spec.toolReplay[0].tool: "
        + tool_message("toolReplay", "lookup_ordr", "lookup_order", False, STANDS_IN_FOR_NONE),
    ),
    Misnamed(
        "toolNotCalled",
        "toolNotCalled, tool: refund_order,",
        "toolNotCalled, tool: refund_ordr,",
        "spec.assertions[1].tool: "
        + tool_message("toolNotCalled", "refund_ordr", "refund_order", False),
    ),
    Misnamed(
        "toolNotCalled-after",
        "after: [lookup_order] }",
        "after: [lookup_ordr] }",
        "spec.assertions[1].after[0]: "
        + tool_message("toolNotCalled", "lookup_ordr", "lookup_order", False),
    ),
    Misnamed(
        "toolCalled-before",
        "before: [refund_order]",
        "before: [refund]",
        "spec.assertions[0].before[0]: "
        + tool_message("toolCalled", "refund", "refund_order", False),
    ),
    Misnamed(
        "toolArgs",
        "toolArgs, tool: lookup_order,",
        "toolArgs, tool: look_up_order,",
        "spec.assertions[2].tool: "
        + tool_message("toolArgs", "look_up_order", "lookup_order", True),
    ),
    Misnamed(
        "toolSequence",
        "toolSequence, tools: [lookup_order]",
        "toolSequence, tools: [lookup_orders]",
        "spec.assertions[3].tools[0]: "
        + tool_message("toolSequence", "lookup_orders", "lookup_order", True),
    ),
    Misnamed(
        "trajectory",
        "trajectory, tools: [lookup_order]",
        "trajectory, tools: [lookup-order]",
        "spec.assertions[4].tools[0]: "
        + tool_message("trajectory", "lookup-order", "lookup_order", False),
    ),
    Misnamed(
        "latency",
        "latency, tool: lookup_order,",
        "latency, tool: lokup_order,",
        "spec.assertions[5].tool: " + tool_message("latency", "lokup_order", "lookup_order", True),
    ),
    Misnamed(
        "in-a-group",
        "        - { type: toolCalled, tool: lookup_order }",
        "        - { type: toolCalled, tool: lookup_ordre }",
        "spec.assertions[6].assertions[0].tool: "
        + tool_message("toolCalled", "lookup_ordre", "lookup_order", True),
    ),
    Misnamed(
        "a-handoff",
        "    turns:\n      - user: Refund",
        "    handoffTools: [refund_ordr]\n    turns:\n      - user: Refund",
        "spec.conversation.handoffTools[0]: "
        + tool_message(
            "handoffTools",
            "refund_ordr",
            "refund_order",
            True,
            "no call of it can hand the conversation off",
        ),
    ),
    Misnamed(
        "on-a-turn",
        "[{ type: toolCalled, tool: refund_order }]",
        "[{ type: toolCalled, tool: refund_ordr }]",
        "spec.conversation.turns[0].assertions[0].tool: "
        + tool_message("toolCalled", "refund_ordr", "refund_order", True),
    ),
]


def test_the_tools_the_agent_has_pass(repo: GitRepo) -> None:
    repo.commit("a suite", {"evals/suite.yaml": SUITE})
    passes(evalward("validate", ".", cwd=repo.path))


@pytest.mark.parametrize("mistake", MISNAMED, ids=[m.id for m in MISNAMED])
def test_an_assertion_naming_a_tool_the_agent_does_not_have_is_refused(
    repo: GitRepo, model: ScriptedModelServer, mistake: Misnamed
) -> None:
    assert SUITE.count(mistake.old) == 1
    text = SUITE.replace(mistake.old, mistake.new)
    repo.commit(mistake.id, {"evals/suite.yaml": text})
    at = f"evals/suite.yaml:{line_of(text, mistake.new)}"
    refused_alike(repo, model, at, mistake.said)


MCP = """\
  mcpServers:
    orders: { url: "http://127.0.0.1:9/mcp"{allow} }
"""


def mcp_suite(allow: str, *assertions: str) -> str:
    """SUITE's agent with an MCP server `orders` (its `tools` filter `allow`), and fixture
    `status` holding `assertions` alone."""
    text = SUITE.replace("  tools:\n", MCP.replace("{allow}", allow) + "  tools:\n", 1)
    start = text.index("  assertions:\n    - { type: toolCalled, tool: lookup_order, before")
    end = text.index("---", start)
    listed = "".join(f"    - {a}\n" for a in assertions)
    return text[:start] + "  assertions:\n" + listed + text[end:]


def test_an_mcp_servers_allowed_tools_are_named_either_way_and_checked(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    named = [
        "{ type: toolCalled, tool: track_parcel }",
        "{ type: toolCalled, tool: orders.track_parcel }",
        "{ type: toolNotCalled, tool: orders__track_parcel }",
    ]
    allow = ", tools: { allow: [track_parcel, cancel_parcel], deny: [cancel_parcel] }"
    repo.commit("allowed", {"evals/suite.yaml": mcp_suite(allow, *named)})
    passes(evalward("validate", ".", cwd=repo.path))

    text = mcp_suite(allow, *named, "{ type: toolCalled, tool: orders.cancel_parcel }")
    repo.commit("denied", {"evals/suite.yaml": text})
    message = (
        "spec.assertions[3].tool: `toolCalled` names the tool 'orders.cancel_parcel', which "
        "agent 'clerk' does not have (its MCP server 'orders' denies it: `tools.deny`), so the "
        "agent cannot pass it: name one of the agent's tools (lookup_order, refund_order, "
        "orders__track_parcel)"
    )
    at = f"evals/suite.yaml:{line_of(text, 'orders.cancel_parcel')}"
    refused_alike(repo, model, at, message)


def test_a_guard_against_a_tool_close_to_none_is_a_warning_of_validate_alone(
    repo: GitRepo,
) -> None:
    """`toolNotCalled delete_account` of an agent with no such tool passes unless the model
    calls a tool it is not offered: maybe meant (AgentV's `not-trajectory:tool-used`), so
    `validate` warns and a run goes on without a word."""
    text = SUITE.replace(
        "    - { type: toolArgs,",
        "    - { type: toolNotCalled, tool: delete_account }\n    - { type: toolArgs,",
    )
    script = "replies:\n  - match: { agent: clerk }\n    always: { content: 'Shipped, refund.' }\n"
    repo.commit("a guard", {"evals/suite.yaml": text, "mock.yaml": script})
    done = evalward("validate", ".", cwd=repo.path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0] == (
        f"warning: evals/suite.yaml:{line_of(text, 'delete_account')}:30: spec.assertions[2].tool: "
        "`toolNotCalled` names the tool 'delete_account', which agent 'clerk' does not have, "
        "so it passes unless the model calls a tool it is not offered; if it guards against "
        f"that, leave it, else name one of the agent's tools {TOOLS}"
    ), done.stdout

    done = evalward("run", ".", "--mock-script", "mock.yaml", "--no-cache", cwd=repo.path)
    said = done.stdout + done.stderr
    assert done.returncode == 1, said  # the agent calls no tool: `toolCalled` fails
    assert "delete_account" not in said.replace("delete_account was not called", ""), said


def test_tools_a_server_lists_or_a_program_has_are_not_known_before_a_run(
    repo: GitRepo,
) -> None:
    unknown = "{ type: toolNotCalled, tool: whatever_it_lists }"
    byo = one_agent_suite(
        "byo",
        "byo-status",
        command=f"[{sys.executable}, agent/byo.py]",
        prompt="Where is order 12345?",
        assertion="{ type: toolNotCalled, tool: whatever_it_has }",
    )
    files = {
        "evals/suite.yaml": mcp_suite("", unknown),
        "evals/byo.yaml": byo,
        "agent/byo.py": "print('shipped')\n",
    }
    repo.commit("unknowable", files)
    passes(evalward("validate", ".", cwd=repo.path))


def test_a_base_fixture_that_gates_may_name_a_tool_the_pull_request_removed(
    repo: GitRepo,
) -> None:
    """Under `gate-config: base` the base branch's fixtures gate the head's agent: one that
    names a tool the pull request renamed fails the gate, and the run is not refused for it
    (the pull request cannot change the base's fixture)."""
    script = "replies:\n  - match: { agent: clerk }\n    always: { content: 'Shipped, refund.' }\n"
    repo.commit("the suite", {"evals/suite.yaml": SUITE, "mock.yaml": script})
    repo.branch("rename")
    renamed = SUITE.replace("refund_order", "refund_payment")
    repo.commit("refund_order is refund_payment", {"evals/suite.yaml": renamed})
    passes(evalward("validate", ".", cwd=repo.path))

    done = evalward(
        "run", ".", "--base", "main", "--mock-script", "mock.yaml", "--no-cache", cwd=repo.path
    )
    said = done.stdout + done.stderr
    assert done.returncode == 1, said  # the gate fails: refund_order is never called
    assert "names the tool" not in said, said
    assert "refund_order was never called" in said, said


# --- a scorer's function its file does not define ---------------------------------------------

SCORED = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: clerk }
spec:
  models: [openai/gpt-4.1-mini]
  system: Answer questions about orders.
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: clerk-eval }
spec:
  targetAgent: clerk
  fixtures: [scored]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: scored }
spec:
  targetAgent: clerk
  input: { type: prompt, payload: { prompt: "Where is order 12345?" } }
  assertions:
    - { type: code, file: scorers/polite.py:polite }
"""
POLITE = "import re\n\n\ndef polite(output, context):\n    return 'please' in output\n"


@pytest.mark.parametrize(
    ("case", "written", "message"),
    [
        (
            "misspelt",
            "file: scorers/polite.py:polit",
            "spec.assertions[0].file: the Python scorer 'scorers/polite.py' defines no "
            "function 'polit' (did you mean 'polite'?); it defines polite: name one of them "
            "after the colon (`scorers/polite.py:polite`), or define 'polit' at its top level",
        ),
        (
            "unnamed",
            "file: scorers/polite.py",
            "spec.assertions[0].file: the Python scorer 'scorers/polite.py' defines no "
            "function 'get_assert' (the one called when `file` names none after a colon); it "
            "defines polite: name one of them after a colon (`scorers/polite.py:polite`), or "
            "define 'get_assert' at its top level",
        ),
    ],
)
def test_a_scorer_function_its_file_does_not_define_is_refused(
    repo: GitRepo, model: ScriptedModelServer, case: str, written: str, message: str
) -> None:
    text = SCORED.replace("file: scorers/polite.py:polite", written)
    repo.commit(case, {"evals/suite.yaml": text, "scorers/polite.py": POLITE})
    refused_alike(repo, model, f"evals/suite.yaml:{line_of(text, written)}", message)


def test_a_transform_function_its_file_does_not_define_is_refused(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    text = SCORED.replace(
        "  assertions:\n", "  transform: { file: scorers/polite.py }\n  assertions:\n"
    )
    repo.commit("transform", {"evals/suite.yaml": text, "scorers/polite.py": POLITE})
    message = (
        "spec.transform.file: the Python transform 'scorers/polite.py' defines no function "
        "'get_transform' (the one called when `file` names none after a colon); it defines "
        "polite: name one of them after a colon (`scorers/polite.py:polite`), or define "
        "'get_transform' at its top level"
    )
    at = f"evals/suite.yaml:{line_of(text, 'transform: { file')}"
    refused_alike(repo, model, at, message)


def test_validate_with_playgrounds_tells_it_once_where_it_is_written(repo: GitRepo) -> None:
    """The sample run of `--playgrounds` would find it too: it is not run, and not told
    again at the assertion."""
    text = SCORED.replace("polite.py:polite", "polite.py:polit")
    repo.commit("misspelt", {"evals/suite.yaml": text, "scorers/polite.py": POLITE})
    done = evalward("validate", ".", "--playgrounds", cwd=repo.path)
    (found,) = [line for line in problems(done) if line.startswith("evals/")]
    told = "spec.assertions[0].file: the Python scorer 'scorers/polite.py' defines no function"
    assert told in found, done.stderr
    assert done.stderr.count("defines no function") == 1, done.stderr


BOUND = {
    "imported": "from os.path import join as polite\n",
    "assigned": "polite = lambda output, context: True\n",
    "conditional": "import sys\nif sys.platform:\n    def polite(o, c):\n        return True\n",
    "in-a-try": "try:\n    from json import loads as polite\nexcept ImportError:\n    pass\n",
    "declared-global": "def make():\n    global polite\n    polite = len\n\nmake()\n",
    "star-import": "from os.path import *\n",
    "globals": "globals()['pol' + 'ite'] = lambda o, c: True\n",
    "exec": "exec('def polite(o, c): return True')\n",
}


def test_a_function_bound_otherwise_or_dynamically_is_left_to_the_run(repo: GitRepo) -> None:
    assertions = "".join(
        f"    - {{ type: code, file: scorers/{name}.py:polite }}\n" for name in sorted(BOUND)
    )
    text = SCORED.replace("    - { type: code, file: scorers/polite.py:polite }\n", assertions)
    files = {f"scorers/{name}.py": code for name, code in BOUND.items()}
    repo.commit("bound", {"evals/suite.yaml": text, **files})
    passes(evalward("validate", ".", cwd=repo.path))


# --- a mock script's names -----------------------------------------------------------------------

MOCK = """\
replies:
  - match: { purpose: judge }
    always: { content: '{"score": 1, "confidence": 1, "summary": "ok", "violations": []}' }
  - match: { agent: clerk, fixture: status, eval: clerk-eval }
    always: { content: Shipped. }
  - match: { eval: clerk-eval, fixture: example-1 }
    always: { content: Shipped. }
  - match: { fixture: pair-2 }
    always: { content: Shipped. }
"""


def test_a_mock_script_naming_what_is_defined_passes(repo: GitRepo) -> None:
    repo.commit("a suite", {"evals/suite.yaml": SUITE, "mock.yaml": MOCK})
    passes(evalward("validate", ".", "--mock-script", "mock.yaml", cwd=repo.path))


@pytest.mark.parametrize(
    ("key", "old", "new", "hint"),
    [
        ("agent", "agent: clerk,", "agent: clerc,", " (did you mean 'clerk'?)"),
        (
            "fixture",
            "fixture: status,",
            "fixture: statuss,",
            " (did you mean 'status'?)",
        ),
        (
            "eval",
            "eval: clerk-eval }\n    always",
            "eval: clerk-evals }\n    always",
            " (did you mean 'clerk-eval'?)",
        ),
    ],
)
def test_a_mock_script_naming_what_no_definition_has_is_refused(
    repo: GitRepo, key: str, old: str, new: str, hint: str
) -> None:
    script = MOCK.replace(old, new)
    assert script != MOCK
    repo.commit("a suite", {"evals/suite.yaml": SUITE, "mock.yaml": script})
    name = new.split(": ", 1)[1].split(",")[0].split(" ")[0]
    message = (
        f"replies[1].match.{key}: the entry is for {key} {name!r}, which is not defined{hint}: "
        "it would fit no call, and the calls it was written for would get another entry's "
        "reply or `default`"
    )
    for command in (["validate", "."], ["run", ".", "--no-cache", "--no-history"]):
        done = evalward(*command, "--mock-script", "mock.yaml", cwd=repo.path)
        found = problems(done)
        assert len(found) == 1, (command, found)
        assert found[0].startswith(f"mock.yaml:{line_of(script, new)}:"), (command, found[0])
        assert found[0].endswith(message), (command, found[0])
        assert "Default output from the mock provider" not in done.stdout


def test_an_entry_for_what_no_definition_is_close_to_is_a_warning(repo: GitRepo) -> None:
    """An entry for a fixture the suite no longer has, or for another suite of a shared
    script, fits no call: `validate` and the run say so, and go on."""
    script = MOCK + "  - match: { agent: helpdesk }\n    always: { content: Hello. }\n"
    repo.commit("a suite", {"evals/suite.yaml": SUITE, "mock.yaml": script})
    warning = (
        f"warning: mock.yaml:{line_of(script, 'helpdesk')}:14: replies[4].match.agent: the "
        "entry is for agent 'helpdesk', which is not defined (the agents are clerk): it would "
        "fit no call; remove it if it is stale, or name what it is for"
    )
    done = evalward("validate", ".", "--mock-script", "mock.yaml", cwd=repo.path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0] == warning, done.stdout

    done = evalward("run", ".", "--mock-script", "mock.yaml", "--no-cache", cwd=repo.path)
    said = done.stdout + done.stderr
    assert done.returncode == 1, said  # the agent calls no tool: `toolCalled` fails
    assert warning in said, said


@pytest.mark.parametrize("script", ["", "replies: []\n", "default: fine\n"])
def test_a_mock_script_of_no_reply_is_a_warning(repo: GitRepo, script: str) -> None:
    """Every call got the script's `default` whatever it asked, and a fixture that only
    checks what the text lacks passed, with nothing said."""
    repo.commit("a suite", {"evals/suite.yaml": SUITE, "mock.yaml": script})
    done = evalward("validate", ".", "--mock-script", "mock.yaml", cwd=repo.path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "replies: the mock script lists no reply: every call is answered with its " in (
        done.stdout
    ), done.stdout
    assert "so a run checks that text, not what the agent does" in done.stdout
