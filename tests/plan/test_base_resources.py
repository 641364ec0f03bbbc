"""`plan.prepare.load_base`: the merge base's resources from an overlay of only the YAML
files a change touched when that is safe, and from a whole checkout of the base when the
change touches what decides where or how resources load (`evalward.yaml`, `.gitattributes`)."""

from __future__ import annotations

from contextlib import ExitStack

import pytest

from evalward.definitions.loader import load_resources
from evalward.git import Git
from evalward.plan.prepare import load_base
from evalward.resources.reading.repo_config import RepoConfig
from support.gitrepo import GitRepo
from support.greeter import greeter_agent
from support.planning import GREETER, greeter_files

pytestmark = pytest.mark.integration

AGENT = GREETER


def change(repo: GitRepo, more: dict[str, str] | None = None) -> str:
    """The greeter on the base; its prompt changed in the working tree (and `more`)."""
    base = repo.commit("greeter", greeter_files())
    repo.write({AGENT: greeter_agent("openai/gpt-test", "Greet warmly."), **(more or {})})
    return base


def test_only_the_touched_files_are_read_from_the_base_into_an_overlay(repo: GitRepo) -> None:
    base = change(repo)
    head = load_resources(repo.path)

    with ExitStack() as stack:
        loaded = load_base(Git(repo.path), base, head, {AGENT}, stack, RepoConfig())
        overlay = loaded.root
        assert not loaded.whole and overlay != repo.path
        assert sorted(p.relative_to(overlay).as_posix() for p in overlay.rglob("*.yaml")) == [AGENT]
        assert loaded.resources.agents["greeter"].resource.spec.system == "Greet."
        assert set(loaded.resources.evals) == {"greeter-eval"}
        assert set(loaded.resources.fixtures) == {"greeting"}
    assert not overlay.exists()  # gone with the stack


@pytest.mark.parametrize(
    "touched", [{"evalward.yaml": "roots: [.]\n"}, {".gitattributes": "*.yaml text\n"}]
)
def test_a_change_to_how_resources_load_loads_the_base_whole(
    repo: GitRepo, touched: dict[str, str]
) -> None:
    base = change(repo, touched)
    head = load_resources(repo.path)

    with ExitStack() as stack:
        loaded = load_base(Git(repo.path), base, head, {AGENT, *touched}, stack, RepoConfig())
        assert loaded.whole
        assert (loaded.root / "evals" / "greeter.yaml").is_file()
        assert not any((loaded.root / name).exists() for name in touched)
        assert loaded.resources.agents["greeter"].resource.spec.system == "Greet."
