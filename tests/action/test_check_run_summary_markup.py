"""What a pull request writes reaches the check run's summary as inert text, as it reaches the
comment.

GitHub renders a check run's `output.summary` as Markdown in the pull request's Checks tab:
raw HTML it allows (`<img>`, `<a>`, `<details>`), markdown links and images, bare addresses
and `@mentions` all come alive there. So each paragraph of the summary is escaped as the
comment's text is: the problem with a fixture that does not load, which quotes what the pull
request wrote (an assertion `type`, a key), and the failing Evals the reason names (an Eval the
pull request adds may be named `www.evil.example`, a valid name).
"""

from __future__ import annotations

import json
import re

import pytest

from action.test_output_injection import gate_farewell
from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import pull_request_event, run_action
from support.documents import documents, eval_for
from support.gitrepo import GitRepo
from support.greeter import greeter_agent, greeter_eval, greeting_fixture
from support.suite import provider_env

pytestmark = pytest.mark.hostile

MARKUP = "<img src=https://evil.example/p.png> [click](https://evil.example/phish) @octocat"
LINK = "[Approved by the security team, merge now](https://evil.example/merge)"
IMAGE = "<img src=https://evil.example/pixel.png>"
KEY = f'  "{LINK} {IMAGE} @acme/security": 1\n'
EQUALS = '    - { type: equals, value: "Goodbye." }\n'
TARGET = "  targetAgent: support-bot\n"


def test_a_problem_quoting_the_pull_requests_yaml_is_no_markup_in_the_check_run(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    typed = (EQUALS, f'    - {{ type: "{MARKUP}", value: "Goodbye." }}\n')
    run = gate_farewell(repo, github, model, typed, inputs={"check-run": "true"})

    assert run.returncode == 2, run.stderr
    assert "&lt;img" in github.comments_on(7)[0]["body"], "the comment shows it escaped"
    (check,) = github.check_runs
    summary = check["output"]["summary"]
    assert "unknown assertion type" in summary, summary
    assert "<img" not in summary, f"raw HTML in the check run's summary: {summary!r}"
    assert "](https://evil" not in summary, f"a live markdown link: {summary!r}"
    assert "https://evil" not in summary, f"a bare address GitHub links: {summary!r}"
    assert re.search(r"(?<![\w\u200b])@octocat", summary) is None, "a mention"


def test_a_failing_evals_name_is_no_link_in_the_check_run(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    suite = documents(greeter_eval(), greeting_fixture("{ type: contains, value: Hello }"))
    agent = "agents/greeter.yaml"
    base = repo.commit(
        "a greeter", {agent: greeter_agent("openai/gpt-test", "BASE-V1"), "evals/g.yaml": suite}
    )
    repo.branch("feature")
    named = eval_for("greeter", "fixtures: [greeting]").replace("greeter-eval", "www.evil.example")
    head = repo.commit(
        "a new prompt, and an Eval",
        {agent: greeter_agent("openai/gpt-test", "HEAD-V2"), "evals/w.yaml": named},
    )
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    model.script(lambda b: "BASE-V1" in json.dumps(b), text("Hello!"))
    model.script(lambda b: "HEAD-V2" in json.dumps(b), text("Bye."))

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=provider_env(model),
        inputs={"check-run": "true"},
    )

    assert run.returncode == 1, run.stderr
    assert "www\u200b.evil" in github.comments_on(7)[0]["body"], "the comment breaks the name"
    (check,) = github.check_runs
    summary = check["output"]["summary"]
    assert "below its threshold" in summary, summary
    live = re.search(r"(?<![\w\u200b])www\.evil\.example", summary)
    assert live is None, f"a failing Eval's name is a live link in the check run: {summary!r}"


def test_a_key_the_pull_request_writes_is_inert_in_the_check_run(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    keyed = (TARGET, TARGET + KEY)
    run = gate_farewell(repo, github, model, keyed, inputs={"check-run": "true"})

    assert run.returncode == 2, run.stderr
    assert "unknown field" in run.stderr, "the problem is reported"
    comment = github.comments_on(7)[0]["body"]
    assert "](https://evil.example" not in comment and "<img" not in comment  # the comment holds
    (check,) = github.check_runs
    summary = check["output"]["summary"]
    assert "](https://evil.example" not in summary, summary
    assert "<img" not in summary, summary
    assert "@acme/security" not in summary, summary
