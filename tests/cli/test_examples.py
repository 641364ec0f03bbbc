"""The examples as a user runs them: `make demo`'s command, `evalward calibrate`, and the
action on a pull request of a repository made of them, checked out as another user."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub, FakePull
from support.actionrun import pull_request_event, run_action
from support.clirun import DEMO_PATH, evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[2]
MOCK = "examples/mock-replies.yaml"
NOBODY = 65534


def example_evals() -> set[str]:
    """Every Eval defined under examples/, found by reading the YAML, not by evalward; but
    examples/frameworks/ and examples/airline/, repositories of their own (tests/frameworks
    and bench/airline.py gate them)."""
    found = set()
    own_roots = [REPO_ROOT / "examples" / "frameworks", REPO_ROOT / "examples" / "airline"]
    for path in (REPO_ROOT / "examples").rglob("*.yaml"):
        if any(path.is_relative_to(root) for root in own_roots):
            continue
        for line_number, line in enumerate(lines := path.read_text().splitlines()):
            if line.strip() == "kind: Eval":
                following = lines[line_number + 1 : line_number + 4]
                names = [x.split(":", 1)[1].strip() for x in following if "name:" in x]
                found.add(names[0])
    return found


def test_every_example_passes_through_the_cli_with_the_mock_provider(tmp_path: Path) -> None:
    done = evalward(
        "run", ".", "--mock-script", MOCK, "--no-cache", "--output-dir", str(tmp_path),
        PATH=DEMO_PATH,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "every affected Eval passes" in done.stdout
    results = json.loads((tmp_path / "results.json").read_text())
    evals = {e["eval"]: e for e in results["evals"]}
    assert (
        set(evals)
        == example_evals()
        == {
            "support-bot-eval",
            "math-tutor-eval",
            "order-agent-eval",
            "calculator-eval",
            "refund-desk-eval",
            "order-desk-eval",
            "order-desk-service-eval",
        }
    )
    for result in results["fixtures"]:
        statuses = {a["type"]: a["status"] for a in result["assertions"]}
        assert result["status"] == "pass", (result["fixture"], statuses, result["message"])
        assert not any(a["advisory"] for a in result["assertions"]), result["fixture"]
    # the support bot's judge gates because its calibration agrees with the human labels
    support = [f for f in results["fixtures"] if f["eval"] == "support-bot-eval"]
    assert {f["fixture"] for f in support} == {
        "refund-must-clarify",
        "refund-ticket-recorded",
        "refund-without-order-number",
        "order-status",
        "refund-conversation",
    }
    # the simulated customer gave the reason only when asked, and ended the conversation
    talk = next(f for f in support if f["fixture"] == "refund-conversation")
    assert talk["end_reason"] == "user done" and talk["turns"] == 2
    said = [s["content"] for s in talk["trace"]["steps"] if s["type"] == "input"]
    assert said == [
        "Hi, I'd like a refund please.",
        "Order 12345. The blender arrived with a cracked jug.",
    ]
    judged = [a["judge"] for f in support for a in f["assertions"] if a["type"] == "judge"]
    assert judged and all(j["agreement"] == 1.0 for j in judged)
    # the one violation the mock judge reports cites a step that holds its quote
    violations = [v for j in judged for v in j["violations"]]
    # adaptive reps: every fixture passes its one rep, which settles it; no second
    assert {f["rep"] for f in support} == {0}
    assert [(v["rule"], v["supported"]) for v in violations] == [("no_refund_promises", True)]
    # seed 004's AgentV file became fixtures of the calculator's Eval
    assert evals["calculator-eval"]["total"] == 2


def test_the_support_bot_judge_calibration_replays_as_calibrated() -> None:
    done = evalward("calibrate", "support-bot-judge", ".", "--mock-script", MOCK)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "phase: Calibrated" in done.stdout
    assert "anthropic/claude-sonnet-4-6" in done.stdout


def test_the_side_effecting_tools_are_refused_when_a_fixture_does_not_shadow_them(
    tmp_path: Path,
) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(REPO_ROOT / "examples", copy / "examples")
    shutil.copy(REPO_ROOT / "evalward.yaml", copy / "evalward.yaml")
    fixture = copy / "examples/support-bot/evals/fixtures/refund-must-clarify.yaml"
    fixture.write_text(
        fixture.read_text().replace("  shadowTools: [create_jira_ticket, send_email]", "")
    )
    done = evalward("run", ".", "--mock-script", MOCK, "--no-cache", cwd=copy)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "would run the side-effecting tool 'create_jira_ticket'" in done.stderr


def as_another_user(path: Path) -> dict[str, str]:
    """Make `path` look owned by someone else, as GitHub's workspace does in the container:
    really (chown to nobody) when we are root, else through git's own test switch."""
    if os.geteuid() == 0:
        for item in [path, *path.rglob("*")]:
            os.lchown(item, NOBODY, NOBODY)
        return {}
    return {"GIT_TEST_ASSUME_DIFFERENT_OWNER": "1"}


def test_the_action_gates_a_pr_of_the_examples_in_a_workspace_owned_by_another_user(
    repo: GitRepo, github: FakeGitHub
) -> None:
    shutil.copytree(REPO_ROOT / "examples", repo.path / "examples")
    shutil.copy(REPO_ROOT / "evalward.yaml", repo.path / "evalward.yaml")
    base = repo.commit("examples")
    repo.branch("feature")
    agent = repo.path / "examples/support-bot/agents/support-bot.yaml"
    agent.write_text(agent.read_text().replace("You are Jane", "You are Jane, friendly and"))
    head = repo.commit("a friendlier prompt")
    github.add_pull(FakePull(number=3, head_sha=head, base_sha=base))
    env = as_another_user(repo.path)

    # without safe.directory, git refuses the repository: the setting under test matters
    refused = subprocess.run(
        ["git", "-C", str(repo.path), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        env={**os.environ, **env, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo.path.parent)},
    )
    assert refused.returncode != 0 and "dubious ownership" in refused.stderr

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 3, base, head),
        inputs={"mock-script": MOCK},
        env=env,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "dubious ownership" not in run.stderr
    results = run.results()
    assert list(results["changedAgents"]) == ["support-bot"]
    sides = {(e["eval"], e["side"]) for e in results["evals"]}
    # the Eval's pairwise judge reads each fixture's base run beside its head run: both
    # sides run, once each while the judge calls them alike
    assert sides == {("support-bot-eval", "head"), ("support-bot-eval", "base")}
    runs = [(f["side"], f["fixture"]) for f in results["fixtures"]]
    assert sorted(runs) == sorted(set(runs))  # one rep a side: nothing left open
    assert run.outputs["result"] == "pass"
    [comment] = github.comments.values()
    assert "support-bot-eval" in comment["body"]


@pytest.mark.parametrize("name", ["README.md"])
def test_examples_index_names_every_example_folder(name: str) -> None:
    index = (REPO_ROOT / "examples" / name).read_text()
    for folder in sorted(
        p.name
        for p in (REPO_ROOT / "examples").iterdir()
        if p.is_dir() and not p.name.startswith(".")
    ):
        assert f"{folder}/" in index, f"examples/{name} does not mention {folder}/"
