"""`evalward import promptfoo CONFIG` in-process (`cli/import_config.py`): a promptfoo suite
written as evalward's agents, fixtures and Evals, with its provider settings, a note for each
dollar check on an unpriced model and a line for each part left out; a config that is not
there, and files that exist, refused with nothing written."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml

from evalward.cli import import_config
from evalward.errors import ConfigError
from support.clirun import build_parser, in_process, quiet_host, refused
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

CONFIG = """\
description: Greeter
prompts: ["Say hello to {{name}}"]
providers: [openai:gpt-4.1-mini, "ollama:chat:llama3"]
tests:
  - vars: {name: Ada}
    assert:
      - {type: contains, value: Ada}
      - {type: cost, threshold: 0.01}
      - {type: perplexity, threshold: 2}
"""


@pytest.fixture
def suite(repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> GitRepo:
    """A repository holding a promptfoo config, the working directory (the import writes
    where it is run, as the command line does)."""
    repo.commit("a promptfoo suite", {"promptfooconfig.yaml": CONFIG})
    monkeypatch.chdir(repo.path)
    return repo


def imported(repo: GitRepo, *argv: str) -> tuple[int, str]:
    return in_process(
        import_config.main,
        *("import", "promptfoo", "promptfooconfig.yaml", *argv),
        host=quiet_host(repo.path),
    )


def test_a_suite_is_written_as_resources_with_what_was_left_out_listed(suite: GitRepo) -> None:
    code, said = imported(suite, "--skip-unsupported")
    assert code == 0
    lines = said.splitlines()
    assert lines[0] == (
        "evalward import: promptfooconfig.yaml → evals/greeter/: 2 agents, 2 fixtures, 2 evals; "
        "evalward.yaml with its provider settings"
    )
    assert (
        "note: 1 fixture(s) check `cost` in dollars on ollama/llama3, which evalward has no price"
        in said
    )
    assert lines[-3] == (
        "left out: promptfooconfig.yaml:9:9: tests[0].assert[2]: `perplexity` has no "
        "equivalent among evalward's assertions"
    )
    assert lines[-1] == "Next: evalward validate, then evalward run"
    folder = suite.path / "evals" / "greeter"
    agents = list(yaml.safe_load_all((folder / "agents.yaml").read_text()))
    assert sorted(m for a in agents for m in a["spec"]["models"]) == [
        "ollama/llama3",
        "openai/gpt-4.1-mini",
    ]
    assert (
        (folder / "evals.yaml")
        .read_text()
        .startswith(
            "# Converted from promptfooconfig.yaml by `evalward import promptfoo`: one Eval per "
            "prompt and provider.\n"
        )
    )
    settings = yaml.safe_load((suite.path / "evalward.yaml").read_text())
    assert settings["providers"]["ollama"] == {
        "api": "openai",
        "baseUrl": "http://localhost:11434/v1",
    }


def test_a_part_with_no_equivalent_stops_the_import_before_anything_is_written(
    suite: GitRepo,
) -> None:
    args = build_parser().parse_args(["import", "promptfoo", "promptfooconfig.yaml"])
    with pytest.raises(ConfigError, match="`perplexity` has no equivalent"):
        import_config.main(args, io.StringIO(), quiet_host(suite.path))
    assert sorted(p.name for p in suite.path.iterdir()) == [".git", "promptfooconfig.yaml"]


def test_files_that_exist_are_never_overwritten(suite: GitRepo) -> None:
    assert imported(suite, "--skip-unsupported", "--output-dir", "mine")[0] == 0
    before = (suite.path / "mine" / "fixtures.yaml").read_text()
    with pytest.raises(ConfigError) as raised:
        imported(suite, "--skip-unsupported", "--output-dir", "mine")
    assert str(raised.value).startswith(
        "mine/agents.yaml, mine/fixtures.yaml, mine/evals.yaml already exist"
    )
    assert (suite.path / "mine" / "fixtures.yaml").read_text() == before


def test_a_config_that_is_not_there_is_refused(
    suite: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    said = refused(capsys, "import", "promptfoo", "promptfoo.yaml", host=quiet_host(suite.path))
    assert said == "promptfoo.yaml: no such file; give the promptfoo config to import"
    assert not Path("evals").exists()
