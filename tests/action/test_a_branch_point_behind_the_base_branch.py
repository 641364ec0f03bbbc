"""A pull request that branches off an old commit of the base branch, whose agent the base
branch has changed since, to have what that old agent did or cost excuse the fixture it
breaks.

The base side runs the merge base's agent, so two things read that agent: the default
branch's records of which fixtures flip (flaky on main) and the budget's estimate of the
base's own runs (whether they fit even alone, which `allow-incomplete` excuses). A branch
point where main's agent was flaky on the fixture, or far costlier, would choose them. Where
the base branch changed the agent since (its definition or a file it reads), neither is
given; where it did not, or the pull request is rebased, both are as before. Each pull
request runs as the runner runs the action: a real repository, the fake GitHub API and the
scripted model server.
"""

from __future__ import annotations

import json

import pytest

from action.test_github_events import real_payload
from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer
from support.actionrun import ActionRun, pull_request_event, run_action
from support.answered import ADAPTIVE_EVAL, FIXTURE, scripted
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile


def gate(
    repo: GitRepo, github: FakeGitHub, base: str, head: str, env: dict[str, str], **inputs: str
) -> ActionRun:
    """Pull request 7 from `head` into the base branch at `base`, gated by the action."""
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    event = pull_request_event(github.repository, 7, base, head)
    return run_action(repo.path, github, event, env=env, inputs=inputs)


def comment(github: FakeGitHub) -> str:
    (only,) = github.comments_on(7)
    return str(only["body"])


def branched_off(repo: GitRepo, commit: str, files: dict[str, str]) -> str:
    """A pull request's branch from `commit`, with `files` committed on it: its head."""
    repo.checkout(commit)
    repo.branch("feature")
    return repo.commit("a new prompt", files)


# --- flaky on main --------------------------------------------------------------------------

NAMES = ["f0", "f1", "f2", "f3"]

READING = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: helper }
spec:
  models: [openai/gpt-4.1-mini]
  systemFile: prompt.md
"""
"""The helper with its prompt in `prompt.md`: main fixes it there, its definition unchanged."""


def prompt(version: str) -> str:
    return f"You are a helper ({version}). Answer in one sentence.\n"


def flaky_then(repo: GitRepo, github: FakeGitHub, env: dict[str, str], tip: dict[str, str]) -> str:
    """Main's helper at v1 flips on f1 across two push runs (recorded as flaky on main), then
    main commits `tip`: the base branch's tip. Returns the old commit."""
    old = repo.commit(
        "suite",
        {
            "agent.yaml": READING,
            "prompt.md": prompt("v1"),
            "eval.yaml": ADAPTIVE_EVAL,
            "fixtures.yaml": "---\n".join(FIXTURE.format(name=name) for name in NAMES),
            ".gitignore": ".evalward/\n",
        },
    )
    for _ in range(2):
        pushed = run_action(
            repo.path,
            github,
            {**real_payload("push"), "ref": "refs/heads/master", "after": old},
            env=env,
            event_name="push",
        )
        assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    log = json.loads((repo.path / ".evalward/cache/fixture-runs/helper-eval.json").read_text())
    f1 = [record["fixtures"]["f1"] for record in log["records"]]
    assert len(f1) == 2 and all(0 < passes < runs for passes, runs in f1)
    repo.commit("main moves on", tip)
    return old


def script_flaky(model: ScriptedModelServer) -> None:
    """v1 (main's old prompt) is right on f1 every other time, v3 (main's prompt now) always;
    v2 (the pull request's) never."""
    right = {name: [True] * 40 for name in NAMES}
    scripted(model, "v1", {**right, "f1": [True, False] * 20})
    scripted(model, "v3", right)
    scripted(model, "v2", {**right, "f1": [False] * 40})


def f1_call(run: ActionRun) -> dict[str, object]:
    """f1's sequential verdict on the head."""
    (result,) = [e for e in run.results()["evals"] if e["side"] == "head"]
    (call,) = [f for f in result["sequential"]["fixtures"] if f["fixture"] == "f1"]
    return dict(call)


def test_a_fixture_flaky_with_a_prompt_main_has_since_fixed_blocks(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Main fixed the prompt (v3) after its flaky records of v1. The pull request branches off
    the old commit and breaks f1: the records of v1 do not make f1 flaky on main, so it
    blocks, and the comment says why and that rebasing compares with main's agent."""
    script_flaky(model)
    old = flaky_then(repo, github, env, {"prompt.md": prompt("v3")})
    tip = repo.head()
    head = branched_off(repo, old, {"prompt.md": prompt("v2")})

    run = gate(repo, github, tip, head, env)

    assert run.returncode == 1, run.stdout + run.stderr
    call = f1_call(run)
    assert call["blocks"] is True and call["flaky_on_main"] is None
    body = comment(github)
    assert "flaky on main (" not in body
    assert (
        "helper-eval: the base branch has changed agent helper since the pull request "
        "branched off, so what the default branch recorded of the agent as it was then does "
        "not make f1 flaky on main; rebased onto the base branch, the pull request is "
        "compared with its agent as it is now"
    ) in body


@pytest.mark.parametrize("rebased", [False, True])
def test_control_a_base_branch_that_left_the_agent_alone_still_calls_it_flaky(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    rebased: bool,
) -> None:
    """Main moved on without touching the agent or what it reads: branched off the old
    commit or rebased onto main, the pull request's f1 is flaky on main and does not block
    alone."""
    script_flaky(model)
    old = flaky_then(repo, github, env, {"README.md": "The helper.\n"})
    tip = repo.head()
    head = branched_off(repo, tip if rebased else old, {"prompt.md": prompt("v2")})

    run = gate(repo, github, tip, head, env)

    assert run.returncode == 0, run.stdout + run.stderr
    call = f1_call(run)
    assert call["blocks"] is False and call["flaky_on_main"] is not None
    assert "has changed agent helper" not in comment(github)
