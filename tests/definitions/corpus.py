# ruff: noqa: E501  (a table of documents and messages reads best one case per line)
"""A corpus of broken repositories: each must give one clear, located message and exit code 2.

It extends the error table of tests/resources/checks/test_error_table.py (whose cases are reused,
not copied) with encodings, empty and huge files, YAML limits, file references and paths.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from resources.checks.test_error_table import (
    AGENT,
    CASES,
    EVAL,
    FIXTURE,
    PAIR_CALIBRATION,
    fixture_with,
)


@dataclass(frozen=True)
class Symlink:
    """A symbolic link to `target` (absolute, or relative to the repository root)."""

    target: str


Content = str | bytes | Symlink
Files = dict[str, Content]


@dataclass(frozen=True)
class Case:
    id: str
    category: str
    files: Files
    expected: tuple[str, ...]
    """Each problem as `file:line:column: path: message` (a prefix of the rendered problem)."""


def bomb(extra: str = "") -> str:
    lines = ["apiVersion: evalward.dev/v1", "kind: Agent", "a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for name, prev in zip("bcdefgh", "abcdefg", strict=True):
        lines.append(f"{name}: &{name} [{', '.join(['*' + prev] * 10)}]")
    return "\n".join(lines) + "\n" + extra


HUGE = AGENT + "  system: " + "x" * (5 * 1024 * 1024 + 10) + "\n"
BYO = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {name: bot}
spec:
  runtime:
    command:
      run: [RUN]
"""


SIDE_EFFECTING = (
    AGENT + "  tools:\n    - {name: refund, command: [python3, refund.py], sideEffects: true}\n"
)
CALIBRATION = """\
apiVersion: evalward.dev/v1
kind: JudgeCalibration
metadata: {name: cal}
spec:
  rubric: Was it polite?
  examples: [{input: hi, candidateOutput: hello, humanScore: 1}]
  judgeModels: [openai/j]
"""


SHOP = "  playground: {sqlite: {seed: db.sql}}\n"


def byo(run: str) -> str:
    return BYO.replace("RUN", run)


def agent_system_file(ref: str) -> str:
    return AGENT + f"  systemFile: {ref}\n"


def _category(case_id: str) -> str:
    if "yaml" in case_id or "dupe" in case_id or "duplicate-yaml" in case_id:
        return "YAML syntax"
    if "cron" in case_id:
        return "cron"
    if "regex" in case_id:
        return "regex"
    if case_id.startswith(("dangling", "duplicate")):
        return "references"
    if case_id.startswith("agentv"):
        return "file references"
    return "types and fields"


TABLE = [
    Case(c[0], _category(c[0]), dict(c[1]), (c[2],) if isinstance(c[2], str) else tuple(c[2]))
    for c in CASES
]

EXTRA: list[Case] = [
    # --- encodings ----------------------------------------------------------------------------
    Case(
        "utf16-bom",
        "encodings",
        {"a.yaml": AGENT.encode("utf-16")},
        ("a.yaml:1:1: file is UTF-16 (it starts with a UTF-16 byte-order mark); save it as UTF-8",),
    ),
    Case(
        "utf32-bom",
        "encodings",
        {"a.yaml": AGENT.encode("utf-32")},
        ("a.yaml:1:1: file is UTF-32",),
    ),
    Case(
        "latin1-byte",
        "encodings",
        {"a.yaml": AGENT.replace("name: bot", "name: bot-é").encode("latin-1")},
        ("a.yaml:3:22: file is not valid UTF-8 (byte 0xe9); save it as UTF-8",),
    ),
    Case(
        "config-latin1",
        "encodings",
        {
            "evalward.yaml": "defaults: {targetAgent: bot}\n# caf\xe9\n".encode("latin-1"),
            "a.yaml": AGENT,
        },
        ("evalward.yaml:2:6: file is not valid UTF-8 (byte 0xe9)",),
    ),
    Case(
        "system-file-latin1",
        "encodings",
        {"a.yaml": agent_system_file("prompt.md"), "prompt.md": "Caf\xe9 bot\n".encode("latin-1")},
        (
            "a.yaml:6:3: spec.systemFile: the file 'prompt.md' is not UTF-8 text (byte 0xe9 at line 1, column 4): a system prompt is text; save it as UTF-8",
        ),
    ),
    Case(
        "system-file-binary",
        "encodings",
        {
            "a.yaml": agent_system_file("prompt.md"),
            "prompt.md": b"\x7fELF\x02\x01\x01\x00\n\x00\xd0\x01",
        },
        (
            "a.yaml:6:3: spec.systemFile: the file 'prompt.md' is binary, not UTF-8 text (byte 0xd0 at line 2, column 2): a system prompt is text; name a text file",
        ),
    ),
    Case(
        "system-file-utf16",
        "encodings",
        {"a.yaml": agent_system_file("prompt.md"), "prompt.md": "Be brief.\n".encode("utf-16")},
        (
            "a.yaml:6:3: spec.systemFile: the file 'prompt.md' is UTF-16 or UTF-32 text (it starts with a byte-order mark); save it as UTF-8",
        ),
    ),
    Case(
        "nul-byte",
        "encodings",
        {"a.yaml": AGENT.replace("name: bot", "name: b\x00ot")},
        ("a.yaml:3:",),
    ),
    Case(
        "crlf-documents",
        "encodings",
        {
            "a.yaml": (AGENT + "---\n" + fixture_with("value: hi}", "value: ''}")).replace(
                "\n", "\r\n"
            )
        },
        ("a.yaml:18:24: spec.assertions[0].value: expected a non-empty string; found ''",),
    ),
    Case(
        "regex-empty-pattern",
        "regex",
        {
            "a.yaml": AGENT,
            "f.yaml": fixture_with("{type: contains, value: hi}", "{type: regex, pattern: ''}"),
        },
        ("f.yaml:12:21: spec.assertions[0].pattern: expected a non-empty string; found ''",),
    ),
    Case(
        "state-matches-empty",
        "regex",
        {
            "a.yaml": AGENT,
            "f.yaml": fixture_with(
                "{type: contains, value: hi}", "{type: stateValue, at: db.orders, matches: ''}"
            ),
        },
        ("f.yaml:12:41: spec.assertions[0].matches: expected a non-empty string; found ''",),
    ),
    Case(
        "list-of-resources",
        "types and fields",
        {"a.yaml": "- " + AGENT.replace("\n", "\n  ").rstrip() + "\n"},
        ("a.yaml:1:3: [0]: this YAML document is a list, holding an evalward resource",),
    ),
    Case(
        "list-in-a-list-of-resources",
        "types and fields",
        {"a.yaml": "- - " + AGENT.replace("\n", "\n    ").rstrip() + "\n"},
        ("a.yaml:1:3: [0]: this YAML document is a list, holding an evalward resource",),
    ),
    Case(
        "list-of-kinds",
        "types and fields",
        {"a.yaml": "- {kind: Agent, name: deploy-bot, replicas: 2}\n"},
        (
            "a.yaml:1:3: [0]: this YAML document is a list, holding an evalward resource: "
            "expected one resource (a mapping with apiVersion and kind) per document; write "
            "each item without its leading `- `, and put a line `---` between them; or, if "
            "the file is not evalward's, list it under `exclude`",
        ),
    ),
    # --- empty files and empty values ----------------------------------------------------------
    Case(
        "empty-spec",
        "empty files",
        {"a.yaml": "apiVersion: evalward.dev/v1\nkind: Agent\nmetadata: {name: bot}\nspec:\n"},
        ("a.yaml:4:1: spec:",),
    ),
    Case(
        "empty-metadata",
        "empty files",
        {
            "a.yaml": "apiVersion: evalward.dev/v1\nkind: Agent\nmetadata:\nspec: {models: [openai/x]}\n"
        },
        ("a.yaml:3:1: metadata:",),
    ),
    Case(
        "only-header",
        "empty files",
        {"a.yaml": "apiVersion: evalward.dev/v1\nkind: Eval\n"},
        (
            "a.yaml:1:1: metadata: missing required field 'metadata'",
            "a.yaml:1:1: spec: missing required field 'spec'",
        ),
    ),
    Case(
        "empty-system-file",
        "empty files",
        {"a.yaml": agent_system_file("prompt.md"), "prompt.md": ""},
        ("a.yaml:6:3: spec.systemFile: the file 'prompt.md' is empty",),
    ),
    Case(
        "empty-config-list",
        "empty files",
        {"evalward.yaml": "[]\n", "a.yaml": AGENT},
        ("evalward.yaml:1:1:",),
    ),
    # --- huge files and YAML limits ------------------------------------------------------------
    Case(
        "huge-file",
        "huge files and limits",
        {"a.yaml": HUGE},
        (
            "a.yaml: file is 5242997 bytes, over the 5 MiB limit of a resource file; split it into several files",
        ),
    ),
    Case(
        "huge-config",
        "huge files and limits",
        {"evalward.yaml": "# " + "x" * (5 * 1024 * 1024 + 10) + "\n"},
        ("evalward.yaml: file is 5242893 bytes, over the 5 MiB limit",),
    ),
    Case(
        "alias-bomb",
        "huge files and limits",
        {"a.yaml": bomb()},
        ("a.yaml:7:36: invalid YAML: aliases expand to more than 100000 values (an alias bomb?)",),
    ),
    Case(
        "alias-bomb-pyyaml",
        "huge files and limits",
        {"a.yaml": bomb("z: {<<: {k: v}}\n")},
        ("a.yaml:7:36: invalid YAML: aliases expand to more than 100000 values (an alias bomb?)",),
    ),
    Case(
        "alias-loop",
        "huge files and limits",
        {"a.yaml": AGENT + "  tools: &t [{name: t, description: d, mock: {output: [*t]}}]\n"},
        (
            "a.yaml:6:56: invalid YAML: the alias *t stands inside the value its anchor &t "
            "names: a value that holds itself",
        ),
    ),
    Case(
        "deep-flow",
        "huge files and limits",
        {"a.yaml": AGENT + "  x: " + "[" * 50_000 + "]" * 50_000 + "\n"},
        ("a.yaml:6:104: invalid YAML: collections nested more than 100 levels deep",),
    ),
    Case(
        "deep-block",
        "huge files and limits",
        {"a.yaml": AGENT + "  x:\n    " + "- " * 50_000 + "a\n"},
        ("a.yaml:7:201: invalid YAML: collections nested more than 100 levels deep",),
    ),
    # --- YAML syntax ---------------------------------------------------------------------------
    Case(
        "tab-indent",
        "YAML syntax",
        {"a.yaml": AGENT.replace("  models", "\tmodels")},
        ("a.yaml:5:1: invalid YAML:",),
    ),
    Case("unclosed-quote", "YAML syntax", {"a.yaml": AGENT + '  system: "hello\n'}, ("a.yaml:",)),
    Case(
        "second-document-broken",
        "YAML syntax",
        {"a.yaml": AGENT + "---\napiVersion: evalward.dev/v1\nkind: [\n"},
        ("a.yaml:9:1: invalid YAML:",),
    ),
    Case(
        "agent-file-broken-references-follow",
        "YAML syntax",
        {
            "a.yaml": AGENT.replace("[openai/gpt-test]", "[openai/gpt-test"),
            "f.yaml": FIXTURE,
            "e.yaml": EVAL,
        },
        (
            "a.yaml:6:1: invalid YAML:",
            "e.yaml:5:3: spec.targetAgent: Eval 'ev' targets agent 'bot', which is not defined: a.yaml did not parse, and may define it",
            "f.yaml:7:3: spec.targetAgent: EvalFixture 'fx' is for agent 'bot' (its targetAgent), which is not defined: a.yaml did not parse, and may define it",
        ),
    ),
    Case(
        "config-syntax",
        "YAML syntax",
        {"evalward.yaml": "roots: [\n"},
        ("evalward.yaml:2:1: invalid YAML: did not find expected node content",),
    ),
    # a tag that says what its text is not: read as the tag says, `!!bool yes` was false (a
    # tool with side effects taken for one without) and `!!null text` nothing
    Case(
        "tagged-bool-yes",
        "YAML syntax",
        {"a.yaml": SIDE_EFFECTING.replace("sideEffects: true", "sideEffects: !!bool yes")},
        ("a.yaml:7:66: invalid YAML: `!!bool` tags 'yes', which is not true or false",),
    ),
    Case(
        "tagged-null-text",
        "YAML syntax",
        {"a.yaml": AGENT + "  systemFile: !!null prompts/p.md\n"},
        ("a.yaml:6:15: invalid YAML: `!!null` tags 'prompts/p.md', which is not nothing",),
    ),
    Case(
        "tagged-int-text",
        "YAML syntax",
        {"a.yaml": AGENT + "  maxTurns: !!int abc\n"},
        ("a.yaml:6:13: invalid YAML: `!!int` tags 'abc', which is not an integer",),
    ),
    Case(
        "tagged-float-text",
        "YAML syntax",
        {"evalward.yaml": "providers:\n  openai:\n    timeoutSeconds: !!float abc\n"},
        ("evalward.yaml:3:21: invalid YAML: `!!float` tags 'abc', which is not a number",),
    ),
    # --- types ---------------------------------------------------------------------------------
    Case(
        "system-file-path-empty",
        "types and fields",
        {"a.yaml": AGENT + "  systemFile: ''\n"},
        ("a.yaml:6:3: spec.systemFile: an empty path names no file",),
    ),
    Case(
        "kind-number",
        "types and fields",
        {"a.yaml": "apiVersion: evalward.dev/v1\nkind: 5\n"},
        (
            "a.yaml:2:1: kind: unknown kind: expected one of Agent, EvalFixture, Eval, JudgeCalibration; found 5",
        ),
    ),
    Case(
        "name-list",
        "types and fields",
        {"a.yaml": AGENT.replace("{name: bot}", "{name: [bot]}")},
        ("a.yaml:3:",),
    ),
    Case(
        "fixtures-string",
        "types and fields",
        {"a.yaml": AGENT, "e.yaml": EVAL + "  fixtures: fx\n"},
        ("e.yaml:7:3: spec.fixtures: expected a valid list; found 'fx'",),
    ),
    Case(
        # a model's API refuses such a tool at the first run; validate refuses it at its line
        "tool-parameters-not-a-schema",
        "types and fields",
        {
            "a.yaml": AGENT
            + "  tools:\n    - name: look\n      mock: {output: found}\n"
            + "      parameters: {type: object, properties: {id: {type: text}}}\n"
        },
        (
            "a.yaml:9:7: spec.tools[0].parameters: invalid JSON Schema at properties/id/type: 'text' is not valid under any of the given schemas",
        ),
    ),
    Case(
        # told once, where it is written, not as a problem of each Eval's `spec` line
        "default-not-a-number",
        "types and fields",
        {
            "evalward.yaml": "defaults:\n  execution: {parallel: many}\n",
            "a.yaml": AGENT,
            "f.yaml": FIXTURE,
            "e.yaml": EVAL,
            "e2.yaml": EVAL.replace("{name: ev}", "{name: ev2}"),
            "e3.yaml": EVAL.replace("{name: ev}", "{name: ev3}") + "  execution: {parallel: 2}\n",
        },
        (
            "evalward.yaml:2:15: defaults.execution.parallel: expected a valid integer; found 'many' (a default: every Eval that does not set `execution.parallel` inherits it, Eval 'ev' among them)",
        ),
    ),
    Case(
        "weight-string",
        "types and fields",
        {
            "f.yaml": fixture_with(
                "{type: contains, value: hi}", "{type: contains, value: hi, weight: heavy}"
            )
        },
        ("f.yaml:12:35: spec.assertions[0].weight:",),
    ),
    Case(
        "assertion-null",
        "types and fields",
        {"f.yaml": fixture_with("    - {type: contains, value: hi}\n", "    -\n")},
        ("f.yaml:12:",),
    ),
    Case(
        "reps-zero",
        "types and fields",
        {"a.yaml": AGENT, "e.yaml": EVAL + "  execution: {repsPerFixture: 0}\n"},
        (
            "e.yaml:7:15: spec.execution.repsPerFixture: expected a number greater than or equal to 1; found 0",
        ),
    ),
    Case(
        "timeout-negative",
        "types and fields",
        {"a.yaml": AGENT, "e.yaml": EVAL + "  execution: {timeoutSeconds: -1}\n"},
        ("e.yaml:7:15: spec.execution.timeoutSeconds:",),
    ),
    Case(
        "byo-and-models",
        "types and fields",
        {"a.yaml": byo("./agent.sh") + "  models: [openai/x]\n"},
        (
            "a.yaml:4:1: spec: a bring-your-own agent (`runtime`) runs its own model and tools; remove `models`",
        ),
    ),
    Case(
        "http-ready-not-url",
        "types and fields",
        {
            "a.yaml": "apiVersion: evalward.dev/v1\nkind: Agent\nmetadata: {name: bot}\nspec:\n  runtime:\n    http: {start: [x], ready: localhost, url: 'http://127.0.0.1:{port}/'}\n"
        },
        ("a.yaml:6:24: spec.runtime.http.ready:",),
    ),
    Case(
        "config-roots-number",
        "types and fields",
        {"evalward.yaml": "roots: 5\n"},
        ("evalward.yaml:1:1: roots: expected a valid list; found 5",),
    ),
    Case(
        "config-roots-empty",
        "types and fields",
        {"evalward.yaml": "roots: []\n", "a.yaml": AGENT},
        (
            "evalward.yaml:1:1: roots: `roots` lists no folder; list the folders that hold your resources, or remove `roots` to search the whole repository",
        ),
    ),
    Case(
        "config-root-nul",
        "paths",
        {"evalward.yaml": 'roots: ["evals\\0"]\n', "a.yaml": AGENT},
        (
            "evalward.yaml:1:1: roots: root 'evals\\x00' holds a NUL character, which no folder's name can",
        ),
    ),
    Case(
        "config-root-name-too-long",
        "paths",
        {"evalward.yaml": f"roots: [{'x' * 300}]\n", "a.yaml": AGENT},
        (f"evalward.yaml:1:9: roots[0]: root '{'x' * 300}' is not a folder of the repository",),
    ),
    # --- cron and regex ------------------------------------------------------------------------
    Case(
        "cron-six-fields",
        "cron",
        {"a.yaml": AGENT, "e.yaml": EVAL + '  schedule: "0 0 9 * * *"\n'},
        ("e.yaml:7:3: spec.schedule: a schedule is a 5-field cron expression",),
    ),
    Case(
        "cron-minute-61",
        "cron",
        {"a.yaml": AGENT, "e.yaml": EVAL + '  schedule: "61 * * * *"\n'},
        ("e.yaml:7:3: spec.schedule: cron minute field: 61 is out of range 0-59",),
    ),
    Case(
        "cron-number",
        "cron",
        {"a.yaml": AGENT, "e.yaml": EVAL + "  schedule: 5\n"},
        ("e.yaml:7:3: spec.schedule:",),
    ),
    Case(
        "cron-bad-step",
        "cron",
        {"a.yaml": AGENT, "e.yaml": EVAL + '  schedule: "*/0 * * * *"\n'},
        ("e.yaml:7:3: spec.schedule: cron minute field:",),
    ),
    Case(
        "regex-bad-group",
        "regex",
        {"f.yaml": fixture_with("{type: contains, value: hi}", "{type: regex, pattern: '(?<'}")},
        ("f.yaml:12:21: spec.assertions[0].pattern: invalid regular expression:",),
    ),
    Case(
        "regex-bad-range",
        "regex",
        {"f.yaml": fixture_with("{type: contains, value: hi}", "{type: regex, pattern: '[z-a]'}")},
        ("f.yaml:12:21: spec.assertions[0].pattern: invalid regular expression:",),
    ),
    Case(
        "contains-empty",
        "types and fields",
        {"f.yaml": fixture_with("{type: contains, value: hi}", "{type: contains, value: ''}")},
        ("f.yaml:12:24: spec.assertions[0].value: expected a non-empty string; found ''",),
    ),
    Case(
        "judge-rubric-blank",
        "types and fields",
        {"f.yaml": fixture_with("{type: contains, value: hi}", "{type: judge, rubric: '  '}")},
        (
            "f.yaml:12:21: spec.assertions[0].rubric: a blank rubric gives the judge nothing to score: say what it scores",
        ),
    ),
    # --- file references and paths -------------------------------------------------------------
    Case(
        "system-file-missing",
        "file references",
        {"a.yaml": agent_system_file("prompt.md")},
        ("a.yaml:6:3: spec.systemFile: the file 'prompt.md' does not exist",),
    ),
    Case(
        "system-file-absolute",
        "paths",
        {"a.yaml": agent_system_file("/etc/hostname")},
        (
            "a.yaml:6:3: spec.systemFile: the file '/etc/hostname' does not exist: a leading `/` means the repository root, not the machine's, so evalward looked for 'etc/hostname' in the repository; copy the file into the repository, commit it, and name it from the root",
        ),
    ),
    Case(
        "system-file-dotdot",
        "paths",
        {"a.yaml": agent_system_file("../../etc/hostname")},
        ("a.yaml:6:3: spec.systemFile: the file '../../etc/hostname' leaves the repository",),
    ),
    Case(
        "system-file-symlink",
        "paths",
        {"a.yaml": agent_system_file("prompt.md"), "prompt.md": Symlink("/etc/hostname")},
        ("a.yaml:6:3: spec.systemFile: the file 'prompt.md' leaves the repository",),
    ),
    Case(
        "system-file-dir-symlink",
        "paths",
        {"a.yaml": agent_system_file("docs/prompt.md"), "docs": Symlink("/etc")},
        # /etc holds no evalward document: the link is passed over, the systemFile refused
        ("a.yaml:6:3: spec.systemFile: the file 'docs/prompt.md' leaves the repository",),
    ),
    Case(
        "system-file-old-rule-symlink",
        "paths",
        {
            "agents/a.yaml": agent_system_file("prompt.md"),
            "agents/prompt.md": Symlink("/etc/hostname"),
        },
        ("agents/a.yaml:6:3: spec.systemFile: the file 'prompt.md' leaves the repository",),
    ),
    Case(
        "system-file-old-rule-dotdot",
        "paths",
        {"a/b/a.yaml": agent_system_file("../../../etc/hostname")},
        (
            "a/b/a.yaml:6:3: spec.systemFile: the file '../../../etc/hostname' leaves the repository",
        ),
    ),
    Case(
        "command-dotdot",
        "paths",
        {"a.yaml": byo("../outside.sh")},
        (
            "a.yaml:7:13: spec.runtime.command.run[0]: the program '../outside.sh' leaves the repository",
        ),
    ),
    Case(
        "command-symlink",
        "paths",
        {"a.yaml": byo("./agent"), "agent": Symlink("/bin/sh")},
        ("a.yaml:7:13: spec.runtime.command.run[0]: the program './agent' leaves the repository",),
    ),
    Case(
        "http-start-dotdot",
        "paths",
        {
            "a.yaml": "apiVersion: evalward.dev/v1\nkind: Agent\nmetadata: {name: bot}\nspec:\n  runtime:\n    http: {start: [../srv], ready: 'http://127.0.0.1:{port}/', url: 'http://127.0.0.1:{port}/'}\n"
        },
        ("a.yaml:6:20: spec.runtime.http.start[0]: the program '../srv' leaves the repository",),
    ),
    Case(
        "agentv-symlink",
        "paths",
        {
            "ev.yaml": "evalcases:\n  - id: a\n    expected_outcome: ok\n    input:\n      - role: user\n        content:\n          - {type: file, value: notes.md}\n",
            "notes.md": Symlink("/etc/hostname"),
        },
        (
            "ev.yaml:7:26: evalcases[0].input[0].content[0].value: file reference 'notes.md' leaves the repository",
        ),
    ),
    Case(
        "agentv-absolute-dotdot",
        "paths",
        {
            "ev.yaml": "evalcases:\n  - id: a\n    expected_outcome: ok\n    input:\n      - role: user\n        content:\n          - {type: file, value: /../etc/hostname}\n"
        },
        (
            "ev.yaml:7:26: evalcases[0].input[0].content[0].value: file reference '/../etc/hostname' leaves the repository",
        ),
    ),
    # --- refusals a run makes before its first model call (preflight.py) -----------------------
    Case(
        "side-effect-unshadowed",
        "refusals",
        {"a.yaml": SIDE_EFFECTING, "refund.py": "print(1)\n", "f.yaml": FIXTURE, "e.yaml": EVAL},
        (
            "f.yaml:6:1: spec: fixture 'fx' would run the side-effecting tool 'refund' of agent 'bot' for real; add it to the fixture's `shadowTools: [refund]` or record its output in `toolReplay`",
        ),
    ),
    Case(
        "side-effect-shadows-another",
        "refusals",
        {
            "a.yaml": SIDE_EFFECTING + "    - {name: send_email, mock: {output: sent}}\n",
            "refund.py": "print(1)\n",
            "f.yaml": FIXTURE + "  shadowTools: [send_email]\n",
            "e.yaml": EVAL,
        },
        ("f.yaml:13:3: spec.shadowTools: fixture 'fx' would run the side-effecting tool 'refund'",),
    ),
    Case(
        "side-effect-replays-another",
        "refusals",
        {
            "a.yaml": SIDE_EFFECTING + "    - {name: send_email, mock: {output: sent}}\n",
            "refund.py": "print(1)\n",
            "f.yaml": FIXTURE + "  toolReplay: [{tool: send_email, output: ok}]\n",
            "e.yaml": EVAL,
        },
        ("f.yaml:6:1: spec: fixture 'fx' would run the side-effecting tool 'refund'",),
    ),
    Case(
        "unknown-agent-provider",
        "refusals",
        {
            "a.yaml": AGENT.replace("[openai/gpt-test]", "[openai/gpt-test, gemini/flash]"),
            "f.yaml": FIXTURE,
            "e.yaml": EVAL,
        },
        (
            "a.yaml:5:29: spec.models[1]: model 'gemini/flash': unknown provider 'gemini'; expected one of openai, anthropic, mock",
        ),
    ),
    Case(
        "model-id-without-its-model",
        "refusals",
        {"a.yaml": AGENT.replace("openai/gpt-test", "openai/"), "f.yaml": FIXTURE, "e.yaml": EVAL},
        ("a.yaml:5:12: spec.models[0]: model 'openai/' names no model after its provider",),
    ),
    Case(
        "judge-model-id-without-its-model",
        "refusals",
        {"a.yaml": AGENT, "f.yaml": FIXTURE, "e.yaml": EVAL + "  judge: {model: anthropic/}\n"},
        ("e.yaml:7:11: spec.judge.model: model 'anthropic/' names no model after its provider",),
    ),
    Case(
        "unknown-judge-provider",
        "refusals",
        {"a.yaml": AGENT, "f.yaml": FIXTURE, "e.yaml": EVAL + "  judge: {model: gemini/flash}\n"},
        ("e.yaml:7:11: spec.judge.model: model 'gemini/flash': unknown provider 'gemini'",),
    ),
    Case(
        "unknown-judge-provider-from-defaults",
        "refusals",
        {
            "evalward.yaml": "defaults: {targetAgent: bot, judge: {model: gemini/flash}}\n",
            "a.yaml": AGENT,
            "f.yaml": FIXTURE,
            "e.yaml": EVAL,
        },
        ("e.yaml:4:1: spec.judge.model: model 'gemini/flash': unknown provider 'gemini'",),
    ),
    Case(
        "unknown-cross-check-provider",
        "refusals",
        {
            "a.yaml": AGENT,
            "f.yaml": FIXTURE,
            "e.yaml": EVAL
            + "  judge: {model: openai/j, crossCheck: {models: [anthropic/k, vertex/g]}}\n",
        },
        (
            "e.yaml:7:63: spec.judge.crossCheck.models[1]: model 'vertex/g': unknown provider 'vertex'",
        ),
    ),
    Case(
        "unknown-pairwise-provider",
        "refusals",
        {
            "a.yaml": AGENT,
            "f.yaml": FIXTURE,
            "c.yaml": PAIR_CALIBRATION,
            "e.yaml": EVAL
            + "  judge:\n    model: openai/j\n"
            + "    pairwise: {rubric: Warmer?, model: gemini/flash, calibration: greeting-pairs}\n",
        },
        (
            "e.yaml:9:33: spec.judge.pairwise.model: model 'gemini/flash': unknown provider 'gemini'; expected one of openai, anthropic, mock",
        ),
    ),
    Case(
        "blank-pairwise-rubric",
        "types and fields",
        {
            "a.yaml": AGENT,
            "f.yaml": FIXTURE,
            "c.yaml": PAIR_CALIBRATION,
            "e.yaml": EVAL
            + "  judge:\n    model: openai/j\n"
            + "    pairwise: {rubric: '   ', calibration: greeting-pairs}\n",
        },
        (
            "e.yaml:9:16: spec.judge.pairwise.rubric: a blank rubric gives the judge nothing to score",
        ),
    ),
    Case(
        "blank-calibration-rubric",
        "types and fields",
        {
            "a.yaml": AGENT,
            "f.yaml": FIXTURE,
            "c.yaml": PAIR_CALIBRATION.replace("rubric: Warmer?", "rubric: ''"),
            "e.yaml": EVAL,
        },
        ("c.yaml:5:3: spec.rubric: a blank rubric gives the judge nothing to score",),
    ),
    Case(
        "mock-pairwise-model-without-script",
        "refusals",
        {
            "a.yaml": AGENT,
            "f.yaml": FIXTURE + "  pairwise: {rubric: Warmer?}\n",
            "e.yaml": EVAL + "  judge: {model: openai/j, pairwise: {model: mock/judge}}\n",
        },
        (
            "e.yaml:7:39: spec.judge.pairwise.model: model 'mock/judge' uses the mock provider, but no mock script is set",
        ),
    ),
    Case(
        "unknown-calibration-provider",
        "refusals",
        {
            "a.yaml": AGENT,
            "f.yaml": FIXTURE,
            "e.yaml": EVAL + "  judge: {model: openai/j, calibration: cal}\n",
            "c.yaml": CALIBRATION.replace("[openai/j]", "[openai/j, gemini/flash]"),
        },
        ("c.yaml:7:27: spec.judgeModels[1]: model 'gemini/flash': unknown provider 'gemini'",),
    ),
    Case(
        "mock-model-without-script",
        "refusals",
        {
            "a.yaml": AGENT.replace("openai/gpt-test", "mock/scripted"),
            "f.yaml": FIXTURE,
            "e.yaml": EVAL,
        },
        (
            "a.yaml:5:12: spec.models[0]: model 'mock/scripted' uses the mock provider, but no mock script is set; pass `--mock-script FILE` (or the action input `mock-script`)",
        ),
    ),
    Case(
        "program-missing",
        "refusals",
        {"a.yaml": byo("./agent.sh"), "f.yaml": FIXTURE, "e.yaml": EVAL},
        (
            "a.yaml:7:13: spec.runtime.command.run[0]: the program './agent.sh' does not exist (paths in a resource are from the repository root)",
        ),
    ),
    Case(
        "program-relative-to-the-resource",
        "refusals",
        {"agents/a.yaml": byo("bin/agent.sh"), "agents/bin/agent.sh": "#!/bin/sh\n"},
        (
            "agents/a.yaml:7:13: spec.runtime.command.run[0]: the program 'bin/agent.sh' does not exist",
        ),
    ),
    Case(
        "program-not-executable",
        "refusals",
        {"a.yaml": byo("./agent.sh"), "agent.sh": "#!/bin/sh\n", "f.yaml": FIXTURE, "e.yaml": EVAL},
        (
            "a.yaml:7:13: spec.runtime.command.run[0]: the program './agent.sh' is not executable; `chmod +x ./agent.sh`",
        ),
    ),
    Case(
        "tool-program-missing",
        "refusals",
        {
            "a.yaml": AGENT + "  tools:\n    - {name: look, command: [tools/look.sh]}\n",
            "f.yaml": FIXTURE,
            "e.yaml": EVAL,
        },
        ("a.yaml:7:20: spec.tools[0].command: the program 'tools/look.sh' does not exist",),
    ),
    Case(
        "service-environment-missing",
        "file references",
        {
            "a.yaml": AGENT,
            "f.yaml": FIXTURE,
            "e.yaml": EVAL
            + "  playground:\n    service:\n      start: [python3, srv.py, '{port}']\n"
            + "      environment: {python: srv/requirement.txt}\n",
            "srv.py": "print('serving')\n",
        },
        (
            "e.yaml:10:21: spec.playground.service.environment.python: the file 'srv/requirement.txt' does not exist (paths in a resource are from the repository root)",
        ),
    ),
    Case(
        "mcp-service-without-a-playground",
        "refusals",
        {
            "a.yaml": AGENT + "  mcpServers:\n    orders: {service: /mcp}\n",
            "f.yaml": FIXTURE,
            "e.yaml": EVAL,
        },
        (
            "e.yaml:4:1: spec: Eval 'ev' names no playground, and agent 'bot' reaches its MCP server 'orders' on the playground's service (`service: /mcp`)",
        ),
    ),
    Case(
        "mcp-service-in-a-playground-without-one",
        "refusals",
        {
            "a.yaml": AGENT + "  mcpServers:\n    orders: {service: /mcp}\n",
            "f.yaml": FIXTURE,
            "e.yaml": EVAL + SHOP,
            "db.sql": "CREATE TABLE t (x);\n",
        },
        (
            "e.yaml:7:3: spec.playground: playground 'ev' has no `service`, and agent 'bot' reaches its MCP server 'orders' on the playground's service (`service: /mcp`) in Eval 'ev'",
        ),
    ),
    Case(
        "state-snapshot-missing",
        "file references",
        {
            "a.yaml": AGENT,
            "f.yaml": FIXTURE
            + "    - {type: stateSnapshot, at: db.t, snapshot: expected/after.json}\n",
            "e.yaml": EVAL + SHOP,
            "db.sql": "CREATE TABLE t (x);\n",
        },
        (
            "f.yaml:13:39: spec.assertions[1].snapshot: the snapshot 'expected/after.json' does not exist",
        ),
    ),
    Case(
        "state-snapshot-does-not-load",
        "file references",
        {
            "a.yaml": AGENT,
            "f.yaml": FIXTURE
            + "    - {type: stateSnapshot, at: db.t, snapshot: expected/after.json}\n",
            "e.yaml": EVAL + SHOP,
            "db.sql": "CREATE TABLE t (x);\n",
            "expected/after.json": '{"t": [1], "t": [2]}\n',
        },
        (
            "f.yaml:13:39: spec.assertions[1].snapshot: the snapshot 'expected/after.json' does not load:",
        ),
    ),
    Case(
        "a-key-yaml-reads-as-a-number",
        "types and fields",
        {
            "a.yaml": AGENT,
            "f.yaml": FIXTURE.replace(
                "  labels: {agent: bot}", "  labels:\n    agent: bot\n    1: x"
            ),
            "e.yaml": EVAL,
        },
        (
            'f.yaml:7:5: metadata.labels.1: expected a key that is a string; found 1: YAML reads it as another type, so quote it ("1")',
            "e.yaml:6:21: spec.fixtureSelector.matchLabels: Eval 'ev' selects no fixture that loads",
        ),
    ),
    Case(
        "mock-template-names-no-argument",
        "references",
        {
            "a.yaml": AGENT
            + "  tools:\n    - name: lookup\n"
            + "      parameters: {type: object, properties: {order_id: {type: string}}}\n"
            + "      mock: {output: {order: '{{ orderid }}'}}\n",
        },
        (
            "a.yaml:9:14: spec.tools[0].mock.output: the template names 'orderid', which is no argument of tool 'lookup' (did you mean 'order_id'?)",
        ),
    ),
    Case(
        "mock-template-filter-it-lacks",
        "references",
        {
            "a.yaml": AGENT
            + "  tools:\n    - name: lookup\n"
            + "      parameters: {type: object, properties: {order_id: {type: string}}}\n"
            + "      mock: {output: '{{ order_id | shout }}'}\n",
        },
        (
            "a.yaml:9:14: spec.tools[0].mock.output: the template '{{ order_id | shout }}' does not parse: No filter named 'shout'",
        ),
    ),
    Case(
        "input-placeholder-misspelt",
        "types and fields",
        {"a.yaml": byo('python3, agent.py, "{prompt}"'), "agent.py": "print('hi')\n"},
        (
            "a.yaml:7:32: spec.runtime.command.run[2]: `{prompt}` is no placeholder evalward replaces",
        ),
    ),
    Case(
        "a-port-placeholder-in-a-command-runtime",
        "types and fields",
        {"a.yaml": byo('python3, agent.py, "{port}"'), "agent.py": "print('hi')\n"},
        (
            "a.yaml:7:32: spec.runtime.command.run[2]: `{port}` is no placeholder evalward replaces: the program would get it as written; `{input}` is the fixture's input text (or read it from stdin); `{port}` is an http runtime's (`runtime.http`), which evalward starts on a free port",
        ),
    ),
    Case(
        "a-fact-written-as-a-string",
        "types and fields",
        {
            "a.yaml": AGENT,
            "f.yaml": fixture_with(
                "  input:\n    type: prompt\n    payload: {prompt: hi}\n",
                "  conversation:\n    user:\n      persona: A customer.\n"
                "      goal: Find the order.\n      knows: Their order number is 12345.\n",
            ),
        },
        (
            "f.yaml:12:7: spec.conversation.user.knows: expected a valid list; found 'Their order number is 12345.'; write it as a list: [Their order number is 12345.]",
        ),
    ),
    Case(
        "transform-written-as-code-alone",
        "types and fields",
        {
            "a.yaml": AGENT,
            "f.yaml": FIXTURE.replace(
                "    - {type: contains, value: hi}",
                '    - {type: contains, value: hi, transform: "output.trim()"}',
            ),
            "e.yaml": EVAL,
        },
        (
            'f.yaml:12:35: spec.assertions[0].transform: a transform is a mapping of its code and language: `{ language: javascript, source: "output.trim()" }`',
            "e.yaml:6:21: spec.fixtureSelector.matchLabels: Eval 'ev' selects no fixture that loads",
        ),
    ),
    Case(
        "seed-does-not-load",
        "refusals",
        {
            "a.yaml": AGENT,
            "f.yaml": FIXTURE,
            "e.yaml": EVAL + SHOP,
            "db.sql": "CREATE TABLE t (x);\nCRATE TABLE u (y);\n",
        },
        (
            "e.yaml:7:25: spec.playground.sqlite.seed: playground 'ev': the seed 'db.sql' does not load: near \"CRATE\": syntax error (the statement at db.sql:2)",
        ),
    ),
    Case(
        "sql-criterion-table",
        "refusals",
        {
            "a.yaml": AGENT,
            "f.yaml": FIXTURE + "    - {type: sql, query: SELECT x FROM tt, count: 1}\n",
            "e.yaml": EVAL + SHOP,
            "db.sql": "CREATE TABLE t (x);\n",
        },
        (
            "f.yaml:13:19: spec.assertions[1].query: the query fails on the seed 'db.sql' of playground 'ev': no such table: tt (did you mean 't'?)",
        ),
    ),
    Case(
        "scorer-does-not-compile",
        "refusals",
        {
            "a.yaml": AGENT,
            "f.yaml": FIXTURE + "    - {type: code, language: python, source: 'output =='}\n",
            "e.yaml": EVAL,
        },
        (
            "f.yaml:13: spec.assertions[1].source: the inline Python scorer does not compile: invalid syntax: output ==",
        ),
    ),
    Case(
        "config-unknown-provider",
        "refusals",
        {
            "evalward.yaml": "defaults: {targetAgent: bot}\nproviders:\n  gemini: {}\n",
            "a.yaml": AGENT,
        },
        (
            "evalward.yaml:3:3: providers.gemini: provider 'gemini' is not built in (openai, anthropic), so it needs `api` and `baseUrl`",
        ),
    ),
    Case(
        "config-provider-setting",
        "refusals",
        {
            "evalward.yaml": "defaults: {targetAgent: bot}\nproviders:\n  openai: {baseURL: x}\n",
            "a.yaml": AGENT,
        },
        ("evalward.yaml:3:12: providers.openai.baseURL: unknown field 'baseURL'",),
    ),
]

CORPUS = TABLE + EXTRA


def write_repo(
    root: Path, files: Files, write: Callable[[Path, bytes], None] | None = None
) -> None:
    """The case's files under root, with the default evalward.yaml unless the case has one."""
    root.mkdir(parents=True, exist_ok=True)
    everything: Files = {"evalward.yaml": "defaults: {targetAgent: bot}\n", **files}
    for name, content in everything.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Symlink):
            os.symlink(content.target, path)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
