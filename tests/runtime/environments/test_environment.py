"""The job's store of agents' environments (`runtime.environments.environment`), building a
Python environment with nothing to install from a real requirements file: built once for
every run that asks for the same one, kept in the cache and restored from it by the next
job, and what a built one gives an agent's processes."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from evalward.resources.agents.agent import AgentEnvironment
from evalward.runtime.environments.environment import (
    EnvironmentRequest,
    EnvironmentStore,
    installer_env_names,
    packages_of,
)
from evalward.runtime.environments.installers import NETWORK_ENV

pytestmark = pytest.mark.integration

PYTHON = AgentEnvironment.model_validate({"python": "agent/requirements.txt"})


def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    (root / "agent").mkdir(parents=True)
    (root / "agent" / "requirements.txt").write_text("# nothing to install\n", encoding="utf-8")
    return root


def request(root: Path) -> EnvironmentRequest:
    return EnvironmentRequest(
        agent="bot",
        side="head",
        spec=PYTHON,
        checkout=root,
        source=root,
        not_copied=frozenset(),
        user=None,
        env={"PATH": os.environ["PATH"]},
        commit="c0ffee",
    )


def provided(store: EnvironmentStore, live: Path, *asked: EnvironmentRequest) -> list[Path]:
    """The environments `store` gave for each request (their VIRTUAL_ENV), then closed."""
    store.attach(live)

    async def go() -> list[Path]:
        packages = await asyncio.gather(*(store.provide(r) for r in asked))
        return [Path(dict(p.variables)["VIRTUAL_ENV"]) for p in packages]

    try:
        return asyncio.run(go())
    finally:
        store.close()


def test_an_environment_is_built_once_kept_and_restored_by_the_next_job(tmp_path: Path) -> None:
    root, cache = checkout(tmp_path), tmp_path / "cache"
    first = EnvironmentStore(cache, scope="push")

    venvs = provided(first, tmp_path / "live-1", request(root), request(root))

    assert venvs[0] == venvs[1] and (venvs[0] / "bin" / "python").exists()
    assert len(first.built) == 1 and first.restored == []
    assert [entry.name for entry in cache.iterdir()] == first.built  # kept under its key

    second = EnvironmentStore(cache, scope="push")
    provided(second, tmp_path / "live-2", request(root))
    assert (second.built, second.restored) == ([], first.built)


def test_a_built_environment_is_first_on_path_with_its_variables() -> None:
    both = AgentEnvironment.model_validate(
        {"python": "requirements.txt", "node": "web/package.json"}
    )
    root = Path("/env")

    packages = packages_of(both, root)

    assert packages.bin == (root / "venv" / "bin", root / "node_modules" / ".bin")
    assert dict(packages.variables) == {
        "VIRTUAL_ENV": "/env/venv",
        "NODE_PATH": "/env/node_modules",
    }
    assert packages.links == (("web/node_modules", root / "node_modules"),)
    assert installer_env_names(frozenset({"PIP_INDEX_URL"})) == sorted(
        {*NETWORK_ENV, "PIP_INDEX_URL"}
    )


def test_a_merge_queue_groups_head_is_bounded_as_a_pull_requests_is() -> None:
    """The head of a pull request's gate, or of a merge queue's group of them, is bounded by
    the base's definitions even where the base lacks the agent; a run of the branch's own
    Evals is not a gate of anyone's head."""
    events = ("pull_request", "pull_request_target", "merge_group", "push", "schedule")
    bounded = [EnvironmentStore(None, scope=event).untrusted_head for event in events]
    assert bounded == [True, True, True, False, False]
