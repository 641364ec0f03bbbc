"""A gate an error stops keeps what it computed, says why in the pull request, and still
honours the bypass label.

Adaptive reps run the head first and the base only once the head's runs ask for it: a
problem of the base side's (here, an agent whose `environment.node` the machine cannot build)
is found rounds into the run. The runs already done are written and reported, the comment
names the problem, the exit code is the problem's; a maintainer's `force-eval-bypass` lets
the pull request through, and the audit record names the error it bypassed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub, FakePull
from support.actionrun import ActionRun, pull_request_event, run_action
from support.agentenv import needs_root, node_package
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

LABEL = "force-eval-bypass"

SUITE = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: dep-agent-eval }
spec:
  targetAgent: dep-agent
  fixtures: [imports]
  execution: { reps: { min: 2, max: 8 } }
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: imports }
spec:
  targetAgent: dep-agent
  input: { type: prompt, payload: { prompt: hi } }
  assertions:
    - { type: contains, value: PASS }
"""
DECLARATIVE = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: dep-agent }
spec:
  models: [openai/gpt-4.1-mini]
  system: Answer.
"""
MOCK = json.dumps({"replies": [{"match": {"side": "head"}, "turns": [{"content": "FAIL"}]}]})


def _pull_request(repo: GitRepo, github: FakeGitHub, base_files: dict[str, str]) -> tuple[str, str]:
    base = repo.commit("the agent", {**base_files, ".gitignore": ".evalward/\n"})
    repo.branch("feature")
    head = repo.commit("declarative now", {"agents/dep-agent.yaml": DECLARATIVE})
    github.add_pull(FakePull(number=5, head_sha=head, base_sha=base))
    return base, head


def _gate(
    repo: GitRepo, github: FakeGitHub, tools: Path, base: str, head: str, *, label: bool
) -> ActionRun:
    event = pull_request_event(
        github.repository,
        5,
        base,
        head,
        labels=[LABEL] if label else [],
        action="labeled" if label else "synchronize",
        label=LABEL if label else None,
        sender="maintainer",
    )
    return run_action(
        repo.path,
        github,
        event,
        inputs={"mock-script": "evals/mock.yaml", "output-dir": ".evalward/out"},
        env={"PATH": str(tools)},
    )


@pytest.fixture
def no_node(tmp_path: Path) -> Path:
    """A PATH with git and no Node.js: the action's Python-only image."""
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "git").symlink_to(shutil.which("git") or "/usr/bin/git")
    return tools


@needs_root
def test_a_problem_found_rounds_into_the_run_keeps_the_runs_and_is_said_in_the_comment(
    repo: GitRepo, github: FakeGitHub, no_node: Path
) -> None:
    files = {**node_package("2.1.2"), "evals/suite.yaml": SUITE, "evals/mock.yaml": MOCK}
    base, head = _pull_request(repo, github, files)

    run = _gate(repo, github, no_node, base, head, label=False)

    assert run.returncode == 2, run.stdout + run.stderr  # a configuration problem
    assert "environment.node" in run.stderr and "Traceback" not in run.stderr
    results = json.loads((repo.path / ".evalward/out/results.json").read_text())
    ran = [(f["side"], f["status"]) for f in results["fixtures"]]
    assert len(ran) >= 2 and set(ran) == {("head", "fail")}, ran  # the rounds before the base's
    assert results["result"] == "incomplete"
    stopped = f"stopped by an error after {len(ran)} of "
    assert results["reason"].startswith(stopped), results["reason"]
    comment = github.comments_on(5)[0]["body"]
    assert stopped in comment and "environment.node" in comment
    assert "dep-agent-eval" in comment  # the runs that finished are shown


@needs_root
def test_the_bypass_label_lets_a_stopped_gate_through_and_the_audit_names_the_error(
    repo: GitRepo, github: FakeGitHub, no_node: Path
) -> None:
    files = {**node_package("2.1.2"), "evals/suite.yaml": SUITE, "evals/mock.yaml": MOCK}
    base, head = _pull_request(repo, github, files)
    github.permissions["maintainer"] = "maintain"
    github.add_label(5, LABEL, actor="maintainer")

    run = _gate(repo, github, no_node, base, head, label=True)

    assert run.returncode == 0, run.stdout + run.stderr
    assert run.outputs["result"] == "bypassed"
    record = json.loads(run.outputs["audit"])
    assert record["outcome"] == "honoured" and record["actor"] == "maintainer"
    assert "environment.node" in record["error"]
    audit = (repo.path / ".evalward/out/audit.jsonl").read_text().splitlines()
    assert json.loads(audit[-1])["error"] == record["error"]
    assert "Bypassed" in github.comments_on(5)[0]["body"]


@needs_root
def test_the_bypass_label_lets_through_a_pull_request_whose_base_does_not_load(
    repo: GitRepo, github: FakeGitHub, no_node: Path
) -> None:
    """The base branch's definitions are broken, so nothing can gate; the pull request that
    mends them can only be merged by the bypass, which is audited with the problem."""
    broken = SUITE.replace("  fixtures: [imports]\n", "  fixtures: [imports]\n  colour: red\n")
    files = {"agents/dep-agent.yaml": DECLARATIVE, "evals/suite.yaml": broken}
    base = repo.commit(
        "a broken Eval", {**files, "evals/mock.yaml": MOCK, ".gitignore": ".evalward/\n"}
    )
    repo.branch("feature")
    head = repo.commit("mended", {"evals/suite.yaml": SUITE})
    github.add_pull(FakePull(number=5, head_sha=head, base_sha=base))

    refused = _gate(repo, github, no_node, base, head, label=False)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "do not load" in github.comments_on(5)[0]["body"]

    github.permissions["maintainer"] = "write"
    github.add_label(5, LABEL, actor="maintainer")
    run = _gate(repo, github, no_node, base, head, label=True)

    assert run.returncode == 0, run.stdout + run.stderr
    assert run.outputs["result"] == "bypassed"
    record = json.loads(run.outputs["audit"])
    assert record["outcome"] == "honoured"
    assert "evals/suite.yaml:7" in record["error"] and "colour" in record["error"]
