"""A playground service's packages: its `environment`, built once per side by the job's store.

A service declares what its programs import as an agent does (`environment`: a requirements
file, a `pyproject.toml` + `uv.lock`, a `package.json` + its lock), read from the tree the
playground is made from (the gate's side). The job's EnvironmentStore builds it as it builds an
agent's, as the run side's agent user and kept under a key that names whom it may be trusted by
(runtime/environments/environment.py); the service and its `dump` command then run with its
`bin` first on PATH (VIRTUAL_ENV set) and its `node_modules` linked beside its `package.json`,
never with evalward's own packages. It is built once per side, tree and definition, however
many runs provision it, and a failed build is each such run's error.

Its bounds are the action's inputs (`environment-timeout-seconds`, `environment-max-size-mb`,
`environment-max-files`); the definition's own `timeoutSeconds`, `maxSizeMB` and `maxFiles`
may only lower them, so a playground a pull request wrote cannot give its install more room.
On the command line nothing is built, as for agents: the service runs with the PATH evalward
was started with.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from evalward.resources.agents.agent import AgentEnvironment
from evalward.runtime.agents.process import limited_env, logins_withheld
from evalward.runtime.environments.environment import EnvironmentRequest, installer_env_names
from evalward.runtime.environments.environment_limits import side_limits
from evalward.runtime.isolation.sandbox import Packages, Sandbox


@dataclass
class ServiceEnvironments:
    """The job's services' environments, each built (or refused) once."""

    _ready: dict[tuple[str, Path, str], asyncio.Task[Packages]] = field(default_factory=dict)

    async def sandbox_for(
        self,
        label: str,
        spec: AgentEnvironment,
        world: Path,
        sandbox: Sandbox,
        env: Mapping[str, str],
    ) -> Sandbox:
        """The run's `sandbox` with the packages of `spec`, built from `world` (the tree the
        playground is made from); the sandbox itself where the job builds no environment
        (the command line). AgentRunError, ConfigError or OSError when it cannot be built."""
        if sandbox.environments is None:
            return sandbox
        key = (sandbox.side, world.resolve(), spec.model_dump_json())
        if key not in self._ready:
            self._ready[key] = asyncio.create_task(self._provide(label, spec, world, sandbox, env))
        packages = await asyncio.shield(self._ready[key])
        return sandbox.with_packages(packages).in_run(sandbox.run)

    async def _provide(
        self,
        label: str,
        spec: AgentEnvironment,
        world: Path,
        sandbox: Sandbox,
        env: Mapping[str, str],
    ) -> Packages:
        store = sandbox.environments
        assert store is not None, "asked only with a store"
        names = installer_env_names(frozenset())
        installer_env = limited_env(env, names, sandbox=sandbox)
        store.check(spec, installer_env)
        request = EnvironmentRequest(
            agent=label,
            side=sandbox.side,
            spec=spec,
            checkout=world,
            source=sandbox.working_copy(world),
            not_copied=sandbox.not_copied,
            user=sandbox.user,
            env=installer_env,
            logins_withheld=logins_withheld(env, names, sandbox=sandbox),
            files=sandbox.files_of(world),
            limits=side_limits(
                label, spec, None, judged=True, inputs=store.limits, inputs_only=True
            ),
        )
        return await store.provide(request)

    def close(self) -> None:
        for task in self._ready.values():
            task.cancel()
        self._ready.clear()
