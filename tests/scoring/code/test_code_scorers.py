"""Code scorers through `evalward run` and `evalward validate`: Python and JavaScript, from a
file and inline, every return shape promptfoo accepts, and every way a scorer can go wrong
(crash, hang, memory, garbage, too much output) ending as `error` with the reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support.clirun import evalward
from support.documents import documents
from support.gitrepo import GitRepo
from support.greeter import greeter_agent, greeter_eval

pytestmark = pytest.mark.integration

AGENT_AND_EVAL = documents(greeter_agent("openai/gpt-test"), greeter_eval(labelled=True))

FIXTURE = """\
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {name}, labels: {{ agent: greeter }} }}
spec:
  targetAgent: greeter
  input: {{ type: prompt, payload: {{ prompt: "Hi, I am Ann" }} }}
  reference: Hello Ann
  vars: {{ name: Ann, answer: "Yes" }}
  assertions:
{assertions}
"""

MOCK = """\
replies:
  - match: { agent: greeter }
    turns: [{ content: "Hello Ann! How can I help?" }]
"""

SCORERS = {
    "scorers/greets.py": """\
import json

def get_assert(output, context):
    print("a scorer's own print goes to its log, not its answer")
    trace = context["trace"]
    return {
        "pass": context["vars"]["name"] in output and context["expected"] == "Hello Ann",
        "score": 0.75,
        "reason": f"{len(trace['steps'])} steps; answer {context['vars']['answer']}",
    }

def ratio(output, context):
    return len(output) / 100
""",
    "scorers/length.js": """\
console.log('noise on stdout');
module.exports = {
  longEnough: async (output, context) => ({
    pass: output.length > context.config.min,
    score: 1,
    reason: `input was ${context.input}`,
  }),
};
""",
    "scorers/esm.mjs": "export default (output) => output.startsWith('Hello');\n",
    "scorers/dynamic.py": "globals()['get_assert'] = lambda output, context: True\n",
    "scorers/broken.py": "def get_assert(output, context):\n    return 1 / 0\n",
    "scorers/loops.py": "def get_assert(output, context):\n    while True:\n        pass\n",
    "scorers/greedy.py": (
        "def get_assert(output, context):\n    hoard = bytearray(2 * 1024 ** 3)\n    return True\n"
    ),
    "scorers/chatty.py": (
        "def get_assert(output, context):\n    return {'pass': True, 'reason': 'x' * 2000000}\n"
    ),
    "scorers/vanishes.py": ("import os\n\ndef get_assert(output, context):\n    os._exit(0)\n"),
}

CASES = {
    # name: (assertions, expected status, a part of the expected message)
    "python-file": ("- { type: code, file: scorers/greets.py }", "pass", "2 steps; answer Yes"),
    "python-named-number": (
        "- { type: code, file: 'scorers/greets.py:ratio', threshold: 0.5 }",
        "fail",
        "score 0.26, not ≥ 0.5",
    ),
    "js-file-named": (
        "- { type: code, file: 'scorers/length.js:longEnough', config: { min: 5 } }",
        "pass",
        "input was Hi, I am Ann",
    ),
    "js-esm-default": ("- { type: code, file: scorers/esm.mjs }", "pass", "the scorer passed it"),
    "js-inline-expression": (
        "- { type: code, language: javascript, source: \"output.includes('help')\" }",
        "pass",
        "",
    ),
    "js-inline-body": (
        "- type: code\n  language: javascript\n  source: |\n"
        "    if (context.vars.answer !== 'Yes') return false;\n"
        "    return { pass: false, score: 0.2, reason: 'not good enough' };",
        "fail",
        "not good enough",
    ),
    "python-inline": (
        "- { type: code, language: python, source: \"'Ann' in output\" }",
        "pass",
        "",
    ),
    "python-crashes": ("- { type: code, file: scorers/broken.py }", "error", "ZeroDivisionError"),
    "python-hangs": (
        "- { type: code, file: scorers/loops.py, timeoutSeconds: 1 }",
        "error",
        "did not finish within 1 s",
    ),
    "python-greedy": (
        "- { type: code, file: scorers/greedy.py, memoryMb: 64 }",
        "error",
        "out of memory",
    ),
    "too-much-answer": ("- { type: code, file: scorers/chatty.py }", "error", "more than 1024 KiB"),
    "no-answer": ("- { type: code, file: scorers/vanishes.py }", "error", "without an answer"),
    "garbage-string": (
        "- { type: code, language: javascript, source: \"return 'yes'\" }",
        "error",
        'returned "yes"; expected',
    ),
    "garbage-nan": (
        "- { type: code, language: javascript, source: 'NaN' }",
        "error",
        "not a score",
    ),
    "garbage-huge": (
        "- { type: code, language: python, source: '10 ** 400' }",
        "error",
        "not a score",
    ),
    "garbage-huge-score": (
        "- { type: code, language: python, source: \"{'pass': True, 'score': 10 ** 400}\" }",
        "error",
        "not a score",
    ),
    "garbage-pass": (
        "- { type: code, language: python, source: \"{'pass': 'yes'}\" }",
        "error",
        "expected true or false",
    ),
    # a function a reading of the file finds missing is refused before the run
    # (tests/plan/preflight/test_names_before_run.py); one bound dynamically is the run's
    "missing-function": (
        "- { type: code, file: 'scorers/dynamic.py:nowhere' }",
        "error",
        "defines no function 'nowhere'",
    ),
}


def suite() -> dict[str, str]:
    fixtures = "".join(
        FIXTURE.format(name=name, assertions="    " + lines.replace("\n", "\n    "))
        for name, (lines, _, _) in CASES.items()
    )
    return {"suite.yaml": AGENT_AND_EVAL + fixtures, "mock.yaml": MOCK, **SCORERS}


def run(repo: GitRepo) -> tuple[int, dict[str, Any]]:
    done = evalward("run", ".", "--mock-script", "mock.yaml", "--json", "--no-cache", cwd=repo.path)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def test_every_shape_and_every_failure_of_a_scorer(repo: GitRepo) -> None:
    repo.commit("a suite with code scorers", suite())
    code, results = run(repo)
    found = {f["fixture"]: f["assertions"][0] for f in results["fixtures"]}
    for name, (_, status, said) in CASES.items():
        assert found[name]["status"] == status, (name, found[name])
        assert said in found[name]["message"], (name, found[name]["message"])
    assert found["python-file"]["score"] == 0.75
    assert found["js-inline-body"]["score"] == 0.2
    assert code == 1  # errors never pass


TALK = """\
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: talk, labels: { agent: greeter } }
spec:
  targetAgent: greeter
  conversation:
    turns:
      - user: "Hi, I am Ann"
        assertions:
          - { type: code, file: scorers/esm.mjs }
          - { type: code, file: 'scorers/greets.py:ratio', threshold: 0.5 }
"""


def test_a_scripted_turns_scorer_file_is_read_with_its_fixture(repo: GitRepo) -> None:
    """A code scorer named by its file on a turn of a scripted conversation runs as one on
    the fixture does (it was never read: every run an error, "not loaded with its
    fixture")."""
    suite = {"suite.yaml": AGENT_AND_EVAL + TALK, "mock.yaml": MOCK, **SCORERS}
    repo.commit("a conversation", suite)
    code, results = run(repo)
    (talk,) = results["fixtures"]
    said = [(a["turn"], a["status"], a["message"]) for a in talk["assertions"]]
    assert said == [
        (1, "pass", "the scorer passed it"),
        (1, "fail", "score 0.26, not ≥ 0.5"),
    ]
    assert code == 1


INLINE_ERRORS = """\
    - type: code
      language: python
      source: |
        words = output.split()
        return len(words) / 0
    - type: code
      language: javascript
      source: |
        const words = output.split(' ');
        return context.nothing.length > words.length;
    - { type: code, file: scorers/broken.py }"""


def test_an_error_inside_a_scorer_is_told_where_its_code_was_written(repo: GitRepo) -> None:
    """An inline scorer's at the line of its YAML file (its own line, from the block's
    first), a file's at its own line."""
    fixture = FIXTURE.format(name="inline-errors", assertions=INLINE_ERRORS)
    repo.commit("scorers that raise", {**suite(), "suite.yaml": AGENT_AND_EVAL + fixture})
    lines = (repo.path / "suite.yaml").read_text().splitlines()
    python = lines.index("        return len(words) / 0") + 1
    javascript = lines.index("        return context.nothing.length > words.length;") + 1

    code, results = run(repo)

    said = [a["message"] for a in results["fixtures"][0]["assertions"]]
    assert f"ZeroDivisionError: division by zero (at suite.yaml:{python})" in said[0], said
    assert "TypeError: Cannot read properties of undefined" in said[1], said
    assert f"\n    at suite.yaml:{javascript}:" in said[1], said
    assert "ZeroDivisionError: division by zero (at scorers/broken.py:2)" in said[2], said
    assert code == 1


def test_a_missing_or_escaping_scorer_file_is_refused_at_its_line(repo: GitRepo) -> None:
    fixture = FIXTURE.format(
        name="lost",
        assertions="    - { type: code, file: scorers/missing.py }\n"
        "    - { type: code, file: scorers/out.py }",
    )
    repo.commit("a lost scorer", {"suite.yaml": AGENT_AND_EVAL + fixture})
    (repo.path / "scorers").mkdir()
    (repo.path / "scorers" / "out.py").symlink_to("/etc/hostname")
    done = evalward("validate", ".", cwd=repo.path)
    assert done.returncode == 2, done.stdout + done.stderr
    said = done.stdout + done.stderr
    assert "suite.yaml:24:21: spec.assertions[0].file: the scorer 'scorers/missing.py' is " in said
    assert "suite.yaml:25:21: spec.assertions[1].file: the scorer 'scorers/out.py' leads " in said


def test_a_scorer_needs_one_source_and_a_known_language(repo: GitRepo) -> None:
    fixture = FIXTURE.format(
        name="unclear",
        assertions="    - { type: code, file: scorers/x.rb }\n    - { type: code, source: 'true' }",
    )
    repo.commit("unclear scorers", {"suite.yaml": AGENT_AND_EVAL + fixture})
    done = evalward("validate", ".", cwd=repo.path)
    assert done.returncode == 2
    said = done.stdout + done.stderr
    assert "cannot tell the language of 'scorers/x.rb'" in said
    assert "an inline scorer needs `language: python` or `javascript`" in said


AGENTV_SUITE = """\
tests:
  - id: keywords
    input: Hi, I am Ann
    expected_output: Hello Ann
    assertions:
      - metric: keyword_check
        type: code-grader
        command: [uv, run, graders/keywords.py, --want, Ann]
      - { type: script, command: [node, graders/exits.js] }
      - { type: code_judge, script: python3 graders/complains.py, weight: 2 }
execution:
  target: greeter
"""

AGENTV_GRADERS = {
    "evals/graders/keywords.py": """\
import json, sys

data = json.load(sys.stdin)
want = sys.argv[sys.argv.index("--want") + 1]
found = want in data["output"] and data["expected_output"][0]["content"] == "Hello Ann"
print(json.dumps({
    "score": 1.0 if found else 0.0,
    "assertions": [{"text": f"mentions {want}", "passed": found}],
}, indent=2))
""",
    "evals/graders/exits.js": """\
const data = JSON.parse(require('fs').readFileSync(0, 'utf8'));
console.log(`the answer has ${data.output.length} characters`);
process.exit(data.trace_summary.event_count > 0 ? 0 : 1);
""",
    "evals/graders/complains.py": (
        "import sys\nsys.stderr.write('cannot grade this')\nsys.exit(3)\n"
    ),
}


def test_agentv_script_graders_run_as_code_scorers(repo: GitRepo) -> None:
    repo.commit(
        "an AgentV suite with script graders",
        {
            "agents.yaml": AGENT_AND_EVAL,
            "evals/greet.eval.yaml": AGENTV_SUITE,
            "mock.yaml": MOCK,
            **AGENTV_GRADERS,
        },
    )
    code, results = run(repo)
    (fixture,) = results["fixtures"]
    keywords, exits, complains = fixture["assertions"]
    assert (keywords["status"], keywords["axis"]) == ("pass", "keyword_check")
    assert keywords["message"] == "✓ mentions Ann"
    assert (exits["status"], exits["message"]) == ("pass", "the answer has 26 characters")
    assert complains["status"] == "error"
    assert complains["message"] == "the script failed (exit code 3): cannot grade this"
    assert code == 1


def test_a_scorer_leaves_no_folder_in_the_temporary_folder(repo: GitRepo, tmp_path: Path) -> None:
    """A JavaScript scorer's file is loaded from a folder of its own and a script grader runs
    in one: both are removed once they answer, so runs on a user's machine fill no /tmp."""
    repo.commit("scorers of every kind", suite())
    repo.commit("script graders", {"evals/greet.eval.yaml": AGENTV_SUITE, **AGENTV_GRADERS})
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    done = evalward(
        "run",
        ".",
        "--mock-script",
        "mock.yaml",
        "--json",
        "--no-cache",
        cwd=repo.path,
        TMPDIR=str(scratch),
    )
    assert done.returncode in (0, 1), done.stderr
    graded = [f for f in json.loads(done.stdout)["fixtures"] if f["fixture"] == "keywords"]
    assert graded and graded[0]["assertions"][1]["status"] == "pass"  # a script grader ran
    left = sorted(p.name for p in scratch.iterdir())
    assert not [name for name in left if name.startswith(("scorer-", "grader-"))], left


PLANTED = {
    "scorers/uses_package.js": "const pad = require('leftpad');\nmodule.exports = () => pad();\n",
    "scorers/imports_package.mjs": "import pad from 'leftpad';\nexport default () => pad();\n",
    "scorers/grade.js": (
        "const pad = require('leftpad');\nconsole.log(JSON.stringify({ pass: pad() }));\n"
    ),
}


def test_a_package_planted_above_the_scorer_is_not_what_it_imports(
    repo: GitRepo, tmp_path: Path
) -> None:
    """A world-writable folder above the scorer's (/tmp) may hold a node_modules anybody put
    there; a scorer that names a package must not get that one."""
    temp = tmp_path / "shared-tmp"
    planted = temp / "node_modules" / "leftpad"
    planted.mkdir(parents=True)
    (planted / "index.js").write_text("module.exports = () => true;\n")
    (planted / "package.json").write_text('{"name": "leftpad", "main": "index.js"}\n')
    fixtures = "".join(
        FIXTURE.format(name=name, assertions="    " + line)
        for name, line in [
            ("planted-require", "- { type: code, file: scorers/uses_package.js }"),
            ("planted-import", "- { type: code, file: scorers/imports_package.mjs }"),
            ("planted-script", "- { type: code, file: scorers/grade.js, protocol: script }"),
        ]
    )
    repo.commit("scorers that name a package", {
        "suite.yaml": AGENT_AND_EVAL + fixtures, "mock.yaml": MOCK, **PLANTED,
    })  # fmt: skip
    done = evalward(
        "run", ".", "--mock-script", "mock.yaml", "--json", "--no-cache",
        cwd=repo.path, TMPDIR=str(temp),
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    found = {f["fixture"]: f["assertions"][0] for f in json.loads(done.stdout)["fixtures"]}
    assert found["planted-require"]["status"] == "error"
    assert "Cannot find module 'leftpad'" in found["planted-require"]["message"]
    assert found["planted-import"]["status"] == "error"
    assert "may import Node's own modules only" in found["planted-import"]["message"]
    assert found["planted-script"]["status"] == "error"
    assert "Cannot find module 'leftpad'" in found["planted-script"]["message"]
