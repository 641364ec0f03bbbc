"""`evalward promote TRACE --agent A` in-process (`cli/promote.py`): a recorded conversation
turned into an EvalFixture, printed or added to a file of the repository (which then
validates with it), replaced by name the second time; a fixture name that is not one,
refused."""

from __future__ import annotations

import pytest
import yaml

from evalward.cli import promote, validate
from support.clirun import REPO_ROOT, in_process, initialised, quiet_host, refused
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

TRACE = str(REPO_ROOT / "tests" / "data" / "traces" / "openai.json")


@pytest.fixture
def started(repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> GitRepo:
    """`evalward init`'s repository, the working directory (whose git config names who
    promotes)."""
    initialised(repo)
    repo.git("config", "user.email", "promoter@example.com")
    monkeypatch.chdir(repo.path)
    return repo


def test_a_trace_is_printed_as_a_fixture_with_the_checks_asked_for(started: GitRepo) -> None:
    code, said = in_process(
        promote.main,
        *("promote", TRACE, "--agent", "assistant", "--kind", "edge"),
        *("--contains", "shipped", "--rubric", "Gives the status."),
        host=quiet_host(started.path),
    )
    assert code == 0
    fixture = yaml.safe_load(said)
    assert fixture["kind"] == "EvalFixture"
    assert fixture["metadata"] == {
        "name": "promoted-conv-openai-0001",
        "labels": {"agent": "assistant"},
    }
    spec = fixture["spec"]
    assert (spec["targetAgent"], spec["kind"]) == ("assistant", "edge")
    assert spec["input"] == {"type": "prompt", "payload": {"prompt": "Where is my order 12345?"}}
    assert spec["origin"]["promotedBy"] == "promoter@example.com"
    kinds = [a["type"] for a in spec["assertions"]]
    assert kinds[:1] == ["toolCalled"] and "contains" in kinds and "judge" in kinds
    assert [r["tool"] for r in spec["toolReplay"]] == ["lookup_order"]


def test_a_fixture_added_to_the_repository_validates_and_is_replaced_by_name(
    started: GitRepo,
) -> None:
    target = started.path / "evals" / "assistant.yaml"
    argv = ("promote", TRACE, "--agent", "assistant", "--name", "from-trace", "-o", str(target))
    host = quiet_host(started.path)
    assert in_process(promote.main, *argv, host=host) == (
        0,
        f"evalward: fixture from-trace added in {target}\n",
    )
    code, said = in_process(validate.main, "validate", str(started.path), host=host)
    assert (code, said) == (0, "1 agents, 3 fixtures, 1 evals OK\n")

    assert in_process(promote.main, *argv, host=host)[1] == (
        f"evalward: fixture from-trace replaced in {target}\n"
    )
    names = [d["metadata"]["name"] for d in yaml.safe_load_all(target.read_text())]
    assert names.count("from-trace") == 1


def test_a_name_that_is_no_fixture_name_is_refused(
    started: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    said = refused(
        capsys,
        *("promote", TRACE, "--agent", "assistant", "--name", "From Trace"),
        host=quiet_host(started.path),
    )
    assert said.startswith("--name 'From Trace': a fixture name is lowercase letters, digits")


def test_a_file_of_the_user_s_beside_the_fixtures_file_is_never_written_over(
    started: GitRepo,
) -> None:
    """The edited file is written beside it under a name nothing else has: a fixed name
    (`.assistant.yaml.partial`) wrote over, then removed, a file the user kept by it."""
    target = started.path / "evals" / "assistant.yaml"
    kept = target.with_name(".assistant.yaml.partial")
    kept.write_text("the user's own\n")
    argv = ("promote", TRACE, "--agent", "assistant", "--name", "from-trace", "-o", str(target))
    assert in_process(promote.main, *argv, host=quiet_host(started.path))[0] == 0
    assert kept.read_text() == "the user's own\n"
    assert sorted(p.name for p in target.parent.iterdir() if p.name.startswith(".")) == [kept.name]
