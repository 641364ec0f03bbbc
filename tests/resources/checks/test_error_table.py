# ruff: noqa: E501  (a table of documents and messages reads best one case per line)
"""A table of broken documents: each must be reported at its exact location with its message."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalward.definitions.loader import load_resources
from evalward.errors import ResourceError
from evalward.resources.checks.assertions import Assertion
from evalward.resources.models import EvalFixtureSpec

pytestmark = pytest.mark.unit

# Lists that grow as kinds gain fields and assertion types: the messages name them all.
SPEC_FIELDS = sorted(f.alias or n for n, f in EvalFixtureSpec.model_fields.items())
ASSERTION_TYPES = [
    model.model_fields["type"].annotation.__args__[0]  # type: ignore[union-attr]
    for model in Assertion.__origin__.__args__  # type: ignore[attr-defined]
]

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {name: bot}
spec:
  models: [openai/gpt-test]
"""

FIXTURE = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata:
  name: fx
  labels: {agent: bot}
spec:
  targetAgent: bot
  input:
    type: prompt
    payload: {prompt: hi}
  assertions:
    - {type: contains, value: hi}
"""

EVAL = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: {name: ev}
spec:
  targetAgent: bot
  fixtureSelector: {matchLabels: {agent: bot}}
"""


SCRIPT_NOT_RUNNABLE = (
    "evalward runs a script grader's Python or JavaScript file (`[python3, check.py]`,"
    " `[node, check.js]`); 'x' names none it can run (a TypeScript grader can be compiled to"
    " JavaScript, a shell line written as a Python script)"
)


PAIRS = """\
  pairs:
    - {input: hi, outputA: Hello! How can I help?, outputB: What?, humanPreference: A}
"""
PAIR_CALIBRATION = (
    "apiVersion: evalward.dev/v1\nkind: JudgeCalibration\nmetadata: {name: greeting-pairs}\n"
    "spec:\n  rubric: Warmer?\n  judgeModels: [openai/j]\n" + PAIRS
)


def fixture_with(old: str, new: str) -> str:
    assert old in FIXTURE
    return FIXTURE.replace(old, new)


def eval_with(extra: str) -> str:
    return EVAL + extra


CASES: list[tuple[str, dict[str, str], str | tuple[str, ...]]] = [
    # (id, files, expected rendered problem)
    (
        "bad-yaml",
        {"x.yaml": "apiVersion: evalward.dev/v1\nkind: [unclosed\n"},
        "x.yaml:3:1: invalid YAML: did not find expected ',' or ']'",
    ),
    (
        "bad-yaml-indent",
        {"x.yaml": "apiVersion: evalward.dev/v1\nkind: Agent\n metadata: 1\n"},
        "x.yaml:3:10: invalid YAML: mapping values are not allowed in this context",
    ),
    (
        "unknown-kind",
        {"x.yaml": "apiVersion: evalward.dev/v1\nkind: EvalFixure\n"},
        "x.yaml:2:1: kind: unknown kind: expected one of Agent, EvalFixture, Eval, JudgeCalibration;"
        " found 'EvalFixure' (did you mean 'EvalFixture'?)",
    ),
    (
        "unsupported-api-version",
        {"x.yaml": "apiVersion: evalward.dev/v2\nkind: Agent\n"},
        "x.yaml:1:1: apiVersion: unsupported apiVersion: expected evalward.dev/v1; found 'evalward.dev/v2'",
    ),
    (
        "duplicate-yaml-key",
        {
            "f.yaml": fixture_with(
                "  targetAgent: bot\n", "  targetAgent: bot\n  targetAgent: bot\n"
            )
        },
        "f.yaml:8:3: invalid YAML: duplicate key 'targetAgent' (first at line 7)",
    ),
    (
        "missing-kind",
        {"x.yaml": "apiVersion: evalward.dev/v1\nmetadata: {name: a}\n"},
        "x.yaml:1:1: unknown kind: expected one of Agent, EvalFixture, Eval, JudgeCalibration;"
        " found no `kind`",
    ),
    (
        "unknown-field",
        {"f.yaml": fixture_with("  targetAgent: bot\n", "  targetAgent: bot\n  sevrity: high\n")},
        "f.yaml:8:3: spec.sevrity: unknown field 'sevrity' (did you mean 'severity'?)",
    ),
    (
        "unknown-field-no-hint",
        {"f.yaml": fixture_with("  targetAgent: bot\n", "  targetAgent: bot\n  zzz: 1\n")},
        f"f.yaml:8:3: spec.zzz: unknown field 'zzz'; expected one of: {', '.join(SPEC_FIELDS)}",
    ),
    (
        "unknown-assertion-field",
        {"f.yaml": fixture_with("{type: contains, value: hi}", "{type: contains, valeu: hi}")},
        # one typo, told once at it: the missing field's own line would come first
        "f.yaml:12:24: spec.assertions[0].valeu: unknown field 'valeu' (did you mean 'value'?); "
        "'value' is required, and missing",
    ),
    (
        "unknown-judge-field",
        {
            "f.yaml": fixture_with(
                "{type: contains, value: hi}", "{type: judge, rubric: r, minScroe: 1}"
            )
        },
        "f.yaml:12:32: spec.assertions[0].minScroe: unknown field 'minScroe' (did you mean 'minScore'?)",
    ),
    (
        "bad-fixture-kind",
        {"f.yaml": fixture_with("  targetAgent: bot\n", "  targetAgent: bot\n  kind: gold\n")},
        "f.yaml:8:3: spec.kind: expected one of: golden, bad, edge; found 'gold' (did you mean 'golden'?)",
    ),
    (
        "bad-severity",
        {
            "f.yaml": fixture_with(
                "  targetAgent: bot\n", "  targetAgent: bot\n  severity: urgent\n"
            )
        },
        "f.yaml:8:3: spec.severity: expected one of: low, medium, high, critical; found 'urgent'",
    ),
    (
        "bad-input-type",
        {"f.yaml": fixture_with("type: prompt", "type: sms")},
        "f.yaml:9:5: spec.input.type: expected one of: webhook, prompt, telegram, slack, email,"
        " messages; found 'sms'",
    ),
    (
        "prompt-without-prompt",
        {"f.yaml": fixture_with("payload: {prompt: hi}", "payload: {text: hi}")},
        'f.yaml:8:3: spec.input: an input of type `prompt` needs `payload: { prompt: "..." }`',
    ),
    (
        "messages-empty",
        {"f.yaml": fixture_with("type: prompt\n    payload: {prompt: hi}", "type: messages")},
        "f.yaml:8:3: spec.input: an input of type `messages` needs a non-empty `messages` list",
    ),
    (
        "bad-message-role",
        {
            "f.yaml": fixture_with(
                "type: prompt\n    payload: {prompt: hi}",
                "type: messages\n    messages: [{role: robot, content: x}]",
            )
        },
        "f.yaml:10:17: spec.input.messages[0].role: expected one of: system, user, assistant;"
        " found 'robot'",
    ),
    (
        "missing-target",
        {"f.yaml": fixture_with("  targetAgent: bot\n", "")},
        "f.yaml:6:1: spec.targetAgent: missing required field 'targetAgent'",
    ),
    (
        "missing-assertions",
        {"f.yaml": fixture_with("  assertions:\n    - {type: contains, value: hi}\n", "")},
        "f.yaml:6:1: spec: expected at least 1 item in `assertions`; found none (a "
        "conversation's turns may hold them instead)",
    ),
    (
        "misspelt-assertions",
        {"f.yaml": fixture_with("  assertions:\n", "  asertions:\n")},
        # one typo, told once at it: the empty default's own problem would come first
        "f.yaml:11:3: spec.asertions: unknown field 'asertions' (did you mean 'assertions'?); "
        "'assertions' is required, and missing",
    ),
    (
        "empty-assertions",
        {
            "f.yaml": fixture_with(
                "  assertions:\n    - {type: contains, value: hi}\n", "  assertions: []\n"
            )
        },
        "f.yaml:11:3: spec.assertions: expected at least 1 item in `assertions`; found none (a "
        "conversation's turns may hold them instead)",
    ),
    (
        "unknown-assertion-type",
        {"f.yaml": fixture_with("{type: contains, value: hi}", "{type: contain, value: hi}")},
        "f.yaml:12:7: spec.assertions[0]: unknown assertion type 'contain'; expected one of:"
        f" {', '.join(ASSERTION_TYPES)} (did you mean 'contains'?)",
    ),
    (
        "assertion-without-type",
        {"f.yaml": fixture_with("{type: contains, value: hi}", "{value: hi}")},
        "f.yaml:12:7: spec.assertions[0]: missing required field 'type'",
    ),
    (
        "assertion-missing-field",
        {"f.yaml": fixture_with("{type: contains, value: hi}", "{type: toolCalled}")},
        "f.yaml:12:7: spec.assertions[0].tool: missing required field 'tool'",
    ),
    (
        "bad-regex",
        {"f.yaml": fixture_with("{type: contains, value: hi}", "{type: regex, pattern: ')'}")},
        "f.yaml:12:21: spec.assertions[0].pattern: invalid regular expression:"
        " unbalanced parenthesis at position 0",
    ),
    (
        "negative-weight",
        {
            "f.yaml": fixture_with(
                "{type: contains, value: hi}", "{type: contains, value: hi, weight: -1}"
            )
        },
        "f.yaml:12:35: spec.assertions[0].weight: expected a number greater than or equal to 0; found -1",
    ),
    (
        "assertion-bad-severity",
        {
            "f.yaml": fixture_with(
                "{type: contains, value: hi}", "{type: contains, value: hi, severity: huge}"
            )
        },
        "f.yaml:12:35: spec.assertions[0].severity: expected one of: low, medium, high, critical;"
        " found 'huge'",
    ),
    (
        "min-score-above-one",
        {
            "f.yaml": fixture_with(
                "{type: contains, value: hi}", "{type: judge, rubric: r, minScore: 2}"
            )
        },
        "f.yaml:12:32: spec.assertions[0].minScore: expected a number less than or equal to 1; found 2",
    ),
    (
        "bad-name",
        {"f.yaml": fixture_with("name: fx", "name: Bad Name")},
        "f.yaml:4:3: metadata.name: expected a lowercase name of letters, digits, '.', '_' or '-'"
        " that starts and ends with a letter or digit; found 'Bad Name'",
    ),
    (
        "tool-replay-no-output",
        {
            "f.yaml": fixture_with(
                "  targetAgent: bot\n", "  targetAgent: bot\n  toolReplay:\n    - {tool: search}\n"
            )
        },
        "f.yaml:9:7: spec.toolReplay[0].output: missing required field 'output'",
    ),
    (
        "tool-replay-bad-output",
        {
            "f.yaml": fixture_with(
                "  targetAgent: bot\n",
                "  targetAgent: bot\n  toolReplay:\n    - {tool: search, output: [1]}\n",
            )
        },
        "f.yaml:9:22: spec.toolReplay[0].output: expected a valid string or a mapping; found a list",
    ),
    (
        "shadow-tools-not-list",
        {
            "f.yaml": fixture_with(
                "  targetAgent: bot\n", "  targetAgent: bot\n  shadowTools: send_email\n"
            )
        },
        "f.yaml:8:3: spec.shadowTools: expected a valid list; found 'send_email'; write it as a list: "
        "[send_email]",
    ),
    (
        "shadow-tools-dupe",
        {
            "f.yaml": fixture_with(
                "  targetAgent: bot\n", "  targetAgent: bot\n  shadowTools: [a, a]\n"
            )
        },
        "f.yaml:8:3: spec.shadowTools: shadowTools lists a more than once",
    ),
    (
        "bad-origin-date",
        {
            "f.yaml": fixture_with(
                "  targetAgent: bot\n", "  targetAgent: bot\n  origin: {promotedAt: yesterday}\n"
            )
        },
        "f.yaml:8:12: spec.origin.promotedAt: expected a valid datetime or date, input is too short;"
        " found 'yesterday'",
    ),
    (
        "bad-cron-fields",
        {"a.yaml": AGENT, "e.yaml": eval_with('  schedule: "0 9 * *"\n')},
        'e.yaml:7:3: spec.schedule: a schedule is a 5-field cron expression such as "0 9 * * *"'
        " (minute hour day-of-month month day-of-week); found 4 fields in '0 9 * *'",
    ),
    (
        "bad-cron-range",
        {"a.yaml": AGENT, "e.yaml": eval_with('  schedule: "0 25 * * *"\n')},
        "e.yaml:7:3: spec.schedule: cron hour field: 25 is out of range 0-23",
    ),
    (
        "bad-cron-macro",
        {"a.yaml": AGENT, "e.yaml": eval_with('  schedule: "@daily"\n')},
        'e.yaml:7:3: spec.schedule: a schedule is a 5-field cron expression such as "0 9 * * *"'
        " (minute hour day-of-month month day-of-week); found 1 field in '@daily'",
    ),
    (
        "bad-severity-weight-key",
        {"a.yaml": AGENT, "e.yaml": eval_with("  scoring:\n    severityWeights: {extreme: 9}\n")},
        "e.yaml:8:23: spec.scoring.severityWeights.extreme: expected one of: low, medium, high,"
        " critical; found 'extreme'",
    ),
    (
        "cross-check-without-primary",
        {
            "a.yaml": AGENT,
            "e.yaml": eval_with("  judge:\n    crossCheck: {models: [openai/gemini-2.5-flash]}\n"),
        },
        "e.yaml:8:5: spec.judge.crossCheck: a cross-check needs the primary judge `judge.model`"
        " to check: the primary gates, and the cross-check judges are compared with it; set"
        " `model`",
    ),
    (
        "cross-check-of-itself",
        {
            "a.yaml": AGENT,
            "e.yaml": eval_with(
                "  judge:\n    model: openai/j\n    crossCheck: {models: [openai/j], margin: 0.2}\n"
            ),
        },
        "e.yaml:9:5: spec.judge.crossCheck: `models` lists openai/j, which is already the primary"
        " judge (`model`); name a different model to check it against",
    ),
    (
        "cross-check-twice",
        {
            "a.yaml": AGENT,
            "e.yaml": eval_with(
                "  judge:\n    model: openai/j\n    crossCheck: {models: [openai/k, openai/k]}\n"
            ),
        },
        "e.yaml:9:18: spec.judge.crossCheck.models: openai/k is listed more than once; name each"
        " judge once",
    ),
    (
        "cross-check-margin",
        {
            "a.yaml": AGENT,
            "e.yaml": eval_with(
                "  judge:\n    model: openai/j\n    crossCheck: {models: [openai/k], margin: 2}\n"
            ),
        },
        "e.yaml:9:38: spec.judge.crossCheck.margin: expected a number less than or equal to 1;"
        " found 2",
    ),
    (
        "threshold-above-one",
        {"a.yaml": AGENT, "e.yaml": eval_with("  scoring: {passThreshold: 1.5}\n")},
        "e.yaml:7:13: spec.scoring.passThreshold: expected a number less than or equal to 1; found 1.5",
    ),
    (
        "parallel-not-int",
        {"a.yaml": AGENT, "e.yaml": eval_with("  execution: {parallel: many}\n")},
        "e.yaml:7:15: spec.execution.parallel: expected a valid integer; found 'many'",
    ),
    (
        "agent-unknown-field",
        {"a.yaml": AGENT + "  sytem: hello\n"},
        "a.yaml:6:3: spec.sytem: unknown field 'sytem' (did you mean 'system'?)",
    ),
    (
        "agent-bad-model-id",
        {"a.yaml": AGENT.replace("openai/gpt-test", "gpt-test")},
        "a.yaml:5:3: spec.models: model id 'gpt-test' must be `provider/model`, e.g. `openai/gpt-4.1-mini`",
    ),
    (
        "dangling-target",
        {"e.yaml": EVAL},
        (
            "e.yaml:5:3: spec.targetAgent: Eval 'ev' targets agent 'bot', which is not defined",
            "e.yaml:6:21: spec.fixtureSelector.matchLabels: Eval 'ev' selects no fixture: no EvalFixture has the labels {'agent': 'bot'}, so a run would score nothing; give its fixtures those labels (metadata.labels), or list them under spec.fixtures",
        ),
    ),
    (
        "dangling-target-hint",
        {"a.yaml": AGENT.replace("name: bot", "name: bots"), "e.yaml": EVAL, "f.yaml": FIXTURE},
        (
            "e.yaml:5:3: spec.targetAgent: Eval 'ev' targets agent 'bot', which is not defined"
            " (did you mean 'bots'?)",
            "f.yaml:7:3: spec.targetAgent: EvalFixture 'fx' is for agent 'bot' (its targetAgent), which is not defined (did you mean 'bots'?); name an Agent's metadata.name",
        ),
    ),
    (
        "fixture-dangling-target",
        {
            "a.yaml": AGENT,
            "e.yaml": EVAL,
            "f.yaml": FIXTURE,
            "g.yaml": fixture_with("name: fx", "name: fy").replace(
                "targetAgent: bot", "targetAgent: bto"
            ),
        },
        "g.yaml:7:3: spec.targetAgent: EvalFixture 'fy' is for agent 'bto' (its targetAgent), which is not defined (did you mean 'bot'?); name an Agent's metadata.name",
    ),
    (
        "selects-no-fixture",
        {
            "a.yaml": AGENT,
            "e.yaml": EVAL.replace("  fixtureSelector: {matchLabels: {agent: bot}}\n", ""),
        },
        "e.yaml:4:1: spec: Eval 'ev' selects no fixture: it has no `fixtureSelector.matchLabels` and no `fixtures` list, so a run would score nothing; select its fixtures by a label they have (`fixtureSelector: {matchLabels: {…}}`), or list them under spec.fixtures",
    ),
    (
        "judge-assertion-without-judge",
        {
            "a.yaml": AGENT,
            "e.yaml": EVAL,
            "f.yaml": fixture_with("{type: contains, value: hi}", "{type: judge, rubric: polite}"),
        },
        "e.yaml:4:1: spec: Eval 'ev' sets no spec.judge.model, and the fixtures it selects have judge assertions that nothing could score: 'fx' (f.yaml:1); set spec.judge.model (a `provider/model` id), or `defaults.judge.model` in evalward.yaml",
    ),
    (
        "our-kind-other-api-version",
        {"x.yaml": "apiVersion: evalward/v1\nkind: Agent\nmetadata: {name: bot}\n"},
        "x.yaml:1:1: apiVersion: unsupported apiVersion: expected evalward.dev/v1; found 'evalward/v1'. A document of kind Agent is read as evalward's: write `apiVersion: evalward.dev/v1`, or, if the file is not evalward's, list it under `exclude` in evalward.yaml",
    ),
    (
        "our-kind-no-api-version",
        {"x.yaml": "# an Eval\nkind: Eval\nmetadata: {name: ev}\n"},
        "x.yaml:2:1: unsupported apiVersion: expected evalward.dev/v1; found no apiVersion. A document of kind Eval is read as evalward's: write `apiVersion: evalward.dev/v1`, or, if the file is not evalward's, list it under `exclude` in evalward.yaml",
    ),
    (
        "dangling-fixture",
        {"a.yaml": AGENT, "f.yaml": FIXTURE, "e.yaml": eval_with("  fixtures: [fx, fy]\n")},
        "e.yaml:7:18: spec.fixtures[1]: Eval 'ev' lists fixture 'fy', which is not defined",
    ),
    (
        "dangling-calibration",
        {"a.yaml": AGENT, "f.yaml": FIXTURE, "e.yaml": eval_with("  judge: {calibration: cal}\n")},
        "e.yaml:7:11: spec.judge.calibration: Eval 'ev' names JudgeCalibration 'cal', which is not"
        " defined",
    ),
    (
        "dangling-pairwise-calibration",
        {
            "a.yaml": AGENT,
            "f.yaml": FIXTURE,
            "c.yaml": PAIR_CALIBRATION,
            "e.yaml": eval_with(
                "  judge:\n    model: openai/j\n"
                "    pairwise: {rubric: Warmer?, calibration: greeting-pair}\n"
            ),
        },
        "e.yaml:9:33: spec.judge.pairwise.calibration: Eval 'ev' names JudgeCalibration"
        " 'greeting-pair' for its pairwise judge, which is not defined (did you mean"
        " 'greeting-pairs'?)",
    ),
    (
        "dangling-pairwise-calibration-without-pairs",
        {
            "a.yaml": AGENT,
            "f.yaml": FIXTURE,
            "c.yaml": PAIR_CALIBRATION.replace("greeting-pairs", "scores").replace(
                PAIRS, "  examples: [{input: hi, candidateOutput: hello, humanScore: 1}]\n"
            ),
            "e.yaml": eval_with(
                "  judge:\n    model: openai/j\n"
                "    pairwise: {rubric: Warmer?, calibration: scores}\n"
            ),
        },
        "e.yaml:9:33: spec.judge.pairwise.calibration: Eval 'ev' names JudgeCalibration"
        " 'scores' for its pairwise judge, which has no labelled `pairs` (c.yaml:1): the"
        " pairwise judge is calibrated on pairs; add `pairs` (input, outputA, outputB,"
        " humanPreference) to it, or name a JudgeCalibration that has them",
    ),
    (
        "judge-calibration-of-pairs-alone",
        {
            "a.yaml": AGENT,
            "f.yaml": FIXTURE,
            "c.yaml": PAIR_CALIBRATION,
            "e.yaml": eval_with("  judge:\n    model: openai/j\n    calibration: greeting-pairs\n"),
        },
        "e.yaml:9:5: spec.judge.calibration: Eval 'ev' names JudgeCalibration 'greeting-pairs'"
        " for its judge, which has no scored `examples` (c.yaml:1), only the `pairs` a pairwise"
        " judge is calibrated on: its judge would have no agreement to be held to, and every run"
        " it judges would be inconclusive; add `examples` (input, candidateOutput, humanScore)"
        " to it, or name it under `judge.pairwise.calibration`",
    ),
    (
        "dangling-pairwise-rubric",
        {
            "a.yaml": AGENT,
            "f.yaml": FIXTURE,
            "c.yaml": PAIR_CALIBRATION,
            "e.yaml": eval_with(
                "  judge:\n    model: openai/j\n    pairwise: {calibration: greeting-pairs}\n"
            ),
        },
        "e.yaml:9:5: spec.judge.pairwise: Eval 'ev' judges fixtures pairwise, and no rubric"
        " says what makes one run better for 'fx' (f.yaml:1); set `judge.pairwise.rubric`, or"
        " the fixture's `pairwise.rubric`",
    ),
    (
        "dangling-pairwise-rubric-of-a-fixture",
        {
            "a.yaml": AGENT,
            "f.yaml": FIXTURE + "  pairwise: {view: trace}\n",
            "e.yaml": eval_with("  judge: {model: openai/j}\n"),
        },
        "f.yaml:13:3: spec.pairwise: fixture 'fx' asks Eval 'ev' for its pairwise judge, and no"
        " rubric says what makes one run better; set the fixture's `pairwise.rubric`, or"
        " `judge.pairwise.rubric` in Eval 'ev' (e.yaml:1)",
    ),
    (
        "dangling-pairwise-model",
        {
            "a.yaml": AGENT,
            "f.yaml": FIXTURE,
            "c.yaml": PAIR_CALIBRATION,
            "e.yaml": eval_with(
                "  judge:\n    pairwise: {rubric: Warmer?, calibration: greeting-pairs}\n"
            ),
        },
        "e.yaml:8:5: spec.judge.pairwise: Eval 'ev' judges fixtures pairwise, and names no"
        " model to judge them; set `judge.pairwise.model` or `judge.model` (a"
        " `provider/model` id)",
    ),
    (
        "duplicate-fixture",
        {"a.yaml": AGENT, "f.yaml": FIXTURE, "g.yaml": FIXTURE},
        "g.yaml:4:3: metadata.name: duplicate EvalFixture 'fx': also defined at f.yaml:4",
    ),
    (
        "duplicate-in-one-file",
        {"a.yaml": AGENT + "---\n" + AGENT},
        "a.yaml:9:12: metadata.name: duplicate Agent 'bot': also defined at a.yaml:3",
    ),
    (
        "calibration-missing-examples",
        {
            "c.yaml": "apiVersion: evalward.dev/v1\nkind: JudgeCalibration\nmetadata: {name: c}\nspec:\n  rubric: r\n  judgeModels: [openai/x]\n"
        },
        "c.yaml:4:1: spec: expected at least 1 item in `examples` (scored runs) or `pairs` "
        "(labelled pairs); found none",
    ),
    (
        "calibration-score-range",
        {
            "c.yaml": "apiVersion: evalward.dev/v1\nkind: JudgeCalibration\nmetadata: {name: c}\nspec:\n  rubric: r\n  judgeModels: [openai/x]\n  examples:\n    - {input: x, candidateOutput: y, humanScore: 3}\n"
        },
        "c.yaml:8:38: spec.examples[0].humanScore: expected a number less than or equal to 1; found 3",
    ),
    (
        "agentv-traversal",
        {
            "ev.yaml": "evalcases:\n  - id: a\n    expected_outcome: ok\n    input:\n      - role: user\n        content:\n          - {type: file, value: ../../etc/passwd}\n"
        },
        "ev.yaml:7:26: evalcases[0].input[0].content[0].value: file reference '../../etc/passwd'"
        " leaves the repository; use a path inside it",
    ),
    (
        "agentv-url",
        {
            "ev.yaml": "evalcases:\n  - id: a\n    expected_outcome: ok\n    input:\n      - role: user\n        content:\n          - {type: file, value: 'https://github.com/o/r/blob/main/x.md'}\n"
        },
        "ev.yaml:7:26: evalcases[0].input[0].content[0].value: remote file reference"
        " 'https://github.com/o/r/blob/main/x.md' is not fetched; copy the file into the repository"
        " and reference it by path",
    ),
    (
        "agentv-missing-file",
        {
            "ev.yaml": "evalcases:\n  - id: a\n    expected_outcome: ok\n    input:\n      - role: user\n        content:\n          - {type: file, value: /docs/x.md}\n"
        },
        "ev.yaml:7:26: evalcases[0].input[0].content[0].value: file reference '/docs/x.md' not found"
        " (no file docs/x.md)",
    ),
    (
        "agentv-script-grader-runs-no-file",
        {
            "ev.yaml": "tests:\n  - id: a\n    criteria: ok\n    input: hi\n    assertions:\n      - type: code-grader\n        command: [x]\n"
        },
        "ev.yaml:7:9: tests[0].assertions[0].command: " + SCRIPT_NOT_RUNNABLE,
    ),
    (
        "agentv-unknown-grader",
        {
            "ev.yaml": "tests:\n  - id: a\n    criteria: ok\n    input: hi\n    assertions:\n      - type: field-accuracy\n"
        },
        "ev.yaml:6:9: tests[0].assertions[0].type: AgentV assertion type 'field-accuracy' is not"
        " supported by evalward; supported: contains, icontains, contains-any, contains-all,"
        " icontains-any, icontains-all, equals, regex, starts-with, ends-with, llm-grader, rubrics,"
        " latency, cost, token-usage, tool-trajectory, execution-metrics, script, assert-set,"
        " similar, is-json, trajectory:tool-used, not-trajectory:tool-used, trajectory:tool-sequence,"
        " trajectory:tool-args-match",
    ),
    (
        "agentv-code-judge-script-missing-and-composite",
        {
            "ev.yaml": (
                "evalcases:\n"
                "  - id: a\n"
                "    expected_outcome: ok\n"
                "    input: hi\n"
                "    execution:\n"
                "      evaluators:\n"
                "        - name: script\n"
                "          type: code_judge\n"
                "          script: ./check.py\n"
                "        - name: both\n"
                "          type: composite\n"
                "          evaluators:\n"
                "            - {name: c, type: contains, value: ok}\n"
                "          aggregator: {type: weighted_average}\n"
            )
        },
        (
            "ev.yaml:9:11: evalcases[0].execution.evaluators[0].script: file reference"
            " 'check.py' not found (no file check.py)",
            "ev.yaml:11:11: evalcases[0].execution.evaluators[1].type: AgentV grader type"
            " 'composite' is not supported by evalward; list its members directly in the test's"
            " `assertions`, each with its `weight`: a test's assertions already combine as a"
            " weighted mean, and the test passes only when every one passes",
        ),
    ),
    (
        "agentv-missing-input",
        {"ev.yaml": "tests:\n  - id: a\n    criteria: ok\n"},
        "ev.yaml:2:5: tests[0]: missing required field 'input' (or 'input_messages')",
    ),
]


@pytest.mark.parametrize(("files", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_broken_document(
    tmp_path: Path, files: dict[str, str], expected: str | tuple[str, ...]
) -> None:
    (tmp_path / "evalward.yaml").write_text("defaults: {targetAgent: bot}\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(ResourceError) as caught:
        load_resources(tmp_path)
    rendered = [p.render() for p in caught.value.problems]
    assert rendered == ([expected] if isinstance(expected, str) else list(expected))


def test_table_is_large_enough() -> None:
    assert len(CASES) >= 30


def test_all_problems_of_a_run_are_reported_together(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(AGENT + "  sytem: x\n")
    (tmp_path / "f.yaml").write_text(fixture_with("type: prompt", "type: sms"))
    (tmp_path / "e.yaml").write_text(EVAL.replace("targetAgent: bot", "targetAgent: nobody"))
    (tmp_path / "x.yaml").write_text("apiVersion: evalward.dev/v1\nkind: [\n")
    with pytest.raises(ResourceError) as caught:
        load_resources(tmp_path)
    assert [p.file for p in caught.value.problems] == [
        "a.yaml",
        "f.yaml",
        "x.yaml",
        "e.yaml",  # its agent is not defined, which x.yaml, not YAML, may have: after it
        "e.yaml",  # it selects no fixture that loads: after the fixture's own problem
    ]
    assert caught.value.problems[3].message.endswith("x.yaml did not parse, and may define it")
    assert caught.value.problems[-1].message == (
        "Eval 'ev' selects no fixture that loads: the fixtures with the labels {'agent': "
        "'bot'} are invalid: 'fx' (see f.yaml:9)"
    )
    assert caught.value.exit_code == 2
