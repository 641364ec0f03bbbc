"""A code scorer's packages (`scoring.scorer_environments.ScorerEnvironments`): in a job that
builds environments, built once per side from the files read with the fixture (a real
requirements file with nothing to install) and the scorer run with its interpreter; on the
command line nothing built, a JavaScript scorer pointed at the checkout's `node_modules`, and
an import that fails there explained."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from evalward.errors import ScorerEnvironmentError
from evalward.resources.checks.code_scorer import CodeAssertion
from evalward.rundata.results import Status
from evalward.runtime.environments.environment import EnvironmentStore
from evalward.runtime.isolation.sandbox import Sandbox
from evalward.scoring.code.code_scorer import CodeScorers
from evalward.scoring.code.code_verdicts import ScorerCase
from evalward.scoring.code.scorer_environments import ScorerEnvironments

pytestmark = pytest.mark.integration

FILES = {"graders/requirements.txt": "# the standard library will do\n"}
ENV = {"PATH": os.environ["PATH"]}


def scorer(source: str = "True", digest: str | None = "d1", **environment: str) -> CodeAssertion:
    assertion = CodeAssertion.model_validate(
        {
            "type": "code",
            "source": source,
            "language": "python",
            "environment": environment or {"python": "graders/requirements.txt"},
        }
    )
    return assertion.model_copy(update={"environment_files": FILES, "environment_digest": digest})


def in_sandbox(use: Any, *, store: bool = True) -> Any:
    sandbox = Sandbox(None)
    if store:
        sandbox.use_environments(EnvironmentStore(None))
    environments = ScorerEnvironments(ENV, sandbox, commit="c0ffee")
    try:
        return asyncio.run(use(environments, sandbox))
    finally:
        environments.close()
        sandbox.close()


def test_an_environment_is_built_once_for_every_scorer_that_names_it() -> None:
    async def use(environments: ScorerEnvironments, sandbox: Sandbox) -> Any:
        given = await asyncio.gather(*(environments.setting(scorer()) for _ in range(3)))
        scorers = CodeScorers(ENV, sandbox, kill_grace=0.5, environments=environments)
        try:
            ran = await scorers.score(
                scorer(
                    "{'pass': True, 'score': 1, 'reason': sys.prefix}".replace(
                        "sys", "__import__('sys')"
                    )
                ),
                ScorerCase("out", "in", None, {}, {}),
            )
        finally:
            scorers.close()
        store = sandbox.environments
        assert isinstance(store, EnvironmentStore)
        return given, ran, store.built

    given, ran, built = in_sandbox(use)

    assert len(built) == 1
    venvs = {dict(s.packages.variables)["VIRTUAL_ENV"] for s, _ in given if s and s.packages}
    assert len(venvs) == 1 and all(added == {} for _, added in given)
    assert (ran.status, ran.message) == (Status.passed, venvs.pop())  # its own interpreter


def test_an_environment_not_loaded_with_its_fixture_or_not_built_here_is_refused() -> None:
    async def unloaded(environments: ScorerEnvironments, sandbox: Sandbox) -> Any:
        return await environments.setting(scorer(digest=None))

    with pytest.raises(ScorerEnvironmentError, match="not loaded with its fixture"):
        in_sandbox(unloaded)

    async def unbuilt(environments: ScorerEnvironments, sandbox: Sandbox) -> Any:
        return await environments.setting(scorer())

    with pytest.raises(ScorerEnvironmentError, match="this run builds no environments"):
        in_sandbox(unbuilt, store=False)


def test_on_the_command_line_nothing_is_built_and_an_import_failure_is_explained(
    tmp_path: Path,
) -> None:
    local = ScorerEnvironments(ENV, None, checkout=tmp_path)
    python = scorer()
    node = scorer(node="graders/web/package.json")

    assert asyncio.run(local.setting(python)) == (None, {})
    assert asyncio.run(local.setting(node)) == (
        None,
        {"NODE_PATH": str(tmp_path / "graders" / "web" / "node_modules")},
    )
    note = local.note(python, "ModuleNotFoundError: No module named 'numpy'")
    assert "a scorer's environment is not built: install graders/requirements.txt" in note
    assert local.note(python, "ZeroDivisionError") == ""
    sandbox = Sandbox(None)
    try:
        assert ScorerEnvironments(ENV, sandbox).note(python, "No module named 'x'") == ""
    finally:
        sandbox.close()
