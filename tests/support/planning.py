"""A change planned in-process (`plan.planned.plan`), as `flows.session` plans it: a real
repository, providers built from the environment. For tests of what the plan and execute
phases do with one `Planned`, without a whole run."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from evalward.git import Git
from evalward.plan.planned import Planned, plan
from evalward.plan.progress import RunProgress
from evalward.plan.request import RunRequest
from evalward.plan.run_setup import Revisions, RunOptions, RunSetup
from evalward.providers.registry import build_providers
from support.gitrepo import GitRepo
from support.greeter import greeter_agent, greeter_eval, greeting_fixture

GREETER = "agents/greeter.yaml"
"""Where `greeter_files` puts the agent."""


def greeter_files(*eval_settings: str) -> dict[str, str]:
    """The greeter on `openai/gpt-test`, its Eval (with more `spec` lines) and its fixture,
    which passes a reply containing "Hi", by path."""
    return {
        GREETER: greeter_agent("openai/gpt-test"),
        "evals/greeter.yaml": greeter_eval(*eval_settings),
        "evals/fixtures/greeting.yaml": greeting_fixture("{ type: contains, value: Hi }"),
    }


def setup_of(
    repo: GitRepo, base: str | None, env: Mapping[str, str], options: RunOptions | None = None
) -> RunSetup:
    """The set-up of a run of `repo`'s working tree against `base` (None: no base)."""
    return RunSetup(
        Git(repo.path), Revisions(base=base), build_providers(env), env, options or RunOptions()
    )


@contextmanager
def planned(
    repo: GitRepo,
    base: str | None,
    env: Mapping[str, str],
    options: RunOptions | None = None,
    progress: RunProgress | None = None,
) -> Iterator[Planned]:
    """The change planned; its checkouts and its providers' clients closed once done."""
    setup = setup_of(repo, base, env, options)
    try:
        with plan(RunRequest(setup, progress or RunProgress())) as ready:
            yield ready
    finally:
        asyncio.run(setup.providers.aclose())
