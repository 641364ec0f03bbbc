"""One rule for the paths an Agent names: from the repository root. `validate` checks a
`systemFile` where `run` reads it, change detection watches the same file, and the old rule
(relative to the resource file) still works with a located deprecation warning."""

from __future__ import annotations

import pytest

from fakes.model_server import ScriptedModelServer, text
from support.clirun import evalward
from support.gitrepo import GitRepo
from support.suite import provider_env

pytestmark = pytest.mark.integration

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: bot }}
spec:
  models: [openai/gpt-test]
  systemFile: {system_file}
"""
SUITE = """\
apiVersion: evalward.dev/v1
kind: Eval
metadata: { name: bot-eval }
spec:
  targetAgent: bot
  fixtures: [hello]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: hello }
spec:
  targetAgent: bot
  input: { type: prompt, payload: { prompt: hello } }
  assertions:
    - { type: contains, value: hi }
"""


def system_prompts(repo: GitRepo, model: ScriptedModelServer) -> list[str]:
    """Run every Eval against the model server; the system prompts the agent sent."""
    model.script("hello", text("hi there"))
    env = provider_env(model, "sk-test")
    done = evalward("run", ".", "--no-cache", "--no-history", cwd=repo.path, **env)
    assert done.returncode == 0, done.stdout + done.stderr
    return [r["messages"][0]["content"] for r in model.requests]


def test_a_system_file_is_read_from_the_repository_root_as_commands_are(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    repo.commit(
        "bot",
        {
            "agents/bot.yaml": AGENT.format(system_file="prompts/bot.md"),
            "prompts/bot.md": "ROOT PROMPT",
            "evals/bot.yaml": SUITE,
        },
    )
    validated = evalward("validate", ".", cwd=repo.path)
    assert validated.returncode == 0, validated.stderr
    assert "warning" not in validated.stdout
    assert system_prompts(repo, model) == ["ROOT PROMPT"]


def test_a_leading_slash_is_the_root_too(repo: GitRepo, model: ScriptedModelServer) -> None:
    repo.commit(
        "bot",
        {
            "agents/bot.yaml": AGENT.format(system_file="/prompts/bot.md"),
            "prompts/bot.md": "ROOT PROMPT",
            "evals/bot.yaml": SUITE,
        },
    )
    assert evalward("validate", ".", cwd=repo.path).returncode == 0
    assert system_prompts(repo, model) == ["ROOT PROMPT"]


def test_the_old_relative_form_still_works_with_a_located_deprecation_warning(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    repo.commit(
        "bot",
        {
            "agents/bot.yaml": AGENT.format(system_file="../prompts/bot.md"),
            "prompts/bot.md": "OLD FORM",
            "evals/bot.yaml": SUITE,
        },
    )
    validated = evalward("validate", ".", cwd=repo.path)
    assert validated.returncode == 0, validated.stderr
    assert (
        "warning: agents/bot.yaml:6:3: spec.systemFile: '../prompts/bot.md' is found only "
        "relative to agents/bot.yaml, a rule that is deprecated: paths in a resource are from "
        "the repository root; write `prompts/bot.md`"
    ) in validated.stdout
    assert system_prompts(repo, model) == ["OLD FORM"]


def test_when_both_rules_find_a_file_the_root_wins_and_validate_says_so(
    repo: GitRepo, model: ScriptedModelServer
) -> None:
    repo.commit(
        "bot",
        {
            "agents/bot.yaml": AGENT.format(system_file="prompt.md"),
            "prompt.md": "ROOT PROMPT",
            "agents/prompt.md": "NEXT TO THE AGENT",
            "evals/bot.yaml": SUITE,
        },
    )
    validated = evalward("validate", ".", cwd=repo.path)
    assert validated.returncode == 0, validated.stderr
    assert (
        "warning: agents/bot.yaml:6:3: spec.systemFile: 'prompt.md' is read from the "
        "repository root, not agents/prompt.md"
    ) in validated.stdout
    assert system_prompts(repo, model) == ["ROOT PROMPT"]


def test_a_file_missing_by_both_rules_names_the_rule(repo: GitRepo) -> None:
    repo.commit(
        "bot",
        {"agents/bot.yaml": AGENT.format(system_file="prompts/bot.md"), "evals/bot.yaml": SUITE},
    )
    done = evalward("validate", ".", cwd=repo.path)
    assert done.returncode == 2
    assert (
        "agents/bot.yaml:6:3: spec.systemFile: the file 'prompts/bot.md' does not exist "
        "(paths in a resource are from the repository root)"
    ) in done.stderr
    run = evalward("run", ".", cwd=repo.path)
    assert run.returncode == 2 and "the file 'prompts/bot.md' does not exist" in run.stderr


def test_the_old_rule_cannot_lead_out_of_the_repository(repo: GitRepo) -> None:
    """Neither rule may leave the checkout: `../..` from a nested resource is refused, even
    where the path read from the root would be inside."""
    repo.commit(
        "bot",
        {
            "a/b/bot.yaml": AGENT.format(system_file="../../../etc/hostname"),
            "evals/bot.yaml": SUITE,
        },
    )
    done = evalward("validate", ".", cwd=repo.path)
    assert done.returncode == 2
    assert "spec.systemFile: the file '../../../etc/hostname' leaves the repository" in done.stderr


def test_a_change_to_a_prompt_found_the_old_way_still_changes_the_agent(repo: GitRepo) -> None:
    repo.commit(
        "bot",
        {
            "agents/bot.yaml": AGENT.format(system_file="prompt.md"),
            "agents/prompt.md": "v1",
            "evals/bot.yaml": SUITE,
        },
    )
    repo.branch("feature")
    repo.commit("a new prompt", {"agents/prompt.md": "v2"})
    done = evalward("plan", ".", "--base", "main", cwd=repo.path)
    assert done.returncode == 0, done.stderr
    assert "bot: agents/prompt.md changed" in done.stdout
    assert "bot-eval (agent bot)" in done.stdout


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (
            b"Caf\xe9 bot\n",
            "is not UTF-8 text (byte 0xe9 at line 1, column 4): a system prompt is text; save "
            "it as UTF-8",
        ),
        (
            b"\x7fELF\x02\x01\x01\x00\n\x00\xd0\x01",
            "is binary, not UTF-8 text (byte 0xd0 at line 2, column 2): a system prompt is "
            "text; name a text file",
        ),
    ],
    ids=["latin-1", "binary"],
)
def test_a_system_file_that_is_no_utf8_text_is_refused_at_its_line_before_any_run(
    repo: GitRepo, content: bytes, said: str
) -> None:
    # validate passed it, and every run of the agent then ended `error` and blocked the gate
    (repo.path / "prompts").mkdir(parents=True)
    (repo.path / "prompts" / "bot.md").write_bytes(content)
    repo.commit(
        "bot",
        {"agents/bot.yaml": AGENT.format(system_file="prompts/bot.md"), "evals/bot.yaml": SUITE},
    )
    expected = f"agents/bot.yaml:6:3: spec.systemFile: the file 'prompts/bot.md' {said}"
    for args in (("validate", "."), ("run", ".", "--no-history", "--no-cache")):
        done = evalward(*args, cwd=repo.path)
        assert done.returncode == 2, done.stdout + done.stderr
        assert expected in done.stderr
        assert "Traceback" not in done.stderr


def test_a_leading_slash_that_names_a_machine_file_says_where_it_looked(repo: GitRepo) -> None:
    # said "the file '/etc/hostname' does not exist", as if evalward had looked at the machine's
    repo.commit(
        "bot",
        {"agents/bot.yaml": AGENT.format(system_file="/etc/hostname"), "evals/bot.yaml": SUITE},
    )
    done = evalward("validate", ".", cwd=repo.path)
    assert done.returncode == 2
    assert (
        "agents/bot.yaml:6:3: spec.systemFile: the file '/etc/hostname' does not exist: a "
        "leading `/` means the repository root, not the machine's, so evalward looked for "
        "'etc/hostname' in the repository; copy the file into the repository, commit it, and "
        "name it from the root"
    ) in done.stderr
