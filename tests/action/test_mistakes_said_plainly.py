"""A mistake the action refuses is said in words that show it: the value of an input that is
one of a few words (not starred as a secret because its name holds SECRET), and a pull
request's `systemFile` that is no text, or that names a file of the machine, at its line in
the head commit (read from git's objects) before any model is called."""

from __future__ import annotations

import pytest

from action.test_gate_evasion import gate
from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.actionrun import execute, prepare, pull_request_event
from support.gitrepo import GitRepo
from support.suite import HEAD_PROMPT, SUPPORT_BOT, make_pr, script_model

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("name", ["INPUT_ON_MISSING_SECRETS", "INPUT_ON-MISSING-SECRETS"])
def test_a_mistyped_word_of_an_input_named_for_secrets_is_quoted_in_its_error(
    repo: GitRepo, github: FakeGitHub, name: str
) -> None:
    # "(got '***')": the input's name holds SECRETS, so its value was redacted as a secret
    base, head = make_pr(repo, github)
    event = pull_request_event(github.repository, 7, base, head)
    launch = prepare(repo.path, github, event, env={name: "ignore"})

    run = execute(repo.path, launch)

    assert run.returncode == 2, run.stdout + run.stderr
    assert (
        "::error::action input `on-missing-secrets`: Input should be 'fail' or 'skip' "
        "(got 'ignore')"
    ) in run.stderr
    assert "***" not in run.stderr


@pytest.mark.parametrize(
    ("variable", "said"),
    [
        (
            "INPUT_MAX-COST-USDD",
            "action input `max-cost-usdd`: evalward has no such input, so "
            "its value would be ignored; did you mean `max-cost-usd`? Write one of the inputs "
            "action.yml lists (docs/github.md) under the step's `with:`, or remove it",
        ),
        (
            "INPUT_MOCK_SCRIPTS",
            "action input `mock-scripts`: evalward has no such input, so "
            "its value would be ignored; did you mean `mock-script`?",
        ),
    ],
    ids=["as GitHub passes it", "as an env: block writes it"],
)
def test_an_input_evalward_does_not_have_is_refused_naming_the_one_it_was_meant_for(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    variable: str,
    said: str,
) -> None:
    # GitHub passes a misspelt input on to the container with only a warning: the gate ran
    # with no budget (or with real models where `mock-script` was meant)
    base, head = make_pr(repo, github)
    event = pull_request_event(github.repository, 7, base, head)
    launch = prepare(repo.path, github, event, env={**env, variable: "0.01"})

    run = execute(repo.path, launch)

    assert run.returncode == 2, run.stdout + run.stderr
    assert f"::error::{said}" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr
    assert model.requests == []
    assert run.outputs == {"result": "incomplete"}
    assert "did you mean" in run.summary


def head_with_system_file(
    repo: GitRepo, github: FakeGitHub, system_file: str, files: dict[str, bytes]
) -> tuple[str, str]:
    """Pull request 7, whose head gives support-bot the `systemFile` with `files` committed."""
    base, _ = make_pr(repo, github)
    agent = SUPPORT_BOT.format(prompt=HEAD_PROMPT).replace(
        f'system: "{HEAD_PROMPT}"', f"systemFile: {system_file}"
    )
    assert "systemFile" in agent
    for path, content in files.items():
        (repo.path / path).parent.mkdir(parents=True, exist_ok=True)
        (repo.path / path).write_bytes(content)
    head = repo.commit("a system file", {"agents/support-bot.yaml": agent})
    github.pulls[7].head_sha = head
    return base, head


@pytest.mark.parametrize(
    ("written", "said"),
    [
        (
            ("prompts/bot.md", {"prompts/bot.md": "Caf\xe9 bot\n".encode("latin-1")}),
            "the file 'prompts/bot.md' is not UTF-8 text (byte 0xe9 at line 1, column 4): a "
            "system prompt is text; save it as UTF-8",
        ),
        (
            ("prompts/bot.md", {"prompts/bot.md": b"\x7fELF\x02\x01\x01\x00\x00\xd0\x01"}),
            "the file 'prompts/bot.md' is binary, not UTF-8 text (byte 0xd0 at line 1, column "
            "10): a system prompt is text; name a text file",
        ),
        (
            ("/etc/hostname", {}),
            "the file '/etc/hostname' is not a file of commit {head}: a leading `/` means the "
            "repository root, not the machine's, so evalward looked for 'etc/hostname' in the "
            "repository; copy the file into the repository, commit it, and name it from the root",
        ),
    ],
    ids=["latin-1", "binary", "a machine's path"],
)
def test_a_system_file_the_head_cannot_use_fails_the_gate_at_its_line(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    written: tuple[str, dict[str, bytes]],
    said: str,
) -> None:
    base, head = head_with_system_file(repo, github, *written)

    run = gate(repo, github, base, head, env)

    assert run.returncode == 2, run.stdout + run.stderr
    expected = f"agents/support-bot.yaml:7:3: spec.systemFile: {said.format(head=head[:12])}"
    assert expected in run.stderr, run.stderr
    assert model.requests == []
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        (
            "INPUT_SHARD",
            "1-2",
            "action input `shard`: expected i/n, the part of the matrix this job runs (e.g. 2/4, "
            "`${{ matrix.shard }}/4`) (got '1-2')",
        ),
        (
            "INPUT_AGENT_ENV",
            "LANG;TZ",
            "action input `agent-env`: expected names of environment variables (letters, "
            "digits and `_`) with commas or spaces between them (got 'LANG;TZ')",
        ),
    ],
    ids=["shard", "agent-env"],
)
def test_an_input_of_the_wrong_form_is_told_in_words_not_by_its_pattern(
    repo: GitRepo, github: FakeGitHub, variable: str, value: str, said: str
) -> None:
    # "String should match pattern '^\s*(\d+\s*/\s*\d+)?\s*$'": the regular expression it failed
    base, head = make_pr(repo, github)
    event = pull_request_event(github.repository, 7, base, head)

    run = execute(repo.path, prepare(repo.path, github, event, env={variable: value}))

    assert run.returncode == 2, run.stdout + run.stderr
    assert f"::error::{said}" in run.stderr, run.stderr
    assert "pattern" not in run.stderr


def test_every_wrong_input_is_said_at_once(repo: GitRepo, github: FakeGitHub) -> None:
    """One CI round for all of them, not one for each."""
    base, head = make_pr(repo, github)
    event = pull_request_event(github.repository, 7, base, head)
    wrong = {"INPUT_PARALLEL": "abc", "INPUT_COMMENT": "maybe", "INPUT_MAX-COST-USDD": "5"}

    run = execute(repo.path, prepare(repo.path, github, event, env=wrong))

    assert run.returncode == 2, run.stdout + run.stderr
    assert "3 action inputs are wrong:" in run.stderr, run.stderr
    for said in (
        "action input `max-cost-usdd`: evalward has no such input",
        "action input `parallel`: ",
        "action input `comment`: ",
    ):
        assert said in run.stderr, run.stderr
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize(
    ("number", "shown"),
    [(None, "missing"), ("seven", "'seven', not a pull request's number")],
    ids=["missing", "a word"],
)
def test_a_pull_request_event_without_its_number_is_refused_naming_the_field(
    repo: GitRepo, github: FakeGitHub, number: str | None, shown: str
) -> None:
    # a hand-written or truncated payload ended in an internal error (KeyError, exit 4)
    base, head = make_pr(repo, github)
    event = pull_request_event(github.repository, 7, base, head)
    if number is None:
        del event["pull_request"]["number"]
    else:
        event["pull_request"]["number"] = number

    run = execute(repo.path, prepare(repo.path, github, event))

    assert run.returncode == 2, run.stdout + run.stderr
    assert (
        f"::error::GITHUB_EVENT_PATH: the pull_request event's `pull_request.number` is {shown}, "
        "where GitHub writes the number of the pull request to gate; run evalward from a "
        "workflow `on: pull_request` as GitHub starts it"
    ) in run.stderr, run.stderr
    assert "Traceback" not in run.stderr
    assert run.outputs == {"result": "incomplete"}


@pytest.mark.parametrize(
    ("inputs", "said"),
    [
        (
            {"shard-key": "k" * 40},
            "action input `shard-key` is given without `shard` or `merge`, so this job seals "
            "and checks nothing with it and runs every Eval itself; give it beside `shard: "
            "i/n` in each shard's job and `merge:` in the job that merges their parts (see "
            "docs/github.md), or remove it",
        ),
        (
            {"allow-incomplete": "true"},
            "action input `allow-incomplete: true` is given without `max-model-calls` or "
            "`max-cost-usd`: it lets the gate pass without the runs a budget leaves out, and "
            "with no budget none is left out, so it changes nothing; give the budget it is "
            "for, or remove it",
        ),
        (
            {"pr": "12"},
            "action input `pr: 12` is read on `workflow_dispatch` alone, and this job's event "
            "is `pull_request`, which names what it gates itself, so it changes nothing; give "
            "it from a `workflow_dispatch`'s inputs, or remove it",
        ),
    ],
    ids=["shard-key", "allow-incomplete", "pr on a pull request"],
)
def test_an_input_the_others_leave_without_effect_is_a_warning_and_the_gate_decides_as_without(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    inputs: dict[str, str],
    said: str,
) -> None:
    # the job ran as if neither were given, and said nothing of it
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=False)
    event = pull_request_event(github.repository, 7, base, head)

    run = execute(repo.path, prepare(repo.path, github, event, env=env, inputs=inputs))

    assert run.returncode == 1, run.stdout + run.stderr  # the head's regression blocks
    assert run.stdout.count(f"::warning::{said}") == 1, run.stdout
    assert run.outputs["result"] == "fail"
