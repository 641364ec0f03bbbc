from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer
from support.gitrepo import GitRepo
from support.suite import provider_env


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that install real packages need the registries; offline, they say so."""
    if os.environ.get("EVALWARD_OFFLINE") == "1":
        skip = pytest.mark.skip(reason="needs PyPI and the npm registry (EVALWARD_OFFLINE=1)")
        for item in items:
            if item.get_closest_marker("registries") is not None:
                item.add_marker(skip)


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    server = FakeGitHub()
    yield server
    server.close()
    # every request the action made must be one GitHub's OpenAPI description accepts
    assert server.contract_violations == []


@pytest.fixture
def model() -> Iterator[ScriptedModelServer]:
    server = ScriptedModelServer()
    yield server
    server.close()
    # every request evalward sent, and every reply the fake rendered, is one the official
    # SDKs' types accept
    assert server.contract_violations == []


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")


@pytest.fixture
def env(model: ScriptedModelServer) -> dict[str, str]:
    """The provider variables a run needs to reach `model` (a module may override it)."""
    return provider_env(model)
