"""`evalward validate` refuses a program an agent names that is not there, at its YAML line:
a misspelt interpreter or a missing script of a command tool, an MCP server or a runtime, as
docs/cli.md says, instead of leaving it to the first run that starts it."""

from __future__ import annotations

from support.clirun import evalward
from support.documents import documents, eval_for
from support.gitrepo import GitRepo

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
        "'refund' runs 'pythonnn3', which is not on PATH"
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
