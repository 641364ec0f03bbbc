"""A drop only an Eval's pooled sequential test sees, traced to the line of the change that made
it: no one fixture regressed, so each variant runs every fixture that drove the pooled test and
is read by that test over its runs of them, as the gate read the head's. Through the action,
against the fake GitHub API, with a mock script that answers by what the system prompt says.

The change is two blocks of the agent's system prompt: one that only rewords (line 8), one that
makes the agent guess (line 10), which fails a rep of a fixture now and then, as `DROP` does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from action.test_adaptive_story import DROP, EVAL, NAMES
from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import Rule, ScriptedModelServer, error, text
from support.actionrun import ActionRun, pull_request_event, run_action
from support.answered import FIXTURE
from support.clirun import evalward
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.e2e

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: helper }}
spec:
  models: [openai/gpt-4.1-mini]
  system: |
    You are a helper.
    {tone}
    Answer in one sentence.
    {care}
"""
GUESS = "When unsure, guess."
DRIVERS = ["f0", "f1", "f2", "f3", "f4", "f8", "f9"]
"""The fixtures `DROP` fails a rep of: what drives its pooled test."""


def mock() -> str:
    """`DROP`'s reps where the system prompt says to guess, the right answer elsewhere. No
    entry answers by `side` (as `test_adaptive_story.mock`'s do): a script that does keys the
    result cache by side, and the one-block proof reads the base's runs from it."""
    lines = ["replies:"]
    for name, pattern in DROP.items():
        lines += [
            f'  - match: {{ agent: helper, fixture: {name}, system: "{GUESS}" }}',
            "    reps:",
        ]
        for answer in pattern:
            said = "the answer" if answer == "P" else "no idea"
            lines.append(f'      - turns: [{{ content: "{said}" }}]')
    lines += ["  - match: { agent: helper }", '    always: { content: "the answer" }']
    return "\n".join(lines) + "\n"


def commit_change(
    repo: GitRepo, config: str = "", tone: str = "Be warm and kind."
) -> tuple[str, str]:
    """main: the agent, its suite, the mock script and `config` (its evalward.yaml); the
    branch adds the guess to one block of the prompt and writes `tone` in another
    (rewording it, by default). The base's commit and the head's."""
    base = repo.commit(
        "the helper",
        {
            "agent.yaml": AGENT.format(tone="Be kind.", care="Check your facts."),
            "eval.yaml": EVAL,
            "fixtures.yaml": "---\n".join(FIXTURE.format(name=name) for name in NAMES),
            "mock.yaml": mock(),
            **({"evalward.yaml": config} if config else {}),
            ".gitignore": ".evalward/\n",
        },
    )
    repo.branch("change")
    return base, repo.commit("a warmer helper", {"agent.yaml": AGENT.format(tone=tone, care=GUESS)})


def gate(
    repo: GitRepo,
    github: FakeGitHub,
    env: dict[str, str],
    config: str = "",
    tone: str = "Be warm and kind.",
    inputs: dict[str, str] | None = None,
) -> ActionRun:
    """Pull request 7 of `commit_change`, gated with the result cache off unless `inputs`
    say."""
    base, head = commit_change(repo, config, tone)
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    return run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=env,
        inputs={"mock-script": "mock.yaml", **({"cache": "off"} if inputs is None else inputs)},
    )


def where(body: str) -> str:
    return body.split("### 🧭 Where it regressed\n\n")[1].split("\n\n")[0]


def scores(trial: dict[str, Any]) -> dict[str, tuple[int, int]]:
    return {s["fixture"]: (s["passed"], s["runs"]) for s in trial["scores"]}


def test_a_drop_only_the_pooled_test_sees_is_traced_to_its_line_and_said_there(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str]
) -> None:
    done = gate(repo, github, env, "attribution: { budget: 2 }\n")

    assert done.returncode == 1, done.stdout + done.stderr
    record = done.results()
    assert record["summary"]["headline"].startswith(
        "Blocked: helper-eval: pass rate dropped (pooled sequential test: head 20/34"
    )
    (regression,) = record["attribution"]["regressions"]
    assert (regression["fixtures"], regression["pooled"]) == (DRIVERS, True)
    assert regression["result"] == "attributed", regression["reason"]
    (culprit,) = (regression["hunks"][i] for i in regression["culprit"])
    assert (culprit["path"], culprit["first"], culprit["field"]) == (
        "agent.yaml",
        10,
        "spec.system",
    )
    # the rewording applied alone passes the drivers once each; the guess applied alone
    # drops them again as the head did; the head without it passes them once each
    trials = {(t["way"], tuple(t["hunks"])): t for t in regression["trials"]}
    guess = regression["culprit"][0]
    reproduced, removed = trials[("applied", (guess,))], trials[("reverted", (guess,))]
    assert (reproduced["regressed"], removed["regressed"]) == (True, False)
    assert scores(removed) == dict.fromkeys(DRIVERS, (1, 1))
    assert scores(reproduced)["f9"] == (3, 8)
    assert not record["attribution"]["untraced"]

    (posted,) = github.comments_on(7)
    said = where(str(posted["body"]))
    together = "pass rate dropped over them together (pooled sequential test)"
    assert said.startswith(
        f"- **helper-eval** ({', '.join(f'`{d}`' for d in DRIVERS)}, {together}): "
    )
    assert "agent.yaml:10" in said and "taken back, f0 1/1" in said
    assert "the base with only it: f0 2/3, f1 2/3, f2 2/3, f3 2/3, f4 2/3, f8 4/8, f9 3/8." in said
    # the review says it on that line of the diff, in the pooled test's words
    (comment,) = github.review_comments_on(7)
    assert (comment["path"], comment["line"], comment["side"]) == ("agent.yaml", 10, "RIGHT")
    assert (
        "> This change makes helper-eval regress: its pass rate dropped over f0, f1, f2, f3, f4, "
        "f8, f9 together (pooled sequential test), in none of them alone. Taken back, that test "
        "passes (f0 1/1"
    ) in str(comment["body"])


def test_with_every_default_a_change_of_one_block_is_proven_by_the_gate_s_own_runs(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str]
) -> None:
    """The proof's two variants are the head's agent and the base's: the result cache (the
    action's default) holds their runs of the drivers, so the default budget, which no
    variant of the drivers fits, proves it spending nothing."""
    done = gate(repo, github, env, tone="Be kind.", inputs={})

    assert done.returncode == 1, done.stdout + done.stderr
    attribution = done.results()["attribution"]
    (regression,) = attribution["regressions"]
    assert (regression["pooled"], regression["result"]) == (True, "attributed")
    assert [(t["way"], t["regressed"]) for t in regression["trials"]] == [
        ("applied", True),
        ("reverted", False),
    ]
    assert (attribution["spentModelCalls"], attribution["budgetModelCalls"]) == (0, 20)
    (comment,) = github.review_comments_on(7)
    assert (comment["path"], comment["line"]) == ("agent.yaml", 10)


def test_a_variant_a_provider_down_left_no_verdict_proves_nothing(
    repo: GitRepo, tmp_path: Path, model: ScriptedModelServer
) -> None:
    """`evalward run --base main` against a scripted model that answers the head's guess as
    `DROP` does and is down (HTTP 503, after its retries) for f0 where the prompt is reworded
    without the guess: the head with the guess taken back. That variant's other fixtures all
    pass, so its pooled test would read it fixed, but f0 has no verdict, and neither has the
    variant: the guess is not proven the cause on its own, and the two blocks together are."""

    def says(body: dict[str, Any], *words: str) -> bool:
        sent = json.dumps(body)
        return all(word in sent for word in words)

    model.script(
        lambda b: says(b, "Be warm", "question about f0") and not says(b, GUESS),
        error(503, headers={"Retry-After": "0"}),
    )
    for name, pattern in DROP.items():
        answers = [text("the answer" if answer == "P" else "no idea") for answer in pattern]
        model.rules.append(
            Rule(lambda b, n=name: says(b, GUESS, f"question about {n}"), answers, sequence=True)
        )
    model.script(lambda b: True, text("the answer"))
    commit_change(repo, "attribution: { budget: 4 }\n")
    out = tmp_path / "out"

    done = evalward(
        "run", "--base", "main", "--no-cache", "--no-history", "--output-dir", str(out),
        cwd=repo.path, **provider_env(model),
    )  # fmt: skip

    assert done.returncode == 1, done.stdout + done.stderr
    (regression,) = json.loads((out / "results.json").read_text())["attribution"]["regressions"]
    assert regression["result"] == "attributed", (regression["reason"], regression["trials"])
    assert [
        (h["path"], h["first"])
        for i, h in enumerate(regression["hunks"])
        if i in regression["culprit"]
    ] == [
        ("agent.yaml", 8),
        ("agent.yaml", 10),
    ]
    down = [t for t in regression["trials"] if t["notBuilt"]]
    assert down and all(
        t["notBuilt"] == "its runs of f0 decided nothing: a model provider was down" for t in down
    )
    assert not any(t["regressed"] for t in down)
