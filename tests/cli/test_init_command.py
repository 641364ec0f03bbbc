"""`evalward init` in-process (`cli/init.py`): the files it writes, filled in with the agent's
name, its model's provider and key and the branch pull requests go to; outside a git
repository, said so; a file it would write that exists, refused with nothing written."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

import pytest
import yaml

from evalward.cli import init
from support.clirun import in_process, quiet_host, refused
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration


def test_an_mcp_agent_of_another_provider_is_written_with_its_server_and_key(
    repo: GitRepo,
) -> None:
    code, said = in_process(
        init.main,
        *("init", str(repo.path), "--agent", "support-bot"),
        *("--model", "anthropic/claude-haiku-4-5", "--mcp", "--conversation"),
        host=quiet_host(repo.path),
    )
    assert code == 0
    lines = said.splitlines()
    assert lines[:11] == [
        f"evalward init: wrote in {repo.path}:",
        "  evalward.yaml",
        "  agents/support-bot.yaml",
        "  prompts/support-bot.md",
        "  evals/support-bot.yaml",
        "  evals/mock-replies.yaml",
        "  .github/workflows/evals.yml",
        "  evals/support-bot-conversation.yaml",
        "  mcp/orders_server.py",
        "  mcp/requirements.txt",
        "  .gitignore (created, ignoring .evalward/)",
    ]
    assert "  ANTHROPIC_API_KEY=... evalward run   # the model itself" in lines
    assert lines[-1] == init.MCP_STEP
    agent = yaml.safe_load((repo.path / "agents/support-bot.yaml").read_text())
    assert agent["metadata"] == {"name": "support-bot"}
    assert agent["spec"]["models"] == ["anthropic/claude-haiku-4-5"]
    assert agent["spec"]["mcpServers"]["orders"]["command"] == ["python3", "mcp/orders_server.py"]
    server = files("evalward.cli").joinpath("init_files", "mcp_server.py").read_text()
    assert (repo.path / "mcp/orders_server.py").read_text() == server
    workflow = (repo.path / ".github/workflows/evals.yml").read_text()
    assert "__" not in workflow  # every placeholder filled in
    assert "ANTHROPIC_API_KEY: ${{ secrets.ANTHROPIC_API_KEY }}" in workflow
    script = (repo.path / "evals/mock-replies.yaml").read_text()
    assert "fixture: support-bot-order-conversation" in script  # the conversation's replies


def test_the_workflow_gates_the_branch_the_repository_has(repo: GitRepo) -> None:
    repo.git("checkout", "-q", "-b", "trunk")
    repo.commit("readme", {"README.md": "hello\n"})
    repo.write(
        {".gitignore": "*.log"}
    )  # no newline at its end: the entry goes on a line of its own
    code, said = in_process(init.main, "init", str(repo.path), host=quiet_host(repo.path))
    assert code == 0
    assert "its push runs on trunk fill the result cache" in said
    assert "    branches: [trunk]" in (repo.path / ".github/workflows/evals.yml").read_text()
    assert (repo.path / ".gitignore").read_text() == "*.log\n.evalward/\n"
    assert "  .gitignore (added .evalward/)" in said.splitlines()


def test_outside_a_git_repository_it_writes_and_says_to_run_git_init(tmp_path: Path) -> None:
    code, said = in_process(init.main, "init", str(tmp_path), host=quiet_host(tmp_path))
    assert code == 0
    assert said.rstrip().endswith(f"{tmp_path} is not a git repository yet: run `git init` there.")
    assert "    branches: [main]" in (tmp_path / ".github/workflows/evals.yml").read_text()


def test_a_file_it_would_write_that_exists_is_refused_and_nothing_is_written(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write({"prompts/assistant.md": "mine\n"})
    said = refused(capsys, "init", str(repo.path), host=quiet_host(repo.path))
    assert said == (
        f"{repo.path}: 1 of the files `evalward init` writes already exist, so nothing was "
        "written: prompts/assistant.md. Move them away, or give another agent name with --agent"
    )
    assert sorted(p.name for p in repo.path.iterdir()) == [".git", "prompts"]
    assert (repo.path / "prompts/assistant.md").read_text() == "mine\n"
