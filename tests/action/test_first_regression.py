"""A pull request that really regresses, with the defaults, through the command line and the
action: the moment the product exists for.

The getting-started path (`evalward init`, then a pull request whose agent answers worse) and
a matrix: every kind of agent and playground that reads files from its commit (a system
prompt file, command tools, a command agent, an http agent, a files, SQLite and service
playground, a code scorer from a file, an agent `environment`) × fixed and adaptive reps ×
each outcome a fixture can have (head fixes it, head regresses, both fail, a flaky base). Under
adaptive reps the base runs only once the head's runs ask for it, rounds later: every base run
must still find its commit's files, whenever it starts. Attribution, on by default, builds
and runs a variant of each kind of agent from a commit of its own after the decision.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from fakes.github_api import FakeGitHub, FakePull
from support.actionrun import ActionRun, pull_request_event, run_action
from support.agentenv import needs_root
from support.byoagent import agent_python
from support.clirun import evalward
from support.gitrepo import GitRepo
from support.jsonserver import READY, json_server

pytestmark = pytest.mark.e2e

PYTHON, ISOLATION = agent_python()

FEATURES = (
    "prompted",
    "tooled",
    "program",
    "served",
    "files",
    "sqlite",
    "service",
    "scored",
    "packaged",
)
CELLS = ("fixed", "regress", "failing", "flaky")
"""What each Eval's four fixtures do: the head fixes a failing base; the head regresses a
passing base; both fail; a flaky base (2 of 3) and a head that passes."""

COMMAND_AGENT = """\
import json, os, sys, urllib.request
json.loads(sys.stdin.readline())
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
    data=json.dumps(
        {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "go"}]}
    ).encode(),
    headers={"authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
             "content-type": "application/json"},
)
reply = json.load(urllib.request.urlopen(request))
answer = reply["choices"][0]["message"]["content"] + " VERSION"
print(json.dumps({"type": "final", "content": answer}))
"""

HTTP_AGENT = json_server(
    READY
    + """\
    def do_POST(self):
        asked = json.loads(self.rfile.read(int(self.headers["content-length"])))
        proxy = asked["modelProxy"]
        request = urllib.request.Request(
            proxy["openaiBaseUrl"].rstrip("/") + "/chat/completions",
            data=json.dumps({"model": "gpt-4.1-mini",
                             "messages": [{"role": "user", "content": "go"}]}).encode(),
            headers={"authorization": "Bearer " + proxy["apiKey"],
                     "content-type": "application/json"},
        )
        reply = json.load(urllib.request.urlopen(request))
        self.reply({"final": reply["choices"][0]["message"]["content"] + " VERSION"})
""",
    preamble="import json, sys, urllib.request\n",
)

ECHO_TOOL = """\
import json, sys
json.load(sys.stdin)
print(json.dumps({"echo": "VERSION"}))
"""

SERVICE = json_server(
    """\
    def do_GET(self):
        self.reply({"alive": True})
""",
)

SCORER = """\
def get_assert(output, context):
    return 1.0 if "PASS" in output else 0.0
"""


def _agent(name: str, spec: str) -> str:
    return f"apiVersion: evalward.dev/v1\nkind: Agent\nmetadata: {{ name: {name} }}\nspec:\n{spec}"


def _agents(version: str) -> dict[str, str]:
    """Each feature's agent and the files it reads; `version` is in every file the head
    changes, so each agent is changed by the pull request."""
    tool = f"  tools:\n    - {{ name: echo, command: [{PYTHON}, tools/echo.py] }}\n"
    tool += "  watch: [tools/**]\n"
    declarative = f"  models: [openai/gpt-4.1-mini]\n  system: Answer. ({version})\n"
    return {
        "agents/prompted.yaml": _agent(
            "prompted", "  models: [openai/gpt-4.1-mini]\n  systemFile: prompts/prompted.md\n"
        ),
        "prompts/prompted.md": f"Answer the question. ({version})\n",
        "agents/tooled.yaml": _agent("tooled", declarative + tool),
        "tools/echo.py": ECHO_TOOL.replace("VERSION", version),
        "agents/program.yaml": _agent(
            "program",
            f"  runtime: {{ command: {{ run: [{PYTHON}, program/main.py] }} }}\n"
            "  watch: [program/**]\n",
        ),
        "program/main.py": COMMAND_AGENT.replace("VERSION", version),
        "agents/served.yaml": _agent(
            "served",
            "  runtime:\n    http:\n"
            f'      start: [{PYTHON}, served/server.py, "{{port}}"]\n'
            "      ready: http://127.0.0.1:{port}/health\n"
            "      url: http://127.0.0.1:{port}/run\n"
            "  watch: [served/**]\n",
        ),
        "served/server.py": HTTP_AGENT.replace("VERSION", version),
        **{
            f"agents/{name}.yaml": _agent(name, declarative)
            for name in ("files", "sqlite", "service", "scored")
        },
        "agents/packaged.yaml": _agent(
            "packaged",
            "  runtime: { command: { run: [python3, packaged/main.py] } }\n"
            "  environment: { python: packaged/requirements.txt }\n"
            "  watch: [packaged/**]\n",
        ),
        "packaged/main.py": COMMAND_AGENT.replace("VERSION", version),
        "packaged/requirements.txt": f"# nothing to install ({version})\n",
    }


PLAYGROUNDS = {
    "files": "  playground: { files: { seed: world/files } }\n",
    "sqlite": "  playground: { sqlite: { seed: world/seed.sql } }\n",
    "service": f'  playground: {{ service: {{ start: [{PYTHON}, world/service.py, "{{port}}"], '
    "ready: /health } }\n",
}
CHECKS = {
    "files": "    - { type: fileState, path: greeting.txt, contains: hello }\n",
    "sqlite": "    - { type: sql, query: 'SELECT name FROM items', rows: [[widget]] }\n",
    "service": "    - { type: stateValue, at: service.alive, equals: true }\n",
    "scored": "    - { type: code, file: scorers/check.py }\n",
}


def _suite(reps: str) -> str:
    """An Eval per feature, with a fixture per cell."""
    docs = []
    for feature in FEATURES:
        docs.append(
            "apiVersion: evalward.dev/v1\nkind: Eval\n"
            f"metadata: {{ name: {feature}-eval }}\nspec:\n  targetAgent: {feature}\n"
            f"  fixtureSelector: {{ matchLabels: {{ agent: {feature} }} }}\n"
            f"  execution: {reps}\n" + PLAYGROUNDS.get(feature, "")
        )
        for cell in CELLS:
            docs.append(
                "apiVersion: evalward.dev/v1\nkind: EvalFixture\n"
                f"metadata: {{ name: {feature}-{cell}, labels: {{ agent: {feature} }} }}\n"
                f"spec:\n  targetAgent: {feature}\n"
                "  input: { type: prompt, payload: { prompt: go } }\n"
                "  assertions:\n    - { type: contains, value: PASS }\n" + CHECKS.get(feature, "")
            )
    return "---\n".join(docs)


def _mock() -> str:
    """What the model answers each fixture, by side (and, for the flaky base, by rep)."""
    answers = {
        "fixed": ("FAIL", "PASS"),
        "regress": ("PASS", "FAIL"),
        "failing": ("FAIL", "FAIL"),
        "flaky": (None, "PASS"),
    }
    replies: list[dict[str, Any]] = []
    for feature in FEATURES:
        for cell, (base, head) in answers.items():
            for side, word in (("base", base), ("head", head)):
                match = {"fixture": f"{feature}-{cell}", "side": side}

                def turns(said: str) -> list[dict[str, Any]]:
                    final = {"content": said}
                    call = {"toolCalls": [{"name": "echo", "arguments": {}}]}
                    return [call, final] if feature == "tooled" else [final]  # noqa: B023

                if word is None:  # 2 of 3 reps pass, then again
                    reps = [{"turns": turns(w)} for w in ("PASS", "PASS", "FAIL")]
                    replies.append({"match": match, "reps": reps})
                else:
                    replies.append({"match": match, "turns": turns(word)})
    return json.dumps({"replies": replies})


def _repository(repo: GitRepo, reps: str) -> tuple[str, str]:
    files = {
        **_agents("v1"),
        "evals/suite.yaml": _suite(reps),
        "evals/mock.yaml": _mock(),
        "world/files/greeting.txt": "hello\n",
        "world/seed.sql": "CREATE TABLE items (name TEXT); INSERT INTO items VALUES ('widget');\n",
        "world/service.py": SERVICE,
        "scorers/check.py": SCORER,
        ".gitignore": ".evalward/\nout/\n",
    }
    base = repo.commit("the agents", files)
    repo.branch("feature")
    changed = {path: text for path, text in _agents("v2").items() if text != files[path]}
    head = repo.commit("every agent changes", changed)
    return base, head


MODES = {
    "fixed reps": "{ repsPerFixture: 3 }",
    "adaptive reps": "{ reps: { min: 2, max: 8 } }",
}


def _check(results: dict[str, Any], comment: str, mode: str) -> None:
    """Every cell's verdict, every run ran its feature: results written, the right words."""
    assert results["result"] == "fail", results["reason"]
    for run in results["fixtures"]:
        steps = run["trace"]["steps"]
        errors = [s["content"] for s in steps if s["type"] == "error"]
        assert run["status"] != "error" and not errors, (run["side"], run["fixture"], errors)
        if run["fixture"].startswith("tooled-"):
            echoed = [s["output"] for s in steps if s["type"] == "tool_result"]
            version = "v1" if run["side"] == "base" else "v2"
            assert echoed == [json.dumps({"echo": version})], (run["side"], echoed)
        if run["fixture"].startswith(("program-", "served-", "packaged-")):
            version = "v1" if run["side"] == "base" else "v2"
            assert run["output"].endswith(version), (run["side"], run["output"])
    sides = {(r["fixture"], r["side"]) for r in results["fixtures"]}
    for feature in FEATURES:
        # a regression is always compared with the base, whichever round asked for it
        assert (f"{feature}-regress", "base") in sides
        if mode == "fixed reps":
            reason = results["reason"]
            assert f"{feature}-regress (base 3/3 → head 0/3)" in reason, reason
            assert f"{feature}-failing (base 0/3 → head 0/3)" in reason, reason
            assert f"{feature}-flaky" not in reason and f"{feature}-fixed (" not in reason
            assert f"{feature}-eval / {feature}-fixed" in comment.split("### ✅ Fixed")[1]
        else:
            verdicts = {
                f["fixture"]: f["verdict"]
                for e in results["evals"]
                if e["eval"] == f"{feature}-eval" and e["side"] == "head"
                for f in e["sequential"]["fixtures"]
            }
            assert verdicts[f"{feature}-regress"] == "regression", verdicts
            assert verdicts[f"{feature}-failing"] == "still failing", verdicts
            assert verdicts[f"{feature}-fixed"] in ("stable", "improvement"), verdicts
            assert verdicts[f"{feature}-flaky"] in ("stable", "noise"), verdicts
    assert results["summary"]["counts"]["regressions"] == len(FEATURES), results["summary"]
    assert f"{len(FEATURES)} regressions" in comment
    # Attribution, on by default, built and ran variants of every kind of agent from their
    # commits within its budget; the mock answers by side, so no hunk is the cause, and it
    # says so for each regression its budget reached.
    attribution = results["attribution"]
    assert attribution["spentModelCalls"] <= attribution["budgetModelCalls"], attribution
    found = {r["eval"]: r for r in attribution["regressions"]}
    assert sorted(found) == sorted(f"{feature}-eval" for feature in FEATURES), found
    left_out = "the budget ran out during its runs"
    for name, regression in found.items():
        for trial in regression["trials"]:
            assert trial["regressed"] or trial["notBuilt"] == left_out, (name, trial)
        reason = regression["reason"]
        assert reason.endswith("it is not in these hunks") or "budget" in reason, (name, reason)
    concluded = [n for n, r in found.items() if r["reason"].endswith("not in these hunks")]
    # fixed reps: the budget (half of 240 calls) holds every search; adaptive reps spend
    # fewer, and the budget stops the last
    assert len(concluded) == len(FEATURES) if mode == "fixed reps" else concluded, found


@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_command_line_finds_every_regression(tmp_path: Path, mode: str) -> None:
    repo = GitRepo(tmp_path / "repo")
    _repository(repo, MODES[mode])
    out = tmp_path / "out"
    done = evalward(
        "run",
        "--base",
        "main",
        "--no-cache",
        "--no-history",
        "--mock-script",
        "evals/mock.yaml",
        "--output-dir",
        str(out),
        cwd=repo.path,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    _check(json.loads((out / "results.json").read_text()), (out / "comment.md").read_text(), mode)


@needs_root
@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_action_finds_every_regression(tmp_path: Path, github: FakeGitHub, mode: str) -> None:
    root = tmp_path / "open"
    root.mkdir()
    root.chmod(0o755)  # the agent users pass through to the workspace, as on a runner
    repo = GitRepo(root / "workspace")
    base, head = _repository(repo, MODES[mode])
    github.add_pull(FakePull(number=5, head_sha=head, base_sha=base))
    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 5, base, head),
        inputs={
            "mock-script": "evals/mock.yaml",
            "agent-isolation": ISOLATION,
            "output-dir": ".evalward/out",
            "cache": "off",
        },
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    results = json.loads((repo.path / ".evalward/out/results.json").read_text())
    _check(results, github.comments_on(5)[0]["body"], mode)


INIT_REGRESSION = {
    "match": {"agent": "assistant", "fixture": "assistant-order-status", "system": "be brief"},
    "turns": [{"content": "It will arrive tomorrow."}],
}
"""The worse answer, where the prompt says what the pull request's edit makes it say: the
head's, and attribution's variant that keeps the edit, not the base's."""


def _started(path: Path) -> tuple[GitRepo, str, str]:
    """`evalward init` in a new repository, committed with a mock script under which a
    prompt that says "be brief" answers one fixture worse (the action reads it from the base
    branch); then a pull request that edits the prompt to say so."""
    repo = GitRepo(path)
    done = evalward("init", cwd=repo.path)
    assert done.returncode == 0, done.stderr
    mock = repo.path / "evals" / "mock-replies.yaml"
    marker = "  - match: { agent: assistant, fixture: assistant-order-status }"
    mock.write_text(mock.read_text().replace(marker, _flow(INIT_REGRESSION) + "\n" + marker))
    base = repo.commit("evalward init")
    repo.branch("terser")
    prompt = repo.path / "prompts" / "assistant.md"
    prompt.write_text(prompt.read_text().replace("never invent a delivery date", "be brief"))
    head = repo.commit("a terser assistant")
    return repo, base, head


def _flow(entry: dict[str, Any]) -> str:
    return "  - " + json.dumps(entry)


def _names_the_regression(comment: str) -> None:
    assert re.search(r"Blocked: .*1 regression", comment), comment
    assert "assistant-eval / assistant-order-status" in comment
    # and where: the prompt's edited line (its second), proven by the gate's own runs
    said = r"`prompts/assistant\.md:2`\]?(\([^)]*#L2\))? — taken back, assistant-order-status"
    assert re.search(said, comment), comment  # a link to the line where the repository is known


def test_getting_started_a_regressing_pull_request_is_blocked_on_the_command_line(
    tmp_path: Path,
) -> None:
    repo, _, _ = _started(tmp_path / "repo")
    done = evalward(
        "run", "--base", "main", "--mock-script", "evals/mock-replies.yaml", cwd=repo.path
    )
    assert done.returncode == 1, done.stdout + done.stderr
    _names_the_regression(done.stdout)


def test_getting_started_a_regressing_pull_request_is_blocked_by_the_action(
    tmp_path: Path, github: FakeGitHub
) -> None:
    repo, base, head = _started(tmp_path / "repo")
    github.add_pull(FakePull(number=9, head_sha=head, base_sha=base))
    run: ActionRun = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 9, base, head),
        inputs={"mock-script": "evals/mock-replies.yaml", "output-dir": ".evalward/out"},
        env={"PATH": os.environ["PATH"]},
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    _names_the_regression(github.comments_on(9)[0]["body"])
    # The log says what asked for each round's runs: the failing fixture's open test, and
    # the pairwise judge, which pairs each head run with a base run.
    assert re.search(
        r"evalward: \d+ more runs?, \d+ in all: \d+ where outcomes are open \(adaptive reps\); "
        r"\d+ that the pairwise judge's open tests ask for\n",
        run.stdout,
    ), run.stdout
    assert (repo.path / ".evalward/out/results.json").is_file()
