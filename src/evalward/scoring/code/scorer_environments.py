"""A code scorer's packages: its `environment`, built once per side by the job's store.

A `code` assertion's `environment` names files as an agent's does (a requirements file, a
`pyproject.toml` + `uv.lock`, a `package.json` + its lock). Their text was read with the fixture,
from the fixture's own commit (resources/checks/code_scorer_files.py): under `gate-config: base`
the base branch's, whatever the pull request did to them. In the action they are written into a
folder of their own, and the job's EnvironmentStore (runtime/environments/environment.py) builds the
environment from that folder alone, as it builds an agent's: as the side's agent user, with no
secret, bounded, sealed read-only, kept in the cache under its key. Each environment is built once
per side, however many assertions name it, and a failed build is every such assertion's error. A
scorer then runs with the environment's `bin` first on PATH (its `python3`) and its `node_modules`
as NODE_PATH.

Its bounds are the action's inputs (`environment-timeout-seconds`, `environment-max-size-mb`,
`environment-max-files`); the environment's own `timeoutSeconds`, `maxSizeMB` and `maxFiles`
may only lower them, so a fixture a pull request wrote cannot give its install more room.

On the command line nothing is built, as for agents: a Python scorer runs with the `python3`
on PATH, and a JavaScript scorer's `require` finds the `node_modules` beside its
`package.json` in the checkout, where `npm ci` puts it.
"""

from __future__ import annotations

import asyncio
import posixpath
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from evalward.errors import AgentRunError, ConfigError, ScorerEnvironmentError
from evalward.resources.agents.agent import AgentEnvironment
from evalward.resources.checks.code_scorer import CodeAssertion
from evalward.runtime.agents.process import limited_env, logins_withheld
from evalward.runtime.environments.environment import EnvironmentRequest, installer_env_names
from evalward.runtime.environments.environment_limits import side_limits
from evalward.runtime.isolation.sandbox import Packages, Sandbox

IMPORT_FAILURES = ("No module named", "Cannot find module", "Cannot find package")
"""What a scorer's failure says when a package it imports is not there."""


@dataclass
class ScorerEnvironments:
    """The environments of one side's code scorers (`sandbox`: that side's; None on the
    command line, where nothing is built)."""

    env: Mapping[str, str]
    sandbox: Sandbox | None = None
    checkout: Path | None = None
    """The side's checkout: where the command line finds a scorer's `node_modules`."""
    commit: str = ""
    """The side's commit: part of an environment's key, as for an agent's."""
    _ready: dict[str, asyncio.Task[Sandbox]] = field(default_factory=dict, init=False)

    async def setting(self, assertion: CodeAssertion) -> tuple[Sandbox | None, dict[str, str]]:
        """The sandbox the scorer runs in (with its packages) and the variables its
        environment adds on the command line. ScorerEnvironmentError when it has none."""
        spec = assertion.environment
        if spec is None:
            return self.sandbox, {}
        if self.sandbox is None:
            return None, self._local(spec)
        digest, files = assertion.environment_digest, assertion.environment_files
        if digest is None or files is None:
            raise ScorerEnvironmentError("the scorer's environment was not loaded with its fixture")
        if digest not in self._ready:
            self._ready[digest] = asyncio.create_task(self._provide(self.sandbox, spec, files))
        try:
            return await asyncio.shield(self._ready[digest]), {}
        except (AgentRunError, ConfigError, OSError) as exc:
            raise ScorerEnvironmentError(
                f"the scorer's environment could not be built: {exc}"
            ) from None

    def note(self, assertion: CodeAssertion, failure: str) -> str:
        """What to add to a scorer's failure that an environment the command line does not
        build would explain."""
        if assertion.environment is None or self.sandbox is not None:
            return ""
        if not any(words in failure for words in IMPORT_FAILURES):
            return ""
        return (
            " (on the command line a scorer's environment is not built: install "
            f"{_named(assertion.environment)} where evalward runs it — the `python3` on PATH, "
            "`npm ci` beside the package.json)"
        )

    def close(self) -> None:
        for task in self._ready.values():
            task.cancel()

    async def _provide(
        self, sandbox: Sandbox, spec: AgentEnvironment, files: Mapping[str, str | None]
    ) -> Sandbox:
        store = sandbox.environments
        if store is None:
            raise AgentRunError("this run builds no environments")
        names = installer_env_names(frozenset())
        env = limited_env(self.env, names, sandbox=sandbox)
        store.check(spec, env)
        tree = await asyncio.to_thread(_write_files, sandbox.root, files)
        name = f"code scorers ({_named(spec)})"
        request = EnvironmentRequest(
            agent=name,
            side=sandbox.side,
            spec=spec,
            checkout=tree,
            source=tree,
            not_copied=frozenset(),
            user=sandbox.user,
            env=env,
            logins_withheld=logins_withheld(self.env, names, sandbox=sandbox),
            limits=side_limits(
                name, spec, None, judged=True, inputs=store.limits, inputs_only=True
            ),
            commit=self.commit,
        )
        packages = await store.provide(request)
        # No links: a scorer runs in an empty folder, not in a working copy of the checkout.
        return sandbox.with_packages(Packages(packages.bin, packages.variables))

    def _local(self, spec: AgentEnvironment) -> dict[str, str]:
        if spec.node is None or self.checkout is None:
            return {}
        folder = posixpath.dirname(posixpath.normpath(spec.node.lstrip("/")))
        return {"NODE_PATH": str(self.checkout / folder / "node_modules")}


def _write_files(root: Path, files: Mapping[str, str | None]) -> Path:
    """A new folder under `root` holding the environment's files at their repository paths,
    which the side's user may read: what the installer starts from."""
    tree = Path(tempfile.mkdtemp(prefix="scorer-environment-", dir=root))
    tree.chmod(0o755)
    for path, text in files.items():
        if text is None:
            continue
        target = tree / path
        for folder in reversed(target.relative_to(tree).parents[:-1]):
            (tree / folder).mkdir(exist_ok=True)
            (tree / folder).chmod(0o755)
        target.write_text(text, encoding="utf-8")
        target.chmod(0o644)
    return tree


def _named(spec: AgentEnvironment) -> str:
    return " and ".join(p for p in (spec.python, spec.node) if p)
