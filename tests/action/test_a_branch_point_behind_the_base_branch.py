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
from support.answered import ADAPTIVE_EVAL, FIXTURE, helper_eval, scripted
from support.gitrepo import GitRepo
from support.suite import (
    BASE_PROMPT,
    GREETING_FIXTURE,
    HEAD_PROMPT,
    ORDER_FIXTURE,
    SUPPORT_BOT,
    SUPPORT_EVAL,
    script_model,
)

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


# --- the budget's excuse --------------------------------------------------------------------


def inline(version: str, padding: int = 0) -> str:
    """The helper, its prompt in its definition at `version` and `padding` characters
    longer."""
    said = f"You are a helper ({version}). Answer in one sentence." + " Be kind." * (padding // 9)
    return f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: helper }}
spec:
  models: [openai/gpt-4.1-mini]
  system: "{said}"
  maxTokens: 100
"""


PRICED = "pricing:\n  openai/gpt-4.1-mini: { input: 10, output: 10 }\n"
"""$10 a million tokens: a run of a 40,000-character prompt is estimated at about $0.10, one
of a sentence's at $0.002."""


def costly_then(repo: GitRepo, tip: dict[str, str]) -> str:
    """Main's helper with a 40,000-character prompt and fixtures f0, f0b and f1 (one rep
    each, one run at a time, all must pass), then main commits `tip`. Returns the old
    commit."""
    old = repo.commit(
        "suite",
        {
            "evalward.yaml": PRICED,
            "agent.yaml": inline("v1", 40_000),
            "eval.yaml": helper_eval(
                "execution: { repsPerFixture: 1, parallel: 1 }", "scoring: { passThreshold: 1.0 }"
            ),
            "fixtures.yaml": "---\n".join(FIXTURE.format(name=name) for name in COSTLY),
            ".gitignore": ".evalward/\n",
        },
    )
    repo.commit("main moves on", tip)
    return old


def script_costly(model: ScriptedModelServer) -> None:
    """Every version of the helper is right, but the pull request's (v2) on f1."""
    for version in ("v1", "v3"):
        scripted(model, version, {name: [True] * 4 for name in COSTLY})
    scripted(model, "v2", {"f0": [True] * 4, "f0b": [True] * 4, "f1": [False] * 4})


COSTLY = ("f0", "f0b", "f1")
BUDGET = {"max-cost-usd": "0.45", "allow-incomplete": "true", "cache": "off"}
"""Holds f0's and f0b's runs on both sides at the old prompt's cost ($0.40), not f1's beside
them; and one call of the old prompt at its worst ($0.42: its 40,000 characters as as many
tokens, 2,000 more and its 100 output tokens), which each call holds while in flight."""


def test_a_branch_point_where_the_agent_cost_more_does_not_excuse_the_fixture_it_breaks(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Main trimmed the prompt; the pull request branches off before that and breaks f1.
    Estimated with the old prompt, the Eval's own runs do not fit the budget even alone, so
    f1 is left out: that is not excused, as main's agent is not the one the estimate read,
    and the gate is incomplete, saying to rebase or raise the budget."""
    script_costly(model)
    old = costly_then(repo, {"agent.yaml": inline("v3")})
    tip = repo.head()
    head = branched_off(repo, old, {"agent.yaml": inline("v2")})

    run = gate(repo, github, tip, head, env, **BUDGET)

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "incomplete"
    skipped = {(r["side"], r["fixture"]) for r in run.results()["skippedRuns"]}
    assert skipped == {("head", "f1"), ("base", "f1")}
    said = (
        "2 runs of fixtures the base branch gates with in helper-eval were skipped by the "
        "budget, which cannot hold the merge base's runs of them alone; but the base branch "
        "has changed their agent since the pull request branched off, so allow-incomplete "
        "does not excuse them: rebase onto the base branch, or raise the budget"
    )
    assert said in run.results()["reason"]
    assert said in comment(github)


def test_control_a_base_branch_whose_agent_still_costs_that_much_excuses_it(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Main moved on without touching the agent: the base branch's own runs of the Eval do
    not fit the budget even alone, so allow-incomplete excuses f1's, as on the tip."""
    script_costly(model)
    old = costly_then(repo, {"README.md": "The helper.\n"})
    tip = repo.head()
    head = branched_off(repo, old, {"agent.yaml": inline("v2")})

    run = gate(repo, github, tip, head, env, **BUDGET)

    assert run.returncode == 0, run.stdout + run.stderr
    assert run.outputs["result"] == "pass"
    headline = comment(github).split("\n")[1]
    assert headline.endswith(
        "— 2 runs of fixtures the base branch gates with were not run: the budget cannot "
        "hold the base's own runs of helper-eval (allowed by allow-incomplete)"
    ), headline


def test_control_rebased_onto_the_trimmed_agent_every_run_fits_and_f1_fails(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The same pull request rebased onto main's trimmed prompt: every run fits, f1 runs and
    fails, and so does the gate."""
    script_costly(model)
    costly_then(repo, {"agent.yaml": inline("v3")})
    tip = repo.head()
    head = branched_off(repo, tip, {"agent.yaml": inline("v2")})

    run = gate(repo, github, tip, head, env, **BUDGET)

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    assert run.results()["skippedRuns"] == []


# --- fixtures the base branch removed since -------------------------------------------------

REMOVED = ("s1", "s2")
"""Fixtures the Eval's selector picked up at the branch point, which main removed since."""


def removed_fixtures(severity: str) -> str:
    """s1 and s2, at `severity`."""
    return "---\n".join(
        FIXTURE.format(name=name).replace("spec:\n", f"spec:\n  severity: {severity}\n")
        for name in REMOVED
    )


def removed_then(repo: GitRepo, severity: str) -> str:
    """Main's helper with fixtures f0 and f1, and s1 and s2 at `severity` (one rep each, all
    must pass); then main removes s1 and s2. Returns the old commit."""
    old = repo.commit(
        "suite",
        {
            "agent.yaml": inline("v1"),
            "eval.yaml": helper_eval(
                "execution: { repsPerFixture: 1, parallel: 1 }", "scoring: { passThreshold: 1.0 }"
            ),
            "fixtures.yaml": "---\n".join(FIXTURE.format(name=name) for name in ("f0", "f1")),
            "removed.yaml": removed_fixtures(severity),
            ".gitignore": ".evalward/\n",
        },
    )
    repo.remove("removed.yaml")
    repo.commit("main removes s1 and s2")
    return old


@pytest.mark.parametrize("raised", [False, True], ids=["critical", "raised-by-the-pull-request"])
def test_fixtures_the_base_branch_removed_since_do_not_crowd_out_the_fixture_it_breaks(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    raised: bool,
) -> None:
    """The pull request branches off before main removed s1 and s2, and breaks f1. Had the
    base side run the merge base's fixtures beside main's, s1 and s2 (critical at the branch
    point, or made so by the pull request's copy) would run first on both sides and leave
    f0 alone room in a budget of six calls, and main's own runs (four calls) would seem too
    many for it (eight), excusing f1 under allow-incomplete: a pass. They are the pull
    request's own now (pending): main's f0 and f1 run first on both sides, and f1 blocks."""
    scripted(model, "v1", {name: [True] * 2 for name in ("f0", "f1", *REMOVED)})
    scripted(model, "v2", {"f0": [True] * 2, "f1": [False] * 2, "s1": [True], "s2": [True]})
    old = removed_then(repo, "low" if raised else "critical")
    tip = repo.head()
    files = {"agent.yaml": inline("v2")}
    if raised:
        files["removed.yaml"] = removed_fixtures("critical")
    head = branched_off(repo, old, files)

    run = gate(repo, github, tip, head, env, **{"max-model-calls": "6", "allow-incomplete": "true"})

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.outputs["result"] == "fail"
    results = run.results()
    f1 = sorted((f["side"], f["status"]) for f in results["fixtures"] if f["fixture"] == "f1")
    assert f1 == [("base", "pass"), ("head", "fail")], f1
    ran = {(f["side"], f["fixture"]) for f in results["fixtures"]}
    assert not {("base", name) for name in REMOVED} & ran, ran
    assert "f1" in results["reason"], results["reason"]


# --- agents the base branch renamed, added or made read more since --------------------------


def _renamed(text: str) -> str:
    return text.replace("support-bot", "helper")


def _support_bot_renamed_on_main(repo: GitRepo, *, evals_before: bool) -> str:
    """The support bot on main (with its Eval and fixtures where `evals_before`), a branch
    `feature` made there, then main renaming it `helper`, file and Eval: the tip."""
    gated = {
        "evals/support-bot.yaml": SUPPORT_EVAL,
        "evals/fixtures/order-status.yaml": ORDER_FIXTURE,
        "evals/fixtures/greeting.yaml": GREETING_FIXTURE,
    }
    repo.commit(
        "the support bot",
        {
            "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=BASE_PROMPT),
            **(gated if evals_before else {}),
        },
    )
    repo.branch("feature")
    repo.checkout("main")
    repo.git("mv", "agents/support-bot.yaml", "agents/helper.yaml")
    if evals_before:
        repo.git("mv", "evals/support-bot.yaml", "evals/helper.yaml")
    return repo.commit(
        "rename the support bot to helper, and gate it",
        {
            "agents/helper.yaml": _renamed(SUPPORT_BOT.format(prompt=BASE_PROMPT)),
            "evals/helper.yaml": _renamed(SUPPORT_EVAL),
            "evals/fixtures/order-status.yaml": _renamed(ORDER_FIXTURE),
            "evals/fixtures/greeting.yaml": _renamed(GREETING_FIXTURE),
        },
    )


UPDATE = "Merge or rebase the base branch into this branch"


@pytest.mark.parametrize("evals_before", [False, True], ids=["gated since", "gated before"])
def test_an_agent_the_base_branch_renamed_since_cannot_be_changed_under_its_old_name(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    evals_before: bool,
) -> None:
    """Main renamed the support bot `helper` (its Eval `helper-eval`) after the branch was
    made; the pull request breaks the bot in its old file, which git carries onto
    `agents/helper.yaml` as it merges. Main's Evals target `helper`, so none ran (or only
    the branch's stale copy of `support-bot-eval`, an Eval main lacks, with the bar the pull
    request set: 0.5). The job stops, asks for the branch to be updated, and gates nothing."""
    tip = _support_bot_renamed_on_main(repo, evals_before=evals_before)
    repo.checkout("feature")
    lowered = SUPPORT_EVAL.replace("passThreshold: 0.9", "passThreshold: 0.5")
    head = repo.commit(
        "sharpen the prompt",
        {
            "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=HEAD_PROMPT),
            **({"evals/support-bot.yaml": lowered} if evals_before else {}),
        },
    )
    script_model(model, head_greets_well=False)

    run = gate(repo, github, tip, head, env)

    assert run.returncode == 2, run.stdout + run.stderr
    assert "agent support-bot, which this change changes, is no longer defined on the base " in (
        run.stdout
    )
    assert UPDATE in run.stdout
    assert run.outputs.get("result") not in ("pass", "skipped")
    assert model.requests == []


def test_control_the_branch_updated_after_the_rename_is_gated_by_the_renamed_agent_s_eval(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The same pull request with main merged into it, as the message asks: the edit is on
    `agents/helper.yaml`, `helper-eval` runs and blocks it."""
    tip = _support_bot_renamed_on_main(repo, evals_before=False)
    repo.checkout("feature")
    repo.commit(
        "sharpen the prompt", {"agents/support-bot.yaml": SUPPORT_BOT.format(prompt=HEAD_PROMPT)}
    )
    repo.git("merge", "-q", "--no-edit", "main")
    head = repo.head()
    assert "HEAD-V2" in repo.git("show", f"{head}:agents/helper.yaml")
    script_model(model, head_greets_well=False)

    run = gate(repo, github, tip, head, env)

    assert run.returncode == 1, run.stdout + run.stderr
    assert "helper-eval" in run.results()["reason"]


@pytest.mark.parametrize("since", ["changed", "added", "changed through a link"])
def test_a_file_an_agent_of_the_base_branch_reads_only_since_the_branch_point_is_not_passed_by(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    since: str,
) -> None:
    """Main made the support bot read its prompt from `prompts/support.md` (`changed`; or
    from `prompts/current.md`, a link to it), or added an agent that reads it (`added`),
    after the branch was made; the pull request changes only that file, which no agent reads
    where it branched off, so nothing ran and the gate passed, while the merge hands main's
    agent the new prompt. The job stops and asks for the branch to be updated."""
    bot = SUPPORT_BOT.format(prompt=BASE_PROMPT)
    linked = since == "changed through a link"
    named = "prompts/current.md" if linked else "prompts/support.md"
    from_file = bot.replace(f'system: "{BASE_PROMPT}"', f"systemFile: {named}")
    assert from_file != bot
    repo.commit(
        "agents and evals; a prompt file drafted",
        {
            "agents/support-bot.yaml": bot,
            "prompts/support.md": BASE_PROMPT + "\n",
            "evals/support-bot.yaml": SUPPORT_EVAL,
            "evals/fixtures/order-status.yaml": ORDER_FIXTURE,
            "evals/fixtures/greeting.yaml": GREETING_FIXTURE,
        },
    )
    repo.branch("feature")
    repo.checkout("main")
    reads = (
        {"agents/support-bot.yaml": from_file}
        if since != "added"
        else {"agents/helper.yaml": _renamed(from_file)}
    )
    if linked:
        (repo.path / named).symlink_to("support.md")
    tip = repo.commit("read the prompt from its file", reads)
    repo.checkout("feature")
    head = repo.commit("sharpen the prompt", {"prompts/support.md": HEAD_PROMPT + "\n"})
    script_model(model, head_greets_well=False)

    run = gate(repo, github, tip, head, env)

    assert run.returncode == 2, run.stdout + run.stderr
    agent = "helper" if since == "added" else "support-bot"
    assert f"prompts/support.md, which this change touches, is read by agent {agent} as " in (
        run.stdout
    )
    done = since.removesuffix(" through a link")
    assert f"the base branch {done} the agent after this branch was made" in run.stdout
    assert UPDATE in run.stdout
    assert model.requests == []


# --- a branch made before the base branch had evalward ---------------------------------------


def test_a_branch_made_before_the_base_branch_gated_its_agents_is_told_to_update_itself(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Main took up evalward (`roots: [agents, evals]`) after the branch was made, and the
    branch added the same agent with a worse prompt. The commit the base side runs has none
    of those folders: nothing gates, as before, but the base branch is whole, so the message
    asks for the branch to be updated, not for the base branch to be mended or the gate
    bypassed."""
    start = repo.commit("before evalward", {"README.md": "the support bot\n"})
    repo.branch("feature")
    repo.checkout("main")
    suite = {
        "evalward.yaml": "roots: [agents, evals]\n",
        "evals/support-bot.yaml": SUPPORT_EVAL,
        "evals/fixtures/order-status.yaml": ORDER_FIXTURE,
        "evals/fixtures/greeting.yaml": GREETING_FIXTURE,
    }
    tip = repo.commit(
        "gate the support bot",
        {**suite, "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=BASE_PROMPT)},
    )
    repo.checkout("feature")
    head = repo.commit(
        "the support bot, sharper",
        {**suite, "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=HEAD_PROMPT)},
    )
    assert repo.git("merge-base", tip, head).strip() == start
    script_model(model, head_greets_well=False)

    run = gate(repo, github, tip, head, env)

    assert run.returncode == 2, run.stdout + run.stderr
    said = comment(github)
    assert f"the commit this branch was made from ({start[:12]})" in said
    assert "root 'agents' is not a folder of the repository" in said
    assert UPDATE in said
    assert "fix them on the base branch first" not in said
    assert "force-eval-bypass" not in said
    assert run.outputs.get("result") not in ("pass", "skipped")
    assert model.requests == []
