"""A playground service's packages (`runtime.playground.service_environment`), built by the
job's store from a real requirements file in the tree the playground is made from: built
once per side and tree however many runs ask, given to the service's sandbox as the first
folder on its PATH, and not built at all where the job builds no environment."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from evalward.resources.agents.agent import AgentEnvironment
from evalward.runtime.environments.environment import EnvironmentStore
from evalward.runtime.isolation.sandbox import Sandbox
from evalward.runtime.playground.service_environment import ServiceEnvironments
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

SPEC = AgentEnvironment.model_validate({"python": "service/requirements.txt"})


def world(repo: GitRepo) -> Path:
    repo.commit("service", {"service/requirements.txt": "# the standard library will do\n"})
    return repo.path


def test_a_services_environment_is_built_once_per_side_and_put_first_on_path(
    repo: GitRepo,
) -> None:
    tree = world(repo)
    store = EnvironmentStore(None)
    sandbox = Sandbox(None)
    sandbox.use_environments(store)
    environments = ServiceEnvironments()

    async def go() -> list[Sandbox]:
        head = [
            environments.sandbox_for("orders", SPEC, tree, sandbox, {"PATH": "/usr/bin:/bin"})
            for _ in range(3)
        ]
        base = environments.sandbox_for(
            "orders", SPEC, tree, sandbox.for_side("base"), {"PATH": "/usr/bin:/bin"}
        )
        return list(await asyncio.gather(*head, base))

    try:
        given = asyncio.run(go())
    finally:
        environments.close()
        sandbox.close()

    assert len(store.built) == 2  # one for each side, not one for each run
    venvs = [dict(s.packages.variables)["VIRTUAL_ENV"] if s.packages else "" for s in given]
    assert venvs[0] == venvs[1] == venvs[2] != venvs[3]
    first = given[0].packages
    assert first is not None and first.bin[0].name == "bin"
    assert given[3].side == "base"


def test_where_the_job_builds_no_environment_the_sandbox_is_given_back(repo: GitRepo) -> None:
    sandbox = Sandbox(None)
    try:
        given = asyncio.run(
            ServiceEnvironments().sandbox_for("orders", SPEC, world(repo), sandbox, {})
        )
    finally:
        sandbox.close()

    assert given is sandbox
