"""A pull request that names a file another workflow step left in the workspace.

`google-github-actions/auth` writes `gha-creds-*.json` into the workspace, 0600 and
git-ignored. evalward runs as root, so reading that path "inside the repository" would hand a
private key to the model provider or to the head agent. Every file a definition names goes
through one door (files/committed.py): a file of the side's commit, read from git's objects;
this one is not committed, so the pull request's definition is refused at the line that names
it, and the key reaches nothing. Each attack runs through the action's entry point; where a
program of the pull request runs or would run, with the cgroup file system writable and
read-only (support/cgroup_modes.py: a Docker action's view, the uid sweep alone).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer
from support.actionrun import ActionRun, pull_request_event, run_action
from support.cgroup_modes import MODES, run_gate_in
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

RUNNER_FILE = "gha-creds-0123abcd.json"
PRIVATE_KEY = "-----BEGIN PRIVATE KEY-----RUNNER-ONLY-7f3a9c-----END PRIVATE KEY-----"


def _plant_runner_file(repo: GitRepo) -> Path:
    """What the auth step leaves: a private, ignored file at the workspace's top."""
    planted = repo.path / RUNNER_FILE
    planted.write_text(f'{{"private_key": "{PRIVATE_KEY}"}}\n')
    planted.chmod(0o600)
    return planted


def _base(repo: GitRepo, extra: dict[str, str] | None = None) -> str:
    return repo.commit(
        "agents and evals",
        {
            ".gitignore": "gha-creds-*.json\n",
            "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=BASE_PROMPT),
            "evals/support-bot.yaml": SUPPORT_EVAL,
            "evals/fixtures/order-status.yaml": ORDER_FIXTURE,
            "evals/fixtures/greeting.yaml": GREETING_FIXTURE,
            **(extra or {}),
        },
    )


def _gate(
    repo: GitRepo,
    github: FakeGitHub,
    base: str,
    head: str,
    env: dict[str, str],
    cgroups: str | None = None,
) -> ActionRun:
    """The action on pull request 7; with `cgroups`, the cgroup file system as it says
    (support/cgroup_modes.py), the log checked to say which containment holds."""
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    event = pull_request_event(github.repository, 7, base, head)
    if cgroups is None:
        return run_action(repo.path, github, event, env=env)
    run = run_gate_in(cgroups, repo.path, github, event, **env)
    if "runs start after" in run.stdout:  # a run started: the log says how it is contained
        holds = "in a cgroup each" if cgroups == "writable" else "a uid sweep over every thread"
        assert holds in run.stdout, run.stdout
    return run


def _assert_key_reached_nothing(
    run: ActionRun, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    assert model.requests_mentioning("RUNNER-ONLY-7f3a9c") == []
    assert "RUNNER-ONLY-7f3a9c" not in run.stdout + run.stderr
    for posted in github.comments_on(7):
        assert "RUNNER-ONLY-7f3a9c" not in posted["body"]


def test_a_runner_file_named_as_system_file_is_refused_at_its_line(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base = _base(repo)
    repo.branch("feature")
    leaking = SUPPORT_BOT.format(prompt="x").replace(
        '  system: "x"\n', f"  systemFile: {RUNNER_FILE}\n"
    )
    head = repo.commit("read the prompt from a file", {"agents/support-bot.yaml": leaking})
    _plant_runner_file(repo)
    script_model(model, head_greets_well=True)

    run = _gate(repo, github, base, head, env)

    assert run.returncode == 2, run.stdout + run.stderr
    expected = (
        f"agents/support-bot.yaml:7:3: spec.systemFile: the file {RUNNER_FILE!r} is not a file "
        f"of commit {head[:12]} (untracked, git-ignored or written by another workflow step"
    )
    assert expected in run.stderr
    assert run.outputs["result"] == "fail"
    _assert_key_reached_nothing(run, github, model)


def test_a_runner_file_behind_a_committed_link_is_refused(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base = _base(repo)
    repo.branch("feature")
    os.symlink(f"../{RUNNER_FILE}", repo.path / "agents" / "prompt.md")
    linked = SUPPORT_BOT.format(prompt="x").replace(
        '  system: "x"\n', "  systemFile: agents/prompt.md\n"
    )
    head = repo.commit("a prompt through a link", {"agents/support-bot.yaml": linked})
    _plant_runner_file(repo)
    script_model(model, head_greets_well=True)

    run = _gate(repo, github, base, head, env)

    assert run.returncode == 2, run.stdout + run.stderr
    assert (
        "agents/support-bot.yaml:7:3: spec.systemFile: the file 'agents/prompt.md' is not a file"
        in run.stderr
    )
    _assert_key_reached_nothing(run, github, model)


AGENTV_LEAK = f"""\
execution: {{ target: support-bot }}
evalcases:
  - id: leaky-hello
    input:
      - role: user
        content:
          - {{ type: text, value: "Hello there!" }}
          - {{ type: file, value: /{RUNNER_FILE} }}
    assertions:
      - {{ type: contains, value: Hello }}
"""


def test_a_runner_file_named_as_an_agentv_file_input_is_refused_at_its_line(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base = _base(repo)
    repo.branch("feature")
    head = repo.commit("an AgentV suite", {"evals/leak.yaml": AGENTV_LEAK})
    _plant_runner_file(repo)
    script_model(model, head_greets_well=True)

    run = _gate(repo, github, base, head, env)

    assert run.returncode == 2, run.stdout + run.stderr
    expected = (
        f"evals/leak.yaml:8:27: evalcases[0].input[0].content[1].value: file reference "
        f"'/{RUNNER_FILE}' is not a file of commit {head[:12]}"
    )
    assert expected in run.stderr
    _assert_key_reached_nothing(run, github, model)


AGENT_PYTHON = "/usr/bin/python3"
"""An interpreter every user may run: the agent runs as an agent user."""

COPY_READER = f"""\
import json, os, sys
sys.stdin.readline()
try:
    with open({RUNNER_FILE!r}) as planted:
        answer = "LEAKED " + planted.read()
except FileNotFoundError:
    answer = "GOOD: nothing planted"
except OSError as exc:
    answer = "GOOD: " + exc.strerror
print(json.dumps({{"type": "final", "content": answer}}), flush=True)
"""

COPY_AGENT = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: bot }}
spec:
  runtime: {{ command: {{ run: [{AGENT_PYTHON}, agent/bot.py] }} }}
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: bot-eval }}
spec:
  targetAgent: bot
  fixtures: [fa]
  scoring: {{ passThreshold: 1.0 }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: fa }}
spec:
  targetAgent: bot
  input: {{ type: prompt, payload: {{ prompt: question-a }} }}
  assertions: [ {{ type: contains, value: GOOD }} ]
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="a working copy for an agent user needs root")
@pytest.mark.skipif(not os.access(AGENT_PYTHON, os.X_OK), reason=f"no {AGENT_PYTHON}")
@pytest.mark.parametrize("cgroups", MODES)
def test_a_runner_file_is_not_in_the_head_agents_working_copy(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    cgroups: str,
) -> None:
    """No `watch`: the agent's copy is its whole commit, and only its commit."""
    base = repo.commit(
        "a command agent",
        {
            ".gitignore": "gha-creds-*.json\n",
            "agents/bot.yaml": COPY_AGENT,
            "agent/bot.py": COPY_READER.replace("GOOD: nothing", "GOOD: base, nothing"),
        },
    )
    repo.branch("feature")
    head = repo.commit("read what the runner left", {"agent/bot.py": COPY_READER})
    _plant_runner_file(repo)

    run = _gate(repo, github, base, head, env, cgroups)

    answers = {f["side"]: f["status"] for f in run.results()["fixtures"]}
    assert answers == {"base": "pass", "head": "pass"}, run.stdout + run.stderr
    assert run.returncode == 0, run.stdout + run.stderr
    _assert_key_reached_nothing(run, github, model)
    assert "RUNNER-ONLY-7f3a9c" not in (run.output_dir / "results.json").read_text()


def _leaky_eval(playground: str) -> str:
    """An Eval the pull request adds, for its changed agent, whose playground names the
    runner's file."""
    return f"""\
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: leaky-playground }}
spec:
  targetAgent: support-bot
  fixtures: [leaky-hello]
  playground:
    name: leak
{playground}---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: leaky-hello }}
spec:
  targetAgent: support-bot
  input: {{ type: prompt, payload: {{ prompt: "Hello there!" }} }}
  assertions:
    - {{ type: contains, value: Hello }}
"""


def _gate_a_leaky_head(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    files: dict[str, str],
    cgroups: str | None = None,
) -> tuple[ActionRun, str]:
    base = _base(repo)
    repo.branch("feature")
    changed = {"agents/support-bot.yaml": SUPPORT_BOT.format(prompt=HEAD_PROMPT), **files}
    head = repo.commit("name the runner's file", changed)
    _plant_runner_file(repo)
    script_model(model, head_greets_well=True)
    return _gate(repo, github, base, head, env, cgroups), head


@pytest.mark.parametrize(
    ("part", "column"),
    [("sqlite", 15), ("files", 14)],
)
def test_a_runner_file_named_as_a_playground_seed_is_refused_at_its_line(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    part: str,
    column: int,
) -> None:
    playground = f"    {part}: {{ seed: {RUNNER_FILE} }}\n"
    run, head = _gate_a_leaky_head(
        repo, github, model, env, {"evals/leak.yaml": _leaky_eval(playground)}
    )

    assert run.returncode == 2, run.stdout + run.stderr
    expected = (
        f"evals/leak.yaml:9:{column}: spec.playground.{part}.seed: playground 'leak': the seed "
        f"{RUNNER_FILE!r} is not a file of commit {head[:12]} (untracked, git-ignored or "
        "written by another workflow step"
    )
    assert expected in run.stderr
    assert run.outputs["result"] == "fail"
    _assert_key_reached_nothing(run, github, model)
    results = run.output_dir / "results.json"
    assert not results.exists() or "RUNNER-ONLY-7f3a9c" not in results.read_text()


def _leaky_fixture(assertion: str) -> str:
    """An Eval and fixture the pull request adds whose criterion names the runner's file."""
    return f"""\
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: leaky-scorer }}
spec:
  targetAgent: support-bot
  fixtures: [leaky-hello]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: leaky-hello }}
spec:
  targetAgent: support-bot
  input: {{ type: prompt, payload: {{ prompt: "Hello there!" }} }}
  assertions:
{assertion}"""


def test_a_runner_file_named_as_a_code_scorer_is_refused_at_its_line(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Read as root, the key would be the scorer's source: shown in a compile error, or run."""
    assertion = f"    - {{ type: code, language: python, file: {RUNNER_FILE} }}\n"
    run, head = _gate_a_leaky_head(
        repo, github, model, env, {"evals/leak.yaml": _leaky_fixture(assertion)}
    )

    assert run.returncode == 2, run.stdout + run.stderr
    expected = (
        f"evals/leak.yaml:15:39: spec.assertions[0].file: the scorer {RUNNER_FILE!r} is not a "
        f"file of commit {head[:12]} (untracked, git-ignored or written by another workflow step"
    )
    assert expected in run.stderr
    _assert_key_reached_nothing(run, github, model)


def test_a_runner_file_named_as_a_scorers_requirements_is_refused_at_its_line(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    assertion = (
        "    - type: code\n"
        "      file: scorers/hello.py\n"
        f"      environment: {{ python: {RUNNER_FILE} }}\n"
    )
    scorer = "def score(trace, state):\n    return True\n"
    files = {"evals/leak.yaml": _leaky_fixture(assertion), "scorers/hello.py": scorer}
    run, _ = _gate_a_leaky_head(repo, github, model, env, files)

    assert run.returncode == 2, run.stdout + run.stderr
    expected = (
        "evals/leak.yaml:17:22: spec.assertions[0].environment.python: the scorer's "
        f"environment file {RUNNER_FILE!r} is not in the repository"
    )
    assert expected in run.stderr
    _assert_key_reached_nothing(run, github, model)


def test_a_runner_file_named_as_an_agents_requirements_is_refused_at_its_line(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """An environment is installed from a copy of the side: a requirements file read from
    the workspace would hand the key to the installer (and its error to the log)."""
    files = {".gitignore": "gha-creds-*.json\n", "agents/bot.yaml": COPY_AGENT}
    base = repo.commit("a command agent", {**files, "agent/bot.py": COPY_READER})
    repo.branch("feature")
    installs = COPY_AGENT.replace(
        "  runtime:", f"  environment: {{ python: {RUNNER_FILE} }}\n  runtime:", 1
    )
    head = repo.commit("install the runner's file", {"agents/bot.yaml": installs})
    _plant_runner_file(repo)

    run = _gate(repo, github, base, head, env)

    assert run.returncode == 2, run.stdout + run.stderr
    expected = (
        f"agents/bot.yaml:5:18: spec.environment.python: the file {RUNNER_FILE!r} is not a "
        f"file of commit {head[:12]}"
    )
    assert expected in run.stderr
    _assert_key_reached_nothing(run, github, model)


@pytest.mark.parametrize("cgroups", MODES)
def test_a_runner_file_named_as_an_mcp_server_program_is_refused_at_its_line(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    cgroups: str,
) -> None:
    """Root may run a 0600 file; the check said only "inside the repository"."""
    agent = (
        SUPPORT_BOT.format(prompt=HEAD_PROMPT)
        + f"  mcpServers:\n    orders: {{ command: [./{RUNNER_FILE}] }}\n"
    )
    files = {"agents/support-bot.yaml": agent}
    run, head = _gate_a_leaky_head(repo, github, model, env, files, cgroups)

    assert run.returncode == 2, run.stdout + run.stderr
    expected = (
        "agents/support-bot.yaml:19:15: spec.mcpServers.orders.command: the program "
        f"'./{RUNNER_FILE}' is not a file of commit {head[:12]}"
    )
    assert expected in run.stderr
    _assert_key_reached_nothing(run, github, model)


def test_a_yaml_file_the_commit_lacks_is_no_resource_of_it(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """A definition another step left under a resource root (ignored, never committed)
    would otherwise gate the pull request with what the commit does not say."""
    base = _base(repo, {".gitignore": "gha-creds-*.json\nevals/planted.yaml\n"})
    repo.branch("feature")
    changed = {"agents/support-bot.yaml": SUPPORT_BOT.format(prompt=HEAD_PROMPT)}
    head = repo.commit("sharpen the prompt", changed)
    (repo.path / "evals" / "planted.yaml").write_text(
        _leaky_fixture("    - { type: contains, value: PLANTED-NEVER-SAID }\n")
    )
    script_model(model, head_greets_well=True)

    run = _gate(repo, github, base, head, env)

    assert run.returncode == 0, run.stdout + run.stderr
    assert "leaky-scorer" not in run.stdout + run.stderr
    assert {f["eval"] for f in run.results()["fixtures"]} == {"support-bot-eval"}


def test_a_definition_rewritten_in_the_workspace_is_read_from_the_commit(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """A step before evalward (one that runs the pull request's own install scripts) can
    rewrite a committed definition in the workspace: the commit's definition gates, and a
    problem in it is located at the commit's line, not the rewritten file's."""
    base = _base(repo)
    repo.branch("feature")
    unservable = SUPPORT_BOT.format(prompt=HEAD_PROMPT).replace("openai/gpt-test", "nosuch/x")
    head = repo.commit("a model no provider serves", {"agents/support-bot.yaml": unservable})
    rewritten = "# rewritten\n# by another\n# step\n" + SUPPORT_BOT.format(prompt=HEAD_PROMPT)
    (repo.path / "agents" / "support-bot.yaml").write_text(rewritten)
    script_model(model, head_greets_well=True)

    run = _gate(repo, github, base, head, env)

    assert run.returncode == 2, run.stdout + run.stderr
    assert "agents/support-bot.yaml:6:12: spec.models[0]" in run.stderr, run.stderr
    assert "nosuch/x" in run.stderr
    assert model.requests == [], "no model is called before the refusal"


@pytest.mark.skipif(not os.access(AGENT_PYTHON, os.X_OK), reason=f"no {AGENT_PYTHON}")
@pytest.mark.parametrize("cgroups", MODES)
def test_a_runner_file_run_as_an_interpreters_script_is_refused_at_its_line(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    cgroups: str,
) -> None:
    """`python3 ./gha-creds-….json` would have the interpreter read the key (and print its
    first line in a syntax error): the script is not a file of the head's commit, so the
    gate is refused at its line before any run starts."""
    files = {".gitignore": "gha-creds-*.json\n", "agents/bot.yaml": COPY_AGENT}
    base = repo.commit("a command agent", {**files, "agent/bot.py": COPY_READER})
    repo.branch("feature")
    runs_the_key = COPY_AGENT.replace("agent/bot.py", f"./{RUNNER_FILE}")
    head = repo.commit("run the runner's file", {"agents/bot.yaml": runs_the_key})
    _plant_runner_file(repo)

    run = _gate(repo, github, base, head, env, cgroups)

    assert run.returncode == 2, run.stdout + run.stderr
    expected = (
        f"agents/bot.yaml:5:49: spec.runtime.command.run[1]: agent 'bot': its runtime runs "
        f"'./{RUNNER_FILE}', which is not a file of commit {head[:12]}"
    )
    assert expected in run.stderr, run.stderr
    assert "base bot-eval" not in run.stdout, "refused before any run starts"
    _assert_key_reached_nothing(run, github, model)


@pytest.mark.skipif(os.geteuid() != 0, reason="a working copy for an agent user needs root")
@pytest.mark.skipif(not os.access(AGENT_PYTHON, os.X_OK), reason=f"no {AGENT_PYTHON}")
@pytest.mark.parametrize("cgroups", MODES)
def test_a_script_only_the_base_lacks_does_not_refuse_the_gate(
    repo: GitRepo,
    github: FakeGitHub,
    model: ScriptedModelServer,
    env: dict[str, str],
    cgroups: str,
) -> None:
    """The pull request cannot change the base: the base's programs are not asked before
    the runs (the base's run fails on its own), and the head that commits the script runs."""
    base = repo.commit("an agent whose script was never committed", {"agents/bot.yaml": COPY_AGENT})
    repo.branch("feature")
    head = repo.commit("commit the script", {"agent/bot.py": COPY_READER})

    run = _gate(repo, github, base, head, env, cgroups)

    assert run.returncode != 2, run.stdout + run.stderr
    assert "is not a file of" not in run.stderr
    answers = {f["side"]: f["status"] for f in run.results()["fixtures"]}
    assert answers["head"] == "pass", run.stdout + run.stderr
    assert answers["base"] != "pass", run.stdout + run.stderr
