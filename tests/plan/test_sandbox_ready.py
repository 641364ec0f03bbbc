"""`plan.sandbox_ready.ready` without a user switch: the store of agents' environments made as
the front end asks (kept beside the cache, within its bounds), and a credential the checkout
keeps in its git configuration named in a warning, never its value."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evalward.git import Git
from evalward.plan.sandbox_ready import EnvironmentBounds, SandboxSetup, ready
from evalward.runtime.environments.environment import EnvironmentStore
from evalward.runtime.isolation.sandbox import Sandbox
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

HEADER = "AUTHORIZATION: basic c2VjcmV0LXRva2Vu"


def asked(repo: GitRepo, environments: Path | None, said: list[str]) -> SandboxSetup:
    return SandboxSetup(
        workspace=repo.path,
        written=(repo.path / ".evalward" / "out",),
        environments=environments,
        reuse=True,
        keep=False,
        scope="pull_request",
        bounds=EnvironmentBounds(timeout_seconds=30, max_size_mb=64, max_files=500),
        log=said.append,
        warn=lambda message: said.append(f"warning: {message}"),
    )


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    made = Sandbox(None)
    yield made
    made.close()


def test_the_environments_store_is_made_as_asked(
    repo: GitRepo, tmp_path: Path, sandbox: Sandbox
) -> None:
    repo.commit("start", {"README.md": "x\n"})
    said: list[str] = []

    ready(sandbox, asked(repo, tmp_path / "environments", said), Git(repo.path), {})

    store = sandbox.environments
    assert isinstance(store, EnvironmentStore)
    assert store.cache == tmp_path / "environments"
    assert (store.reuse, store.keep, store.scope) == (True, False, "pull_request")
    assert store.untrusted_head
    assert (store.limits.files.value, store.limits.timeout.value) == (500, 30)
    assert not [line for line in said if line.startswith("warning:")]


def test_without_a_folder_to_keep_them_environments_are_this_job_s_alone(
    repo: GitRepo, sandbox: Sandbox
) -> None:
    repo.commit("start", {"README.md": "x\n"})

    ready(sandbox, asked(repo, None, []), Git(repo.path), {})

    store = sandbox.environments
    assert isinstance(store, EnvironmentStore)
    assert store.cache is None and not store.reuse and not store.keep


def test_a_credential_the_checkout_keeps_is_named_not_shown(
    repo: GitRepo, sandbox: Sandbox
) -> None:
    repo.commit("start", {"README.md": "x\n"})
    repo.git("config", "http.https://github.com/.extraheader", HEADER)
    said: list[str] = []

    ready(sandbox, asked(repo, None, said), Git(repo.path), {})

    warnings = [line for line in said if line.startswith("warning:")]
    assert len(warnings) == 1
    assert "http.https://github.com/.extraheader" in warnings[0]
    assert "persist-credentials: false" in warnings[0]
    assert "c2VjcmV0" not in warnings[0]
