"""examples/airline/ as a repository of its own loads without tau2: `evalward validate` reads
its agent, its 24 fixtures and both mock scripts, and its generated criteria hold together
as tau2's database check (bench/airline.py runs it, with tau2, against tau2's reward)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "airline"


def documents() -> list[dict[str, Any]]:
    return list(yaml.safe_load_all((EXAMPLE / "evals" / "airline.yaml").read_text()))


def fixtures() -> list[dict[str, Any]]:
    return [d for d in documents() if d["kind"] == "EvalFixture"]


@pytest.mark.parametrize("script", ["mock/correct.yaml", "mock/buggy-pr.yaml"])
def test_the_example_validates_as_its_own_repository_without_tau2(
    tmp_path: Path, script: str
) -> None:
    repo = GitRepo(tmp_path / "airline")
    shutil.copytree(EXAMPLE, repo.path, dirs_exist_ok=True)
    repo.commit("The airline agent")

    done = evalward("validate", ".", "--mock-script", script, cwd=repo.path)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 agents, 24 fixtures, 1 evals OK" in done.stdout
    assert "warning" not in (done.stdout + done.stderr).lower()


def test_each_fixture_is_a_simulated_customer_and_tau2_s_whole_database_check() -> None:
    found = fixtures()

    assert len(found) >= 20
    for fixture in found:
        spec = fixture["spec"]
        assert spec["conversation"]["user"]["goal"], fixture["metadata"]["name"]
        *changed, unchanged = spec["assertions"]
        # every value the expected actions change is checked, and nothing else may change
        assert unchanged["type"] == "stateUnchanged" and unchanged["at"] == "service"
        assert sorted(unchanged.get("except", [])) == sorted(c["at"] for c in changed)
        assert all(c["type"] in ("stateSnapshot", "stateValue") for c in changed)
    writes = [f for f in found if len(f["spec"]["assertions"]) > 1]
    assert len(writes) >= 10, "most tasks should change the database"


def test_the_buggy_pull_request_differs_from_the_correct_one_by_one_argument_on_the_head() -> None:
    def replies(name: str) -> list[dict[str, Any]]:
        loaded: dict[str, Any] = yaml.safe_load((EXAMPLE / "mock" / name).read_text())
        return loaded["replies"]

    correct = {r["match"]["fixture"]: r["turns"] for r in replies("correct.yaml") if "turns" in r}
    wrong = [r for r in replies("buggy-pr.yaml") if r["match"].get("side") == "head"]

    assert len(wrong) >= 3
    for reply in wrong:
        expected = correct[reply["match"]["fixture"]]
        assert len(reply["turns"]) == len(expected)
        pairs = enumerate(zip(expected, reply["turns"], strict=True))
        differing = [i for i, (a, b) in pairs if a != b]
        assert len(differing) == 1
        (index,) = differing
        [want], [got] = expected[index]["toolCalls"], reply["turns"][index]["toolCalls"]
        assert want["name"] == got["name"] and want["arguments"] != got["arguments"]
