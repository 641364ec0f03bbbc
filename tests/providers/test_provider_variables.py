"""A provider variable pasted badly (a key with its line break) is a configuration error
before any run that uses the provider, naming the variable and never its value, through
`evalward run`, `evalward validate --ask-providers` and the action: not four attempts and
"provider unavailable", as if the provider were down. A provider the run does not use is not
asked about its variables."""

from __future__ import annotations

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.actionrun import pull_request_event, run_action
from support.clirun import evalward, initialised
from support.gitrepo import GitRepo
from support.suite import make_pr, script_model

pytestmark = pytest.mark.e2e

KEY = "sk-Zq8-secret"
FIX = "which a key or a URL never does (its value is not shown): set {name} again without it"


def _refused_once(stderr: str, name: str, flaw: str) -> None:
    """`stderr` is the one line that refuses `name` for its `flaw`, saying how to fix it."""
    (line,) = stderr.strip().splitlines()
    assert line == (
        f"evalward: {name} {flaw}, {FIX.format(name=name)} (a secret pasted with its line "
        "break keeps the line break)"
    ), line


@pytest.mark.parametrize(
    ("key", "flaw"),
    [
        (f"{KEY}\n", "ends with a line break"),
        (f"{KEY}\r\n", "ends with a line break"),
        ("sk-Zq8\tsecret", "holds a control character (U+0009)"),
        (f" {KEY}", "begins or ends with whitespace"),
    ],
    ids=["newline", "crlf", "tab", "leading-space"],
)
def test_a_key_pasted_with_a_line_break_stops_the_run_before_any_call(
    repo: GitRepo, model: ScriptedModelServer, key: str, flaw: str
) -> None:
    started = initialised(repo)

    done = evalward(
        "run", "--no-cache", "--output-dir", "out", cwd=started.path,
        OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY=key,
    )  # fmt: skip

    assert done.returncode == 2, done.stdout + done.stderr
    _refused_once(done.stderr, "OPENAI_API_KEY", flaw)
    assert "Zq8" not in done.stdout + done.stderr  # never the value
    assert model.requests == []
    assert not (started.path / "out").exists()


def test_a_base_url_with_a_line_break_is_refused_the_same(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    started = initialised(repo)

    done = evalward(
        "run", "--no-cache", "--output-dir", "out", cwd=started.path,
        OPENAI_BASE_URL=model.base_url + "\n", OPENAI_API_KEY=KEY,
    )  # fmt: skip

    assert done.returncode == 2, done.stdout + done.stderr
    _refused_once(done.stderr, "OPENAI_BASE_URL", "ends with a line break")
    assert model.requests == []


def test_a_key_of_spaces_alone_is_an_empty_one(repo: GitRepo) -> None:
    started = initialised(repo)

    done = evalward(
        "run", "--no-cache", "--output-dir", "out", cwd=started.path, OPENAI_API_KEY=" \n"
    )

    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = [line for line in done.stderr.splitlines() if "OPENAI_API_KEY" in line]
    assert line.startswith(
        "evalward: model 'openai/gpt-4.1-mini' needs OPENAI_API_KEY, which is empty. "
    ), line


def test_the_key_a_provider_of_your_own_names_is_held_to_the_same_rule(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    started = initialised(repo)
    agent = started.path / "agents" / "assistant.yaml"
    config = started.path / "evalward.yaml"
    own = (
        f"providers:\n  local: {{ api: openai, baseUrl: {model.base_url}, apiKeyEnv: LOCAL_KEY }}\n"
    )
    started.commit(
        "a provider of its own",
        {
            "agents/assistant.yaml": agent.read_text().replace("openai/", "local/"),
            "evalward.yaml": config.read_text() + own,
        },
    )

    done = evalward(
        "run", "--no-cache", "--output-dir", "out", cwd=started.path, LOCAL_KEY=f"{KEY}\n"
    )

    assert done.returncode == 2, done.stdout + done.stderr
    _refused_once(done.stderr, "LOCAL_KEY", "ends with a line break")
    assert model.requests == []


def test_the_action_refuses_a_key_with_a_line_break_in_its_log_and_summary(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base, head = make_pr(repo, github)
    env = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": f"{KEY}\n"}

    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )

    assert run.returncode == 2, run.stdout + run.stderr
    said = f"OPENAI_API_KEY ends with a line break, {FIX.format(name='OPENAI_API_KEY')}"
    assert said in run.stderr, run.stderr
    assert said.replace("_", "\\_") in run.summary, run.summary  # Markdown's, as it is written
    assert run.outputs["result"] == "incomplete"
    assert "Zq8" not in run.stdout + run.stderr + run.summary
    assert model.requests == []


def test_a_flawed_key_of_a_provider_the_run_does_not_use_stops_nothing(repo: GitRepo) -> None:
    started = initialised(repo)  # its agent and judges are OpenAI's

    done = evalward(
        "run", "--no-cache", "--output-dir", "out", "--mock-script", "evals/mock-replies.yaml",
        cwd=started.path, ANTHROPIC_API_KEY=f"{KEY} ", ANTHROPIC_BASE_URL="https://x.test\n",
    )  # fmt: skip

    assert done.returncode == 0, done.stdout + done.stderr
    assert "ANTHROPIC" not in done.stdout + done.stderr
    assert "Zq8" not in done.stdout + done.stderr
    assert (started.path / "out").is_dir()


def test_the_action_runs_past_a_flawed_key_of_a_provider_it_does_not_use(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=True)
    flawed = {**env, "ANTHROPIC_API_KEY": f"{KEY}\n"}

    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=flawed
    )

    assert run.returncode == 0, run.stdout + run.stderr
    assert "ANTHROPIC_API_KEY" not in run.stdout + run.stderr + run.summary
    assert model.requests != []


def test_validate_asks_no_provider_whose_key_the_definitions_use_is_flawed(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    started = initialised(repo)
    urls = {"OPENAI_BASE_URL": model.base_url, "ANTHROPIC_BASE_URL": model.anthropic_url}

    used = evalward(
        "validate", ".", "--ask-providers", cwd=started.path, **urls, OPENAI_API_KEY=f"{KEY}\n"
    )

    assert used.returncode == 2, used.stdout + used.stderr
    _refused_once(used.stderr, "OPENAI_API_KEY", "ends with a line break")
    assert model.targets == []

    unused = evalward(
        "validate", ".", "--ask-providers", cwd=started.path, **urls,
        OPENAI_API_KEY=KEY, ANTHROPIC_API_KEY=f"{KEY}\n",
    )  # fmt: skip

    assert unused.returncode == 0, unused.stdout + unused.stderr
    assert "ANTHROPIC" not in unused.stdout + unused.stderr
    assert [t.split("?")[0] for t in model.targets] == ["GET /v1/models"]  # OpenAI alone
