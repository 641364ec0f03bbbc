"""Code scorers that name an `environment`, through `evalward run` and `evalward validate`: on
the command line nothing is built (as for agents), so a JavaScript scorer imports from the
node_modules `npm ci` left beside its package.json, a Python scorer from the `python3` on
PATH, and one whose package is not there says how to install it; a missing environment file
is refused at its line. (The action, which builds them:
tests/scoring/code/test_code_scorer_environments_action.py.)"""

from __future__ import annotations

import json

import pytest

from support.clirun import evalward, run_for_results
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
  assertions:
{assertions}
"""
MOCK = """\
replies:
  - match: { agent: greeter }
    turns: [{ content: "Hello Ann! How can I help?" }]
"""

PACKAGE = {
    "scorers/package.json": json.dumps(
        {"name": "scorers", "version": "1.0.0", "private": True, "dependencies": {"greetkit": "*"}}
    ),
    "scorers/greets.js": (
        "const { greets } = require('greetkit');\n"
        "module.exports = (output) => ({ pass: greets(output), reason: 'greetkit (cjs)' });\n"
    ),
    "scorers/greets.mjs": (
        "import greetkit from 'greetkit';\n"
        "export default (output) =>\n"
        "  ({ pass: greetkit.greets(output), reason: 'greetkit (esm)' });\n"
    ),
    "scorers/planted.mjs": "import pad from 'leftpad';\nexport default () => pad();\n",
    "scorers/requirements.txt": "greetkit==1.0\n",
    "scorers/greets.py": (
        "import greetkit\n\ndef get_assert(output, context):\n    return greetkit.greets(output)\n"
    ),
}
INSTALLED = {  # what `npm ci` leaves in scorers/ (the checkout's, left out of git)
    # A package in a folder above it, which the scorer's environment does not hold.
    "node_modules/leftpad/package.json": '{"name": "leftpad", "main": "index.js"}',
    "node_modules/leftpad/index.js": "module.exports = () => true;\n",
    "scorers/node_modules/greetkit/package.json": '{"name": "greetkit", "main": "index.js"}',
    "scorers/node_modules/greetkit/index.js": (
        "exports.greets = (text) => text.startsWith('Hello');\n"
    ),
}
NODE = "environment: { node: scorers/package.json }"
CASES = {
    "js-require": f"- {{ type: code, file: scorers/greets.js, {NODE} }}",
    "js-import": f"- {{ type: code, file: scorers/greets.mjs, {NODE} }}",
    "js-inline": (
        f"- {{ type: code, language: javascript, {NODE}, "
        "source: \"require('greetkit').greets(output)\" }"
    ),
    "js-planted-require": (
        f"- {{ type: code, language: javascript, {NODE}, source: \"require('leftpad')()\" }}"
    ),
    "js-planted-import": f"- {{ type: code, file: scorers/planted.mjs, {NODE} }}",
    "py-not-installed": (
        "- { type: code, file: scorers/greets.py, "
        "environment: { python: scorers/requirements.txt } }"
    ),
}


def test_on_the_command_line_a_scorer_imports_what_its_environment_installed_there_only(
    repo: GitRepo,
) -> None:
    fixtures = "".join(
        FIXTURE.format(name=name, assertions="    " + line) for name, line in CASES.items()
    )
    repo.commit(
        "scorers with packages",
        {"suite.yaml": AGENT_AND_EVAL + fixtures, "mock.yaml": MOCK, **PACKAGE},
    )
    for path, text in INSTALLED.items():
        (repo.path / path).parent.mkdir(parents=True, exist_ok=True)
        (repo.path / path).write_text(text)

    code, results, _ = run_for_results(repo.path, "--mock-script", "mock.yaml")

    found = {f["fixture"]: f["assertions"][0] for f in results["fixtures"]}
    assert {n: a["status"] for n, a in found.items()} == {
        "js-require": "pass",
        "js-import": "pass",
        "js-inline": "pass",
        "js-planted-require": "error",
        "js-planted-import": "error",
        "py-not-installed": "error",
    }, found
    assert "Cannot find module 'leftpad'" in found["js-planted-require"]["message"]
    planted = found["js-planted-import"]["message"]
    assert "leftpad is not a package of the scorer's environment" in planted, planted
    assert found["js-require"]["message"] == "greetkit (cjs)"
    assert found["js-import"]["message"] == "greetkit (esm)"
    said = found["py-not-installed"]["message"]
    assert "No module named 'greetkit'" in said, said
    assert "a scorer's environment is not built: install scorers/requirements.txt" in said, said
    assert code == 1


def test_a_scorer_imports_no_package_of_a_node_modules_its_environment_does_not_name(
    repo: GitRepo,
) -> None:
    """The checkout's node_modules is there, but the scorer names no environment: it still
    imports Node's own modules only."""
    fixture = FIXTURE.format(
        name="unnamed", assertions="    - { type: code, file: scorers/greets.mjs }"
    )
    repo.commit(
        "no environment", {"suite.yaml": AGENT_AND_EVAL + fixture, "mock.yaml": MOCK, **PACKAGE}
    )
    for path, text in INSTALLED.items():
        (repo.path / path).parent.mkdir(parents=True, exist_ok=True)
        (repo.path / path).write_text(text)
    code, results, _ = run_for_results(repo.path, "--mock-script", "mock.yaml")
    (assertion,) = results["fixtures"][0]["assertions"]
    assert assertion["status"] == "error"
    assert "may import Node's own modules only, not greetkit" in assertion["message"]
    assert code == 1


def test_a_missing_environment_file_is_refused_at_its_line(repo: GitRepo) -> None:
    fixture = FIXTURE.format(
        name="lost",
        assertions="    - type: code\n"
        "      file: scorers/greets.py\n"
        "      environment: { python: scorers/missing.txt }\n"
        "    - { type: code, file: scorers/greets.js, environment: { node: out/package.json } }",
    )
    repo.commit("a lost environment", {"suite.yaml": AGENT_AND_EVAL + fixture, **PACKAGE})
    (repo.path / "out").symlink_to("/etc")
    done = evalward("validate", ".", cwd=repo.path)
    assert done.returncode == 2, done.stdout + done.stderr
    said = done.stdout + done.stderr
    assert (
        "suite.yaml:24:22: spec.assertions[0].environment.python: the scorer's environment "
        "file 'scorers/missing.txt' is not in the repository" in said
    ), said
    assert (
        "suite.yaml:25:61: spec.assertions[1].environment.node:" in said
        and "'out/package.json' leads outside the repository" in said
    )
    assert "Traceback" not in said


def test_a_change_to_a_scorers_environment_file_runs_its_fixture_again(repo: GitRepo) -> None:
    """The environment's files are part of the fixture's cache key, its lock files too."""
    fixture = FIXTURE.format(
        name="keyed",
        assertions="    - type: code\n"
        "      language: python\n"
        "      source: 'True'\n"
        "      environment: { python: scorers/pyproject.toml }",
    )
    project = '[project]\nname = "scorers"\nversion = "0.1.0"\ndependencies = []\n'
    repo.commit("a scorer with a project", {
        "suite.yaml": AGENT_AND_EVAL + fixture, "mock.yaml": MOCK,
        "scorers/pyproject.toml": project, "scorers/uv.lock": "version = 1\n",
    })  # fmt: skip

    def cached() -> bool:
        done = evalward("run", ".", "--mock-script", "mock.yaml", "--json", cwd=repo.path)
        assert done.returncode == 0, done.stderr
        (result,) = json.loads(done.stdout)["fixtures"]
        return bool(result["cached"])

    assert (cached(), cached()) == (False, True)
    repo.commit("relock", {"scorers/uv.lock": "version = 1\nrevision = 3\n"})
    assert cached() is False
