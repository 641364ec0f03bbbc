"""`evalward validate` refuses a program an agent names that is not there, at its YAML line:
a misspelt interpreter or a missing script of a command tool, an MCP server or a runtime, as
docs/cli.md says, instead of leaving it to the first run that starts it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.clirun import evalward
from support.documents import documents, eval_for
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

FIXTURE = """\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: { name: bot-run }
spec:
  targetAgent: bot
  input: { type: prompt, payload: { prompt: "Refund order 7." } }
  assertions: [{ type: contains, value: done }]
"""


def agent(spec: str) -> str:
    return f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: bot }}
spec:
{spec}"""


def validate(repo: GitRepo, spec: str, files: dict[str, str] | None = None) -> tuple[int, str]:
    suite = documents(agent(spec), eval_for("bot", "fixtures: [bot-run]"), FIXTURE)
    repo.commit("bot", {"agents.yaml": suite, **(files or {})})
    done = evalward("validate", ".", cwd=repo.path)
    return done.returncode, done.stdout + done.stderr


TOOL = """\
  models: [openai/gpt-4.1-mini]
  tools:
    - name: refund
      description: Refund an order.
      parameters: {{ type: object }}
      command: {{ run: {run} }}
      sideEffects: false
"""


def test_a_command_tool_whose_interpreter_is_misspelt_is_refused_at_its_line(
    repo: GitRepo,
) -> None:
    code, said = validate(
        repo, TOOL.format(run="[pythonnn3, tools/refund.py]"), {"tools/refund.py": ""}
    )
    assert code == 2, said
    assert (
        "agents.yaml:10:24: spec.tools[0].command.run[0]: agent 'bot': the command tool "
        "'refund' runs 'pythonnn3', which is on no PATH: not this machine's, not the action's "
        "image's (python3, node, uv, ...); expected a program on PATH by its name, or a file "
        "of the repository by its path from the root (`tools/serve.sh`); fix the name "
        "(`python3`?), or install the program"
    ) in said, said
    assert "evals OK" not in said


def test_a_command_tool_whose_script_is_not_in_the_repository_is_refused(repo: GitRepo) -> None:
    code, said = validate(repo, TOOL.format(run="[python3, tools/refund.py]"))
    assert code == 2, said
    assert (
        "spec.tools[0].command.run[1]: agent 'bot': the command tool 'refund' runs "
        "'tools/refund.py', which is not a file of the repository"
    ) in said, said


def test_an_mcp_server_whose_script_is_missing_is_refused(repo: GitRepo) -> None:
    spec = """\
  models: [openai/gpt-4.1-mini]
  mcpServers:
    refunds:
      command: [python3, -u, mcp/refunds.py]
"""
    code, said = validate(repo, spec)
    assert code == 2, said
    assert (
        "agents.yaml:8:30: spec.mcpServers.refunds.command[2]: agent 'bot': the MCP "
        "server 'refunds' runs 'mcp/refunds.py', which is not a file of the repository"
    ) in said, said


def test_a_runtime_whose_program_path_is_missing_is_refused_once(repo: GitRepo) -> None:
    spec = """\
  runtime:
    command: { run: [bin/agent.sh, "{input}"] }
"""
    code, said = validate(repo, spec)
    assert code == 2, said
    assert (
        "1 problem" in said
        and "spec.runtime.command.run[0]: the program 'bin/agent.sh' does " in said
    ), said


def test_programs_that_are_there_pass(repo: GitRepo) -> None:
    """On PATH, in the checkout, a module (`-m`), inline code, a placeholder, and a program
    an agent's `environment` installs."""
    spec = """\
  models: [openai/gpt-4.1-mini]
  tools:
    - name: refund
      description: Refund an order.
      parameters: { type: object }
      command: [python3, tools/refund.py]
    - name: lookup
      description: Look an order up.
      parameters: { type: object }
      command: [python3, -m, json.tool]
    - name: greet
      description: Greet.
      parameters: { type: object }
      command: [sh, -c, "echo hi"]
  mcpServers:
    orders: { command: [tools/serve.sh] }
"""
    files = {"tools/refund.py": "", "tools/serve.sh": "#!/bin/sh\n"}
    (repo.path / "tools").mkdir(parents=True, exist_ok=True)
    (repo.path / "tools" / "serve.sh").write_text("#!/bin/sh\n")
    (repo.path / "tools" / "serve.sh").chmod(0o755)
    code, said = validate(repo, spec, files)
    assert (code, said.strip()) == (0, "1 agents, 1 fixtures, 1 evals OK"), said


MCP_WITH_ENVIRONMENT = """\
  models: [openai/gpt-4.1-mini]
  mcpServers:
    refunds:
      command: [{program}, mcp/refunds.py]
  environment:
    python: mcp/requirements.txt
"""
SERVER_FILES = {"mcp/refunds.py": "", "mcp/requirements.txt": "mcp\n"}


def test_an_mcp_server_of_an_agent_with_an_environment_whose_interpreter_is_misspelt_is_refused(
    repo: GitRepo,
) -> None:
    """The environment's virtualenv gives its interpreter python, python3 and python3.N only:
    `pythonnn3` is on no PATH, whatever its packages install."""
    code, said = validate(repo, MCP_WITH_ENVIRONMENT.format(program="pythonnn3"), SERVER_FILES)
    assert code == 2, said
    assert (
        "agents.yaml:8:17: spec.mcpServers.refunds.command[0]: agent 'bot': the MCP server "
        "'refunds' runs 'pythonnn3', which is on no PATH: not this machine's, not the "
        "action's image's"
    ) in said, said
    assert "fix the name (`python3`?), or install the program" in said, said
    assert "evals OK" not in said and "Traceback" not in said


def test_a_program_its_environment_may_install_is_a_located_warning(repo: GitRepo) -> None:
    """A console script (`fastmcp`) exists only once the action builds the environment: told
    at its line, not refused."""
    code, said = validate(
        repo, MCP_WITH_ENVIRONMENT.format(program="fastmcp-evalward-test"), SERVER_FILES
    )
    assert code == 0, said
    assert (
        "warning: agents.yaml:8:17: spec.mcpServers.refunds.command[0]: agent 'bot': the MCP "
        "server 'refunds' runs 'fastmcp-evalward-test', which is not on this machine's PATH: "
        "it runs only if its environment (mcp/requirements.txt) installs a program of that name"
    ) in said, said
    assert "1 agents, 1 fixtures, 1 evals OK" in said, said


def test_a_program_only_the_actions_image_has_is_a_warning_where_this_machine_lacks_it(
    repo: GitRepo, tmp_path: Path
) -> None:
    """`node` on no PATH of this machine (the PATH given holds git alone): the action's
    `-node` image has it, so the definition is not wrong, only not runnable here."""
    only_git = tmp_path / "bin"
    only_git.mkdir()
    git = shutil.which("git")
    assert git is not None
    (only_git / "git").symlink_to(git)
    suite = documents(
        agent("  runtime:\n    command: [node, agent.js]\n"),
        eval_for("bot", "fixtures: [bot-run]"),
        FIXTURE,
    )
    repo.commit("bot", {"agents.yaml": suite, "agent.js": ""})
    done = evalward("validate", ".", cwd=repo.path, PATH=str(only_git))
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert (
        "warning: agents.yaml:6:15: spec.runtime.command[0]: agent 'bot': its runtime "
        "runs 'node', which is not on this machine's PATH: it runs in the action's `-node` "
        "image, which has it, but not here"
    ) in said, said


def test_a_bare_name_that_is_a_file_of_the_repository_is_refused_with_its_path(
    repo: GitRepo,
) -> None:
    """argv[0] without a `/` is looked up on PATH, never in the working directory."""
    code, said = validate(repo, TOOL.format(run="[serve.sh]"), {"serve.sh": "#!/bin/sh\n"})
    assert code == 2, said
    assert (
        "agents.yaml:10:24: spec.tools[0].command.run[0]: agent 'bot': the command tool "
        "'refund' runs 'serve.sh', which is not on PATH: a file of the repository runs only "
        "by its path from the root; write `./serve.sh`"
    ) in said, said


def test_a_playground_services_program_on_no_path_is_refused_at_its_line(repo: GitRepo) -> None:
    """A service's `start` and `dump` are programs too, started when a run provisions it."""
    spec = "  models: [openai/gpt-4.1-mini]\n"
    playground = (
        "playground:\n"
        "    service:\n"
        "      start: [pythonnn3, api/serve.py, --port, '{port}']\n"
        "      dump: [python3, api/dump.py]\n"
    )
    suite = documents(agent(spec), eval_for("bot", "fixtures: [bot-run]", playground), FIXTURE)
    repo.commit("bot", {"agents.yaml": suite, "api/serve.py": ""})
    done = evalward("validate", ".", cwd=repo.path)
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    assert (
        "spec.playground.service.start[0]: Eval 'bot-eval': its playground service's `start` "
        "runs 'pythonnn3', which is on no PATH"
    ) in said, said
    assert (
        "spec.playground.service.dump[1]: Eval 'bot-eval': its playground service's `dump` "
        "runs 'api/dump.py', which is not a file of the repository"
    ) in said, said
    assert "2 problems" in said, said


def test_a_service_given_its_data_folder_on_its_command_line_is_warned_of(
    repo: GitRepo,
) -> None:
    """A command line is every user's to read: the agent, the service's own user, would find
    the service's folder there and could write into it what the service reports."""
    spec = "  models: [openai/gpt-4.1-mini]\n"
    playground = (
        "playground:\n"
        "    service:\n"
        "      start: [python3, api/serve.py, '{port}', '--data={data}']\n"
        "      dump: [python3, api/dump.py]\n"
    )
    select = "fixtures: [bot-run, bot-again]"  # two runs of one service: one warning
    again = FIXTURE.replace("bot-run", "bot-again")
    suite = documents(agent(spec), eval_for("bot", select, playground), FIXTURE, again)
    repo.commit("bot", {"agents.yaml": suite, "api/serve.py": "", "api/dump.py": ""})
    line = suite.splitlines().index(
        "      start: [python3, api/serve.py, '{port}', '--data={data}']"
    )

    done = evalward("validate", ".", cwd=repo.path)

    assert done.returncode == 0, done.stdout + done.stderr
    (warning,) = [w for w in done.stdout.splitlines() if w.startswith("warning")]
    assert (
        warning.startswith(f"warning: agents.yaml:{line + 1}:")
        and "spec.playground.service.start[3]: playground" in warning
    ), warning
    assert "read it from $EVALWARD_SERVICE_DATA instead" in warning
