"""AgentV suites as AgentV writes them today (`providers`, `prompts`, `tests` with `vars` and
`assert`, `file://` datasets), read by `evalward run` and `evalward validate` with no import
step: every entry of an `assert` list honoured, or refused at its line."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalward.definitions.loader import load_resources
from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

AGENTS = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: support-bot }
spec:
  models: [openai/gpt-test]
  system: Help.
  tools:
    - name: lookup_order
      description: Look up an order.
      parameters: { type: object, properties: { order_id: { type: string } } }
      mock: { output: { status: shipped } }
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: support-eval }
spec:
  targetAgent: support-bot
  fixtureSelector: { matchLabels: { agent: support-bot } }
  judge: { model: openai/judge-test }
"""

SUITE = """\
name: support
description: Written as AgentV's examples write a suite
providers:
  - support-bot
prompts:
  - "{{ input }}"
tests:
  - id: order-status
    conversation_id: order-12345
    assert:
      - type: contains
        value: shipped
        required: true
      - metric: tool-flow
        type: trajectory:tool-sequence
        value: { mode: in_order, steps: [lookup_order] }
      - type: trajectory:tool-args-match
        value: { name: lookup_order, args: { order_id: "12345" }, mode: partial }
      - metric: keywords
        type: script
        command: [python3, graders/mentions.py, shipped]
        weight: 2
      - The answer says where the order is
    vars:
      input:
        - role: system
          content:
            - type: text
              value: "Policy:"
            - type: file
              value: policy.md
        - role: user
          content: Where is order 12345?
      expected_output:
        - role: assistant
          content: Order 12345 has shipped.
      customer: Ada
  - file://datasets/more.jsonl
"""

DATASET = (
    json.dumps(
        {
            "id": "json-reply",
            "conversation_id": "order-12345",
            "vars": {"input": "Give the status as JSON."},
            "assert": [
                {"type": "is-json", "required": True},
                {
                    "type": "assert-set",
                    "metric": "shape",
                    "assert": [
                        {"type": "contains", "value": "status"},
                        {"type": "regex", "value": "shipp(ed|ing)", "weight": 3},
                    ],
                },
                {"type": "latency", "threshold": 600000},
            ],
        }
    )
    + "\n"
)

MENTIONS = """\
import json, sys

data = json.load(sys.stdin)
word = sys.argv[1]
found = word in data["output"]
print(json.dumps({"pass": found, "score": 1 if found else 0,
                  "reason": f"mentions {word}: {found}; vars {data['vars']}"}))
"""

MOCK = """\
replies:
  - match: { purpose: judge }
    turns:
      - content: '{"score": 0.9, "confidence": 0.9, "summary": "Says so.", "violations": []}'
  - match: { fixture: order-status }
    turns:
      - toolCalls: [{ name: lookup_order, arguments: { order_id: "12345" } }]
      - content: Order 12345 has shipped.
  - match: { fixture: json-reply }
    turns: [{ content: '{"status": "shipped"}' }]
"""


def files(**changes: str) -> dict[str, str]:
    return {
        "agents.yaml": AGENTS,
        "evals/support/suite.yaml": SUITE,
        "evals/support/policy.md": "Be brief.\n",
        "evals/support/datasets/more.jsonl": DATASET,
        "evals/support/graders/mentions.py": MENTIONS,
        "mock.yaml": MOCK,
        **changes,
    }


def run(repo: GitRepo) -> dict[str, Any]:
    done = evalward("run", ".", "--mock-script", "mock.yaml", "--json", "--no-cache", cwd=repo.path)
    assert done.returncode == 0, done.stdout + done.stderr
    results: dict[str, Any] = json.loads(done.stdout)
    return results


def test_a_current_agentv_suite_runs_with_every_assertion(repo: GitRepo) -> None:
    repo.commit("an AgentV suite", files())
    results = run(repo)
    by_name = {f["fixture"]: f for f in results["fixtures"]}
    assert set(by_name) == {"order-status", "json-reply"}

    order = by_name["order-status"]
    assert [(a["type"], a["status"], a["axis"]) for a in order["assertions"]] == [
        ("contains", "pass", None),  # AgentV's `contains`: case counts
        ("toolSequence", "pass", "tool-flow"),
        ("toolArgs", "pass", None),
        ("code", "pass", "keywords"),
        ("judge", "pass", None),
    ]
    script = order["assertions"][3]
    assert script["message"] == "mentions shipped: True; vars {'customer': 'Ada'}"
    assert script["weight"] == 2
    (step,) = [s for s in order["trace"]["steps"] if s["type"] == "input"][:1]
    assert step["content"].startswith('Policy:\n<file path="policy.md">\nBe brief.')

    # the tests of one conversation are selected together
    fixtures = load_resources(repo.path).fixtures
    for name in ("order-status", "json-reply"):
        labels = fixtures[name].resource.metadata.labels
        assert labels["agentv-conversation"] == "order-12345", name

    reply = by_name["json-reply"]
    assert [(a["type"], a["status"], a["axis"], a["weight"]) for a in reply["assertions"]] == [
        ("jsonSchema", "pass", None, 1.0),
        ("contains", "pass", "shape", 1.0),
        ("regex", "pass", "shape", 3.0),
        ("latency", "pass", None, 1.0),
    ]


def test_what_evalward_cannot_honour_is_refused_at_its_line(repo: GitRepo) -> None:
    refused = SUITE.replace(
        "      - The answer says where the order is\n",
        "      - The answer says where the order is\n"
        "      - type: assert-set\n"
        "        threshold: 0.5\n"
        "        assert: [{ type: contains, value: a }]\n",
    ).replace(
        "    conversation_id: order-12345\n", "    conversation_id: order-12345\n    options: {}\n"
    )
    refused = refused.replace(
        '  - "{{ input }}"\n', '  - "{{ input }}"\n  - "Again: {{ input }}"\n'
    )
    refused += "  - file://datasets/more.xlsx\n"
    repo.commit("what cannot run", files(**{"evals/support/suite.yaml": refused}))
    done = evalward("validate", ".", cwd=repo.path)
    assert done.returncode == 2
    said = done.stdout + done.stderr
    for where, what in [
        ("suite.yaml:7:5: prompts[1]", "evalward runs one prompt per suite"),
        ("suite.yaml:11:5: tests[0].options", "`options` is not read by evalward"),
        ("suite.yaml:44:5: tests[2]", "evalward reads YAML, JSONL and CSV datasets"),
    ]:
        line = next((x for x in said.splitlines() if where in x), "")
        assert what in line, (where, said)


def test_a_template_prompt_is_rendered_with_the_vars(repo: GitRepo) -> None:
    templated = SUITE.replace(
        '  - "{{ input }}"\n', '  - "Customer {{ customer }} asks: {{ input }}"\n'
    )
    templated = templated[: templated.index("        - role: system")] + (
        "        Where is order 12345?\n      customer: Ada\n"
    )
    templated = templated.replace("      input:\n        Where", "      input: >-\n        Where")
    repo.commit("a template", files(**{"evals/support/suite.yaml": templated}))
    results = run(repo)
    (order,) = results["fixtures"]  # the dataset's test has no `customer`: not in this suite
    first = next(s for s in order["trace"]["steps"] if s["type"] == "input")
    assert first["content"] == "Customer Ada asks: Where is order 12345?"


THRESHOLDS = """\
name: thresholds
providers: [support-bot]
prompts: ["{{ input }}"]
tests:
  - id: half-is-enough
    threshold: 0.5
    vars: { input: Where is my order? }
    assert:
      - { type: contains, value: shipped }
      - { type: contains, value: refund }
  - id: half-is-not-enough
    threshold: 0.75
    vars: { input: Where is my order? }
    assert:
      - { type: contains, value: shipped }
      - { type: contains, value: refund }
"""
SHIPPED = "replies:\n  - match: { agent: support-bot }\n    turns: [{ content: It has shipped. }]\n"


def test_a_test_threshold_decides_its_fixture_as_agentv_decides_the_test(repo: GitRepo) -> None:
    repo.commit(
        "thresholds", files(**{"evals/support/suite.yaml": THRESHOLDS, "mock.yaml": SHIPPED})
    )
    done = evalward("run", ".", "--mock-script", "mock.yaml", "--json", "--no-cache", cwd=repo.path)
    by_name = {f["fixture"]: f for f in json.loads(done.stdout)["fixtures"]}
    assert (by_name["half-is-enough"]["status"], by_name["half-is-enough"]["score"]) == (
        "pass",
        0.5,
    )
    assert by_name["half-is-not-enough"]["status"] == "fail"
    assert "score 0.50 < passThreshold 0.75" in by_name["half-is-not-enough"]["message"]
    assert done.returncode == 1

    required = THRESHOLDS.replace("value: shipped }", "value: shipped, required: true }", 1)
    repo.commit("a required grader", {"evals/support/suite.yaml": required})
    refused = evalward("validate", ".", cwd=repo.path)
    assert refused.returncode == 2
    said = (refused.stdout + refused.stderr).splitlines()
    line = next(x for x in said if "tests[0].threshold" in x)
    assert "suite.yaml:6:5:" in line and "beside a `required` grader" in line, line


RUBRICS = """\
name: rubrics
providers: [support-bot]
prompts: ["{{ input }}"]
tests:
  - id: graded
    vars: { input: Summarise the note. }
    assert:
      - type: llm-rubric
        metric: faithful
        weight: 2
        value:
          - Mentions the revenue
          - { id: revenue, operator: correctness, outcome: Revenue rose to $10M., required: true }
          - { id: margin, operator: contradiction, outcome: Margin fell to 42%. }
          - id: brevity
            weight: 0.5
            min_score: 0.8
            score_ranges: { "0": Over 50 words., "10": Under 50 words and clear. }
"""


def test_an_llm_rubric_s_items_become_one_judge_each(repo: GitRepo) -> None:
    repo.commit("rubric items", files(**{"evals/support/suite.yaml": RUBRICS}))
    (graded,) = load_resources(repo.path).fixtures.values()
    judges = [a.model_dump(by_alias=True) for a in graded.resource.spec.assertions]
    assert [(j["rubric"], j["weight"], j["axis"], j["minScore"]) for j in judges] == [
        ("Mentions the revenue", 2.0, "faithful", 0.5),
        ("The answer states this, correctly: Revenue rose to $10M.", 2.0, "faithful", 0.5),
        ("The answer does not contradict this: Margin fell to 42%.", 2.0, "faithful", 0.5),
        (
            "brevity, scored from 0 to 10 (a score of 10 is 1.0):\n- 0: Over 50 words.\n"
            "- 10: Under 50 words and clear.",
            1.0,
            "faithful",
            0.8,
        ),
    ]

    unknown = RUBRICS.replace("operator: contradiction,", "operator: contradiction, rank: 1,")
    repo.commit("an item key evalward does not read", {"evals/support/suite.yaml": unknown})
    refused = evalward("validate", ".", cwd=repo.path)
    assert refused.returncode == 2
    assert "tests[0].assert[0].value[2].rank: `rank` of a rubric item is not read" in (
        refused.stdout + refused.stderr
    )


CHECKED = """\
name: checked
providers: [support-bot]
prompts: ["{{ input }}"]
tests:
  - id: checked
    vars: { input: Where is my order? }
    assert:
      - { type: trajectory:tool-used, value: lookup_order }
      - { type: trajectory:tool-used, value: { name: lookup_order, min: 2 } }
      - { type: not-trajectory:tool-used, value: [refund, cancel] }
      - { type: execution-metrics, max_tool_calls: 3, max_llm_calls: 4, max_tokens: 2000,
          max_cost_usd: 0.05, max_duration_ms: 30000 }
      - { type: contains-any, value: [Acme, Globex], negate: true }
"""
CHECKED_REPLIES = """\
replies:
  - match: { agent: support-bot }
    turns:
      - toolCalls: [{ name: lookup_order, arguments: { order_id: "1" } }]
      - toolCalls: [{ name: lookup_order, arguments: { order_id: "2" } }]
      - content: Both orders have shipped; Acme will deliver them.
"""


def test_tool_use_bounds_and_negated_lists_are_checked_as_agentv_checks_them(
    repo: GitRepo,
) -> None:
    priced = "pricing: { openai/gpt-test: { input: 1.0, output: 2.0 } }\n"
    suite = {"evals/support/suite.yaml": CHECKED, "mock.yaml": CHECKED_REPLIES}
    repo.commit("checks", files(**suite, **{"evalward.yaml": priced}))
    done = evalward("run", ".", "--mock-script", "mock.yaml", "--json", "--no-cache", cwd=repo.path)
    (fixture,) = json.loads(done.stdout)["fixtures"]
    found = [(a["type"], a["status"]) for a in fixture["assertions"]]
    assert found == [
        ("toolCalled", "pass"),
        ("toolSequence", "pass"),  # lookup_order twice
        ("toolNotCalled", "pass"),
        ("toolNotCalled", "pass"),
        ("maxSteps", "pass"),
        ("maxSteps", "pass"),
        ("cost", "pass"),
        ("cost", "pass"),
        ("latency", "pass"),
        ("regex", "fail"),  # it names Acme
    ], fixture["assertions"]
    assert done.returncode == 1

    bounded = CHECKED.replace("min: 2 }", "min: 2, max: 3 }")
    repo.commit("an upper bound", {"evals/support/suite.yaml": bounded})
    refused = evalward("validate", ".", cwd=repo.path)
    assert "tests[0].assert[1].value.max: `max` of trajectory:tool-used is not checked" in (
        refused.stdout + refused.stderr
    )


EXPECTED_CALLS = """\
name: expected-calls
providers: [support-bot]
prompts: ["{{ input }}"]
tests:
  - id: searched
    assert: [The answer is grounded in the search]
    vars:
      input: What is TypeScript based on?
      expected_output:
        - role: assistant
          tool_calls:
            - tool: vector_search
              input: { query: TypeScript }
              output: { results: [builds on JavaScript] }
        - { role: assistant, content: TypeScript builds on JavaScript. }
"""


def test_an_expected_message_of_tool_calls_is_the_judge_s_reference(repo: GitRepo) -> None:
    repo.commit("expected calls", files(**{"evals/support/suite.yaml": EXPECTED_CALLS}))
    (searched,) = load_resources(repo.path).fixtures.values()
    assert searched.resource.spec.reference == (
        'tool call: vector_search({"query": "TypeScript"}) -> '
        '{"results": ["builds on JavaScript"]}\n\nTypeScript builds on JavaScript.'
    )


CONVERSATION = """\
name: tutor
providers: [support-bot]
prompts: ["{{ input }}"]
tests:
  - id: remembers
    mode: conversation
    aggregation: min
    on_turn_failure: stop
    assert:
      - { type: contains, value: "200" }
    turns:
      - input: What is 15% of 200?
        assert:
          - { type: contains, value: "30" }
        expected_output: It is 30.
      - input: Now double that.
        assert:
          - { type: contains, value: "60" }
          - { type: contains, value: "90" }
    vars:
      input:
        - { role: system, content: You are a math tutor. }
"""
TUTOR_REPLIES = """\
replies:
  - match: { agent: support-bot }
    turns:
      - content: 15% of 200 is 30.
      - content: Doubled, that is 60 (from 200).
"""


def test_an_agentv_multi_turn_test_is_a_scripted_conversation(repo: GitRepo) -> None:
    suite = {"evals/support/suite.yaml": CONVERSATION, "mock.yaml": TUTOR_REPLIES}
    repo.commit("a conversation", files(**suite))
    (remembers,) = load_resources(repo.path).fixtures.values()
    held = remembers.resource.spec.conversation
    assert held is not None and held.system == "You are a math tutor."
    assert [t.user for t in held.turns or []] == ["What is 15% of 200?", "Now double that."]
    assert remembers.resource.spec.reference == "Turn 1: It is 30."

    done = evalward("run", ".", "--mock-script", "mock.yaml", "--json", "--no-cache", cwd=repo.path)
    (fixture,) = json.loads(done.stdout)["fixtures"]
    checks = [(a["type"], a.get("turn"), a["status"]) for a in fixture["assertions"]]
    assert checks == [
        ("contains", None, "pass"),  # AgentV's contains, on the whole conversation's answer
        ("contains", 1, "pass"),
        ("contains", 2, "pass"),
        ("contains", 2, "fail"),  # no 90 in turn 2
    ], checks
    assert fixture["status"] == "fail" and done.returncode == 1

    turns_only = CONVERSATION.replace('    assert:\n      - { type: contains, value: "200" }\n', "")
    repo.commit("checks on the turns only", {"evals/support/suite.yaml": turns_only})
    assert evalward("validate", ".", cwd=repo.path).returncode == 0

    spoken = CONVERSATION.replace("role: system, content: You", "role: user, content: You")
    repo.commit("a user message before the turns", {"evals/support/suite.yaml": spoken})
    refused = evalward("validate", ".", cwd=repo.path)
    said = refused.stdout + refused.stderr
    assert refused.returncode == 2
    assert "tests[0].input: a conversation's user messages are its `turns`" in said, said


DEFAULTS = """\
name: defaults
providers: [support-bot]
prompts: ["{{ input }}"]
default_test:
  assert:
    - { type: contains, value: shipped }
tests:
  - id: where-is-it
    vars: { input: Where is my order? }
    assert:
      - { type: regex, value: "." }
"""
UNSURE = "replies:\n  - match: { agent: support-bot }\n    turns: [{ content: No idea. }]\n"


def test_a_suite_key_evalward_does_not_read_is_refused_rather_than_its_checks_skipped(
    repo: GitRepo,
) -> None:
    """AgentV runs `default_test`'s assertions on every test: left unread, the reply that
    fails them passed (exit 0)."""
    repo.commit("defaults", files(**{"evals/support/suite.yaml": DEFAULTS, "mock.yaml": UNSURE}))
    done = evalward("run", ".", "--mock-script", "mock.yaml", "--json", "--no-cache", cwd=repo.path)
    assert done.returncode == 2, done.stdout + done.stderr
    said = (done.stdout + done.stderr).splitlines()
    line = next((x for x in said if "default_test" in x), "\n".join(said))
    assert "suite.yaml:4:1:" in line and "`default_test` is not read by evalward" in line, line
    assert "the suite's `assert`" in line, line

    for key, value, where in [
        ("scenarios", "[]", "suite.yaml:4:1: scenarios"),
        ("metadata", "{ policy: strict }", "put it in each test's `metadata`"),
        ("execution", "{ target: support-bot, threshold: 0.5 }", "execution.threshold"),
        ("assertions", "[{ type: contains, value: order }]", "suite.yaml:4:1: assertions"),
    ]:
        other = DEFAULTS.replace(
            "default_test:\n  assert:\n    - { type: contains, value: shipped }\n",
            f"{key}: {value}\n",
        )
        if key == "assertions":
            other = other.replace(
                "tests:\n", "assert: [{ type: contains, value: shipped }]\ntests:\n"
            )
        repo.commit(key, {"evals/support/suite.yaml": other})
        refused = evalward("validate", ".", cwd=repo.path)
        assert refused.returncode == 2, (key, refused.stdout + refused.stderr)
        assert where in refused.stdout + refused.stderr, (key, refused.stdout + refused.stderr)


EMPTY = """\
name: empty
providers: [support-bot]
prompts: ["{{ input }}"]
tests:
  - id: where-is-it
    vars: { input: Where is my order? }
    assert:
      - { type: contains-any, value: [] }
      - { type: regex, value: "" }
      - { type: icontains-any, value: [shipped, ""] }
      - { type: ends-with, value: "  " }
"""


def test_a_check_with_nothing_to_look_for_is_refused_rather_than_passing_every_answer(
    repo: GitRepo,
) -> None:
    """AgentV skips a check whose value is empty; as a pattern that matches every answer it
    passed whatever the agent said (exit 0)."""
    repo.commit("empty", files(**{"evals/support/suite.yaml": EMPTY, "mock.yaml": UNSURE}))
    done = evalward("run", ".", "--mock-script", "mock.yaml", "--json", "--no-cache", cwd=repo.path)
    assert done.returncode == 2, done.stdout + done.stderr
    said = (done.stdout + done.stderr).splitlines()
    for index in range(4):
        line = next((x for x in said if f"tests[0].assert[{index}]" in x), "\n".join(said))
        assert "matches every answer" in line, line


GLOBS = """\
name: globs
providers: [support-bot]
prompts: ["{{ input }}"]
tests:
  - id: no-lookups
    vars: { input: Where is my order? }
    assert:
      - { type: not-trajectory:tool-used, value: "look*" }
"""
LOOKS_UP = """\
replies:
  - match: { agent: support-bot }
    turns:
      - toolCalls: [{ name: lookup_order, arguments: { order_id: "12345" } }]
      - content: It has shipped.
"""


def test_a_tool_pattern_is_refused_rather_than_read_as_a_tool_of_that_name(
    repo: GitRepo,
) -> None:
    """AgentV matches a trajectory check's tool names as patterns (`look*`, in any case):
    read as the name of a tool no agent has, the check against `look*` passed a run that
    called lookup_order (exit 0)."""
    repo.commit("globs", files(**{"evals/support/suite.yaml": GLOBS, "mock.yaml": LOOKS_UP}))
    done = evalward("run", ".", "--mock-script", "mock.yaml", "--json", "--no-cache", cwd=repo.path)
    assert done.returncode == 2, done.stdout + done.stderr
    said = done.stdout + done.stderr
    assert "suite.yaml:8:43: tests[0].assert[0].value: 'look*' is a pattern" in said, said


def test_a_tool_args_match_reads_its_arguments_and_refuses_what_it_cannot_read(
    repo: GitRepo,
) -> None:
    """AgentV reads a tool-args-match's `arguments` as its `args`: unread, the check held
    any call of the tool to nothing and passed a call with other arguments (exit 0)."""
    other = GLOBS.replace(
        '{ type: not-trajectory:tool-used, value: "look*" }',
        "{ type: trajectory:tool-args-match, value: { name: lookup_order, "
        'arguments: { order_id: "999" } } }',
    )
    repo.commit("arguments", files(**{"evals/support/suite.yaml": other, "mock.yaml": LOOKS_UP}))
    done = evalward("run", ".", "--mock-script", "mock.yaml", "--json", "--no-cache", cwd=repo.path)
    assert done.returncode == 1, done.stdout + done.stderr
    (fixture,) = json.loads(done.stdout)["fixtures"]
    assert [(a["type"], a["status"]) for a in fixture["assertions"]] == [("toolArgs", "fail")]

    ignoring = other.replace("arguments:", "ignore: [order_id], args:")
    repo.commit("ignore", {"evals/support/suite.yaml": ignoring})
    refused = evalward("validate", ".", cwd=repo.path)
    assert refused.returncode == 2
    assert "`ignore` of trajectory:tool-args-match is not read by evalward" in (
        refused.stdout + refused.stderr
    )


EXECUTION = """\
name: execution
providers: [support-bot]
prompts: ["{{ input }}"]
tests:
  - id: where-is-it
    vars: { input: Where is my order? }
    execution:
      evaluators:
        - { type: regex, value: "." }
      assert:
        - { type: contains, value: shipped }
"""


def test_a_test_s_execution_key_evalward_does_not_read_is_refused(repo: GitRepo) -> None:
    """AgentV grades a test without `assert` by its `execution.assert`: left unread, the
    reply that fails it passed on the test's other graders (exit 0)."""
    repo.commit("execution", files(**{"evals/support/suite.yaml": EXECUTION, "mock.yaml": UNSURE}))
    done = evalward("run", ".", "--mock-script", "mock.yaml", "--json", "--no-cache", cwd=repo.path)
    assert done.returncode == 2, done.stdout + done.stderr
    said = done.stdout + done.stderr
    assert (
        "suite.yaml:10:7: tests[0].execution.assert: `execution.assert` is not read by "
        "evalward; put its graders in the test's `assert`"
    ) in said, said


OLDER = """\
description: the evalcases generation
target: support-bot
evalcases:
  - id: where-is-it
    input_messages: [{ role: user, content: Where is my order? }]
    evaluators:
      - { type: regex, value: "." }
    graders:
      - { type: contains, value: shipped }
"""


def test_a_key_of_an_older_test_evalward_does_not_read_is_refused(repo: GitRepo) -> None:
    """The older generations' tests are held to the keys evalward reads as the current one's
    are: a grader list under a name evalward does not know never ran, and the reply it fails
    passed on the test's other graders (exit 0)."""
    repo.commit("older", files(**{"evals/support/suite.yaml": OLDER, "mock.yaml": UNSURE}))
    done = evalward("run", ".", "--mock-script", "mock.yaml", "--json", "--no-cache", cwd=repo.path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "suite.yaml:8:5: evalcases[0].graders: `graders` is not read by evalward" in (
        done.stdout + done.stderr
    )


ANY_ORDER = """\
name: any-order
providers: [support-bot]
prompts: ["{{ input }}"]
tests:
  - id: look-then-note
    vars: { input: Where is my order? }
    assert:
      - type: trajectory:tool-sequence
        value: { mode: any_order, steps: [lookup_order, send_note] }
"""
NOTE_FIRST = """\
replies:
  - match: { agent: support-bot }
    turns:
      - toolCalls: [{ name: send_note, arguments: {} }]
      - toolCalls: [{ name: lookup_order, arguments: { order_id: "12345" } }]
      - content: It has shipped.
"""
NOTE = """\
    - name: send_note
      description: Leave a note on the order.
      parameters: { type: object, properties: {} }
      mock: { output: noted }
"""


def test_a_tool_sequence_in_any_order_is_refused_as_agentv_runs_it_in_order(
    repo: GitRepo,
) -> None:
    """AgentV's trajectory:tool-sequence knows `in_order` and `exact`, and runs any other mode
    in order: read as any order, a run that called the steps the other way round passed
    (exit 0) where AgentV fails it."""
    agents = AGENTS.replace("---\n", NOTE + "---\n", 1)
    repo.commit(
        "any order",
        files(
            **{
                "agents.yaml": agents,
                "evals/support/suite.yaml": ANY_ORDER,
                "mock.yaml": NOTE_FIRST,
            }
        ),
    )
    done = evalward("run", ".", "--mock-script", "mock.yaml", "--json", "--no-cache", cwd=repo.path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "tests[0].assert[0].value.mode: AgentV runs a tool-sequence in_order or exact" in (
        done.stdout + done.stderr
    )


TURN_EQUALS = """\
name: tutor
providers: [support-bot]
prompts: ["{{ input }}"]
tests:
  - id: turn-answers
    mode: conversation
    turns:
      - input: What is 15% of 200?
        expected_output: It is 30.
        assert:
          - { type: equals }
      - input: Now double that.
        expected_output: It is 60.
    vars:
      expected_output: 15% of 200 is 30.
"""


def test_a_turn_is_graded_against_its_own_expected_output(repo: GitRepo) -> None:
    """AgentV grades a turn against the turn's expected output: read against the test's,
    a turn-1 `equals` passed a reply that said the test's words and not the turn's (exit 0),
    and one on a turn without an expected output compared with the test's."""
    suite = {"evals/support/suite.yaml": TURN_EQUALS, "mock.yaml": TUTOR_REPLIES}
    repo.commit("a turn's equals", files(**suite))
    done = evalward("run", ".", "--mock-script", "mock.yaml", "--json", "--no-cache", cwd=repo.path)
    assert done.returncode == 1, done.stdout + done.stderr
    (fixture,) = json.loads(done.stdout)["fixtures"]
    assert [(a["type"], a.get("turn"), a["status"]) for a in fixture["assertions"]] == [
        ("equals", 1, "fail")
    ]

    unsaid = TURN_EQUALS.replace("        expected_output: It is 30.\n", "")
    repo.commit("no expected output on the turn", {"evals/support/suite.yaml": unsaid})
    refused = evalward("validate", ".", cwd=repo.path)
    assert refused.returncode == 2
    assert "tests[0].turns[0].assert[0]: an `equals` check needs `value` or" in (
        refused.stdout + refused.stderr
    )


MISSPELT = """\
name: misspelt
providers: [support-bot]
prompts: ["{{ input }}"]
tests:
  - id: where-is-it
    vars: { input: Where is my order? }
    asert:
      - { type: contains, value: shipped }
  - id: remembers
    turns:
      - input: What is 15% of 200?
        asserts: [{ type: contains, value: "30" }]
"""


def test_a_misspelt_key_of_a_test_or_a_turn_is_refused_naming_the_key_it_meant(
    repo: GitRepo,
) -> None:
    """A key evalward does not read is refused at its line; a misspelt one names the key it
    was likely meant for and what the test or turn holds, where a turn's said neither."""
    repo.commit("misspelt", files(**{"evals/support/suite.yaml": MISSPELT}))
    done = evalward("validate", ".", cwd=repo.path)
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    assert (
        "suite.yaml:7:5: tests[0].asert: `asert` is not read by evalward (did you mean "
        "'assert'?); a test holds aggregation, assert, assertions, "
    ) in said, said
    assert (
        "suite.yaml:12:9: tests[1].turns[0].asserts: `asserts` is not read by evalward (did "
        "you mean 'assert'?); a turn holds assert, expected_output, input"
    ) in said, said


def test_a_negated_grader_evalward_cannot_negate_is_refused_saying_what_it_can(
    repo: GitRepo,
) -> None:
    """The refusal named the grader alone: not what evalward negates, nor what to do."""
    suite = MISSPELT.replace("    asert:\n      - { type: contains, value: shipped }\n", "")
    suite = suite.replace(
        '        asserts: [{ type: contains, value: "30" }]\n',
        "        assert: [{ type: is-json, negate: true }]\n",
    )
    repo.commit("a negated is-json", files(**{"evals/support/suite.yaml": suite}))
    done = evalward("validate", ".", cwd=repo.path)
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    assert (
        "suite.yaml:10:35: tests[1].turns[0].assert[0].negate: `negate` is not supported on "
        "'is-json': evalward negates the text checks (contains, icontains, equals, regex, "
        "starts-with, ends-with and the contains lists); remove it, and have the grader check "
        "the opposite"
    ) in said, said


@pytest.mark.parametrize(
    "tests",
    ["[file://cases.jsonl]", "./cases.yaml", "[file://cases.yaml, file://cases.jsonl]"],
)
def test_a_suite_of_datasets_alone_whose_name_does_not_say_agentv_is_warned_of(
    repo: GitRepo, tests: str
) -> None:
    """A list of datasets beside the suite's keys is what a promptfoo config writes too, so
    a file whose name does not say AgentV (`*.eval.yaml`) is read as neither. Its tests not
    running was said nowhere; it is a warning at its `tests`, saying how to have it read.
    Named so, the same suite runs its datasets."""
    suite = f"name: s\nproviders: [support-bot]\nprompts: ['{{{{ input }}}}']\ntests: {tests}\n"
    repo.commit(
        "a suite of datasets",
        {
            "agents.yaml": AGENTS.split("---\n")[0],  # the agent alone: no Eval to select
            "evals/sub/cases.jsonl": '{"id": "c1", "criteria": "says hi", "input": "hi"}\n',
            "evals/sub/cases.yaml": "- id: c2\n  criteria: says hi\n  input: hi\n",
            "evals/sub/suite.yaml": suite,
        },
    )

    loaded = load_resources(repo.path)

    assert not loaded.fixtures
    (warning,) = [w.render() for w in loaded.warnings]
    assert warning.startswith(
        "evals/sub/suite.yaml:4:1: tests: names only datasets beside AgentV's suite keys"
    ), warning
    assert "name an AgentV suite `*.eval.yaml`" in warning, warning

    repo.git("mv", "evals/sub/suite.yaml", "evals/sub/suite.eval.yaml")
    renamed = load_resources(repo.path)
    assert renamed.fixtures and not renamed.warnings, renamed.warnings
