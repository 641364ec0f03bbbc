"""Agents' environments: built once per side from that side's files, kept by their key.

An Agent's `environment` names a requirements file, a `pyproject.toml` (+ `uv.lock`) or a
`package.json` (+ lock). Before the agent's first run on a side, evalward builds it from that side's
own files, as that side's agent user, with no secret in the installer's environment
(runtime/environments/installers.py), then seals it read-only (runtime/isolation/seal.py). It lives,
while agents run, in a folder of the sandbox that only its side's user may enter; a copy is kept in
the result cache's directory (`cache-dir`, which actions/cache keeps) under its key, so a rerun
restores it instead of installing again.

The key is a hash of what decides the environment — the files it is built from and their
locks, the installer's and the interpreter's versions, the platform — and of whom it may be
trusted by: the side, its user, the commit whose files it was built from, for a head side the
head's commit (`_head_of`), and the kind of event. An install runs code the side chose (a
package's build, npm's lifecycle scripts, a local path in a requirements file), as that side's
user and with write access to what it builds, so an environment is only as trustworthy as the
commit it was built from and the head it was built for: one built for a pull request's head is
never what a base run, another commit or a run on another event (a push to main) executes, even
where the lock files are the same. It reads nothing an agent user wrote above it (its folder is
the sandbox's, below folders only root may write; runtime/environments/installers.py), and one
whose install a head program could have reached is not kept for a later job (`kept_out`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import platform
import posixpath
import secrets
import shutil
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from evalward.errors import AgentRunError, GitError, OutsideRepository, TreeError
from evalward.files.committed import RepoFiles
from evalward.files.inside import repo_path
from evalward.files.safe_files import read_regular
from evalward.git import Git
from evalward.resources.agents.agent import LOCK_FILES, PYTHON_PROJECT, AgentEnvironment
from evalward.runtime.environments.environment_files import (
    copy_source,
    everything,
    finish,
    kept_state,
    persist,
    restore,
)
from evalward.runtime.environments.environment_inputs import check_inputs
from evalward.runtime.environments.environment_limits import (
    EnvironmentLimits,
    input_limits,
    side_limits,
)
from evalward.runtime.environments.installers import (
    NETWORK_ENV,
    Installer,
    editable_installs,
    node_tools,
    python_interpreter,
    remove_tree,
    runnable_copy,
    stop_config,
    uv_binary,
)
from evalward.runtime.isolation.agent_users import AgentUser
from evalward.runtime.isolation.apart import Apart
from evalward.runtime.isolation.checkout_copy import copy_side
from evalward.runtime.isolation.sandbox import COPY_BOUNDS, Packages
from evalward.runtime.isolation.sandbox import EnvironmentRequest as EnvironmentRequest
from evalward.runtime.processes.strays import Sessions

LAYOUT = 2
"""How evalward lays an environment out; a change makes every kept one stale (2: a Python
environment holds its bytecode, which one kept before would not)."""

COMPILE = ("--compile-bytecode",)
"""What uv is told so that it writes each package's bytecode at install, as pip does."""

MAX_FILE_BYTES = 64 * 1024 * 1024
"""The largest file read from a checkout's environment files."""


class EnvironmentStore:
    """Builds, keeps and hands out the environments of one job.

    `cache` is `<cache-dir>/environments` when the result cache may be used (None: built every
    run); `reuse` reads it, `keep` writes it. `scope` is the kind of event (part of the key).
    """

    def __init__(
        self,
        cache: Path | None,
        *,
        reuse: bool = True,
        keep: bool = True,
        scope: str = "",
        log: Callable[[str], None] | None = None,
        limits: EnvironmentLimits | None = None,
    ) -> None:
        self.cache = cache
        self.reuse = reuse and cache is not None
        self.keep = keep and cache is not None
        self.scope = scope
        self.untrusted_head = scope.startswith("pull_request") or scope == "merge_group"
        """A head side here is a pull request's (or a merge queue's group of them), bounded by
        its base even without one."""
        self.log = log or (lambda _line: None)
        self.sessions = Sessions()
        self.limits = limits or input_limits()
        """The action's inputs: the bounds where the base's definition sets none."""
        self._live: Path | None = None
        self.apart: Apart | None = None
        """The sides' turns of the sandbox that holds the store (None: no turns)."""
        self._ready: dict[str, asyncio.Task[Path]] = {}
        self.used: set[str] = set()
        self.built: list[str] = []
        self.restored: list[str] = []

    def attach(
        self, live: Path, sessions: Sessions | None = None, apart: Apart | None = None
    ) -> None:
        """Where environments live while agents run: a folder only evalward writes, which the
        sandbox places below folders only root writes where there are agent users
        (`sandbox.placed`: an installer reads configuration from the folders above it); the
        sessions of the sandbox's programs, spared when an install's strays are ended; and
        the sides' turns (`kept_out`)."""
        live.mkdir(mode=0o711, exist_ok=True)
        live.chmod(0o711)
        self._live = live
        self.sessions = sessions or self.sessions
        self.apart = apart or self.apart

    def limits_of(self, request: EnvironmentRequest) -> EnvironmentLimits:
        if request.limits is not None:
            return request.limits
        return side_limits(request.agent, request.spec, None, judged=False, inputs=self.limits)

    def check(self, spec: AgentEnvironment, env: Mapping[str, str]) -> None:
        """Refuse, before anything runs, an environment this machine cannot build."""
        uv_binary()
        if spec.node is not None:
            node_tools(env)

    async def provide(self, request: EnvironmentRequest) -> Packages:
        """The agent's packages: built, restored from the cache, or already here."""
        assert self._live is not None, "the sandbox attaches the store before any run"
        material = await self._material(request)
        key = _digest(material)
        if key not in self._ready:
            self._ready[key] = asyncio.create_task(self._make(request, key, material))
        root = await asyncio.shield(self._ready[key])
        self.used.add(key)
        return packages_of(request.spec, root)

    async def _material(self, request: EnvironmentRequest) -> dict[str, Any]:
        spec = request.spec
        material: dict[str, Any] = {
            "layout": LAYOUT,
            "scope": self.scope,
            "side": request.side,
            "user": [request.user.uid, request.user.gid] if request.user else None,
            "commit": request.commit or _commit(request.checkout),
            "files": await asyncio.to_thread(_file_hashes, request, spec.files()),
            "platform": [platform.machine(), *platform.libc_ver()],
        }
        if request.side != "base":
            material["built for"] = self._head_of(request)
        if spec.python is not None:
            uv_bin = self._uv(request.user)
            probe = self._scratch(request.user, "probe")
            try:
                installer = Installer(
                    request.user,
                    request.env,
                    probe,
                    self.limits_of(request),
                    self.sessions,
                    logins_withheld=request.logins_withheld,
                )
                folder = request.source / _folder(spec.python)
                uv_version = (await installer.check([uv_bin, "--version"], folder)).strip()
                path, version = await python_interpreter(installer, uv_bin, folder)
            finally:
                remove_tree(probe)
            material["python"] = {
                "file": spec.python,
                "uv": uv_version,
                "interpreter": path,
                "version": version,
            }
        if spec.node is not None:
            node, npm = node_tools(request.env)
            versions = [await _version(node), await _version(npm)]
            material["node"] = {"file": spec.node, "node": versions[0], "npm": versions[1]}
        return material

    def _head_of(self, request: EnvironmentRequest) -> str:
        """The commit of the head a head side's environment is built for, whatever tree it
        is built from (a base playground's service, built by the head's user, in its turn):
        as trustworthy as that head, so never another's."""
        apart = self.apart
        if apart is not None and apart.head_open and apart.head_commit:
            return apart.head_commit
        return request.commit or _commit(request.checkout)

    def _uv(self, user: AgentUser | None) -> str:
        """The uv evalward ships, at a path the installing user may run."""
        assert self._live is not None
        uv_bin = uv_binary()
        if user is None:
            return uv_bin
        return str(runnable_copy(Path(uv_bin), self._live / ".tools"))

    def _scratch(self, user: AgentUser | None, kind: str) -> Path:
        """A new folder in the live one that only `user` may use."""
        assert self._live is not None
        folder = self._live / f".{kind}-{secrets.token_hex(6)}"
        folder.mkdir(mode=0o700)
        if user is not None:
            os.chown(folder, user.uid, user.gid)
        return folder

    async def _make(self, request: EnvironmentRequest, key: str, material: dict[str, Any]) -> Path:
        stop = threading.Event()  # set on cancellation: the copying threads stop with it
        try:
            return await self._make_or_restore(request, key, material, stop)
        except BaseException:
            stop.set()
            raise

    async def _make_or_restore(
        self, request: EnvironmentRequest, key: str, material: dict[str, Any], stop: threading.Event
    ) -> Path:
        assert self._live is not None
        target = self._live / key
        started = time.monotonic()
        cache = self.cache if self.reuse else None
        kept = await asyncio.to_thread(kept_state, cache / key, key) if cache is not None else ""
        if kept not in ("", "ok"):
            self.log(f"evalward: environment of {request.label}: not restored ({kept})")
        if kept == "ok" and cache is not None:
            try:
                await asyncio.to_thread(
                    restore, cache / key, target, request.user, self.limits_of(request), stop
                )
            except (AgentRunError, OSError, shutil.Error) as exc:
                self.log(f"evalward: environment of {request.label}: not restored ({exc})")
            else:
                self.restored.append(key)
                self.log(
                    f"evalward: environment of {request.label}: restored from the cache in "
                    f"{time.monotonic() - started:.1f} s"
                )
                return target
        turns = self._turns()
        build = self._scratch(None, "build")
        sealed = build.with_name(f".sealed-{secrets.token_hex(6)}")
        try:
            try:
                await self._build(request, build, material)
            finally:
                await self._end_strays(request.user)
            limits = self.limits_of(request)
            await asyncio.to_thread(
                finish, build, sealed, request.user, {"key": key, **material}, limits, stop
            )
            sealed.rename(target)
        finally:
            await asyncio.to_thread(remove_tree, build)
            await asyncio.to_thread(remove_tree, sealed)
        self.built.append(key)
        self.log(
            f"evalward: environment of {request.label}: built in "
            f"{time.monotonic() - started:.1f} s ({_what(request.spec)})"
        )
        if self.keep and self.cache is not None:
            if why := self.kept_out(request.side, turns):
                self.log(f"evalward: environment of {request.label}: not kept in the cache ({why})")
            else:
                await asyncio.to_thread(persist, target, self.cache, key, stop)
        return target

    def _turns(self) -> tuple[int, bool]:
        """The head turns taken so far, and whether one is under way."""
        apart = self.apart
        return (apart.head_turns, apart.head_open) if apart is not None else (0, False)

    def kept_out(self, side: str, before: tuple[int, bool]) -> str:
        """Why an environment of `side` whose build began at `before` (`_turns`) is not kept
        for a later job, or "". Its install read what was on the machine: a base side's
        built while a head turn was under way could hold what the head's programs planted
        (an installer's configuration, a package where it looks), and any side's after a turn
        that was not clean (`Apart.unclean`), what another pull request's did; the key names
        the side's own files, not that, so a later job would restore it as the side's own."""
        apart = self.apart
        if apart is None:
            return ""
        if apart.unclean:
            return f"a turn before its build's end was not clean: {apart.unclean}"
        if side == "base" and (before[1] or self._turns() != (before[0], False)):
            return "it was built while the head's programs could run"
        return ""

    async def _end_strays(self, user: AgentUser | None) -> None:
        """Before the seal: every process the installing user still runs is ended, but those
        of the sandbox's programs (another agent of this side, mid-run)."""
        if user is not None and user.uid != os.geteuid():
            killed = await self.sessions.end_strays(user.uid)
            if killed:
                self.log(f"evalward: {killed} process(es) the install left running were ended")

    async def _build(
        self, request: EnvironmentRequest, build: Path, material: Mapping[str, Any]
    ) -> None:
        """Install into `build` as the side's user, from a private copy of its checkout."""
        spec, user = request.spec, request.user
        await asyncio.to_thread(check_inputs, request.source, spec)
        source, home = build / "src", build / "home"
        await asyncio.to_thread(_write_source, request, source)
        home.mkdir()
        if user is not None:
            for path in (build, *everything(build)):
                os.chown(path, user.uid, user.gid, follow_symlinks=False)
        stop_config(build)
        installer = Installer(
            user,
            request.env,
            home,
            self.limits_of(request),
            self.sessions,
            watched=build,
            logins_withheld=request.logins_withheld,
        )
        if spec.python is not None:
            interpreter = material["python"]["interpreter"]
            await _install_python(
                installer, self._uv(user), spec.python, source, build / "venv", interpreter
            )
        if spec.node is not None:
            await _install_node(installer, spec.node, source, build / "node_modules")
        if spec.python is not None:
            # Once every install step is over (a later one may change what an earlier left).
            editable = await asyncio.to_thread(editable_installs, build / "venv")
            if editable:
                raise AgentRunError(
                    f"{spec.python} installs {', '.join(editable)} in editable mode (`-e`), "
                    "which would point into the copy of the checkout the installer ran in; "
                    "install it without `-e`"
                )

    def close(self) -> None:
        """When this job built an environment, keep in the cache only those it used: the
        cache stays the size of one run's environments, and a rerun finds every one it
        needs."""
        for task in self._ready.values():
            task.cancel()
        if not self.built or not self.keep or self.cache is None or not self.cache.is_dir():
            return  # a job served from the result cache leaves the environments as they were
        for entry in self.cache.iterdir():
            if entry.name not in self.used:
                remove_tree(entry)


async def _install_python(
    installer: Installer, uv_bin: str, named: str, source: Path, venv: Path, interpreter: str
) -> None:
    """The virtualenv, then the packages, their bytecode compiled as pip does: the sealed
    environment is read-only to the agent users, so what is not compiled here an agent's
    every start compiles again (seconds for an SDK such as LangChain's or LlamaIndex's)."""
    folder = source / _folder(named)
    name = Path(named).name
    await installer.check(
        [uv_bin, "venv", "--relocatable", "--quiet", "--python", interpreter, str(venv)], folder
    )
    if name == PYTHON_PROJECT:
        locked = ["--locked"] if (folder / "uv.lock").is_file() else []
        sync = [uv_bin, "sync", *locked, "--no-dev", "--no-editable", *COMPILE]
        await installer.check(
            [*sync, "--python", interpreter], folder, {"UV_PROJECT_ENVIRONMENT": str(venv)}
        )
    else:
        python = str(venv / "bin" / "python")
        await installer.check(
            [uv_bin, "pip", "install", *COMPILE, "--python", python, "-r", name], folder
        )


async def _install_node(installer: Installer, named: str, source: Path, target: Path) -> None:
    _, npm = node_tools(installer.env)
    folder = source / _folder(named)
    lock = any((folder / n).is_file() for n in LOCK_FILES["package.json"])
    command = "ci" if lock else "install"
    await installer.check([npm, command, "--no-audit", "--no-fund"], folder)
    installed = folder / "node_modules"
    if installed.is_dir() and not installed.is_symlink():
        installed.rename(target)
    else:  # nothing to install: an empty one, the installer's as what it installs would be
        target.mkdir()
        if installer.user is not None:
            os.chown(target, installer.user.uid, installer.user.gid)


def packages_of(spec: AgentEnvironment, root: Path) -> Packages:
    """What an environment at `root` gives its agent's processes."""
    bins: list[Path] = []
    variables: list[tuple[str, str]] = []
    links: list[tuple[str, Path]] = []
    if spec.python is not None:
        bins.append(root / "venv" / "bin")
        variables.append(("VIRTUAL_ENV", str(root / "venv")))
    if spec.node is not None:
        modules = root / "node_modules"
        bins.append(modules / ".bin")
        variables.append(("NODE_PATH", str(modules)))
        links.append((posixpath.join(_folder(spec.node), "node_modules"), modules))
    return Packages(tuple(bins), tuple(variables), tuple(links))


def installer_env_names(listed: frozenset[str]) -> list[str]:
    """The variables an installer may take from the workflow: its network settings and the
    names the agent's own `env:` lists (still without credentials)."""
    return sorted({*NETWORK_ENV, *listed})


def _what(spec: AgentEnvironment) -> str:
    return ", ".join(f"{k}: {v}" for k, v in (("python", spec.python), ("node", spec.node)) if v)


def _folder(path: str) -> str:
    """The folder of a repository path, from the root ("" for the root itself)."""
    return posixpath.dirname(posixpath.normpath(path.lstrip("/")))


def _digest(material: Mapping[str, Any]) -> str:
    text = json.dumps(material, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def _commit(checkout: Path) -> str:
    try:
        return Git(checkout).resolve("HEAD")
    except GitError:
        return f"no commit: {secrets.token_hex(8)}"  # never the same twice: never reused


def _file_hashes(request: EnvironmentRequest, paths: list[str]) -> dict[str, str]:
    """Each file the environment names, hashed as the side's door reads it (git's blob
    ids, of a commit's objects or the working tree's files), never a file another program
    left in the workspace."""
    if request.files is not None:
        door = request.files
        return {path: _door_hash(door, path) for path in paths}
    return {path: _file_hash(request.checkout, path) for path in paths}


def _door_hash(door: RepoFiles, path: str) -> str:
    try:
        return door.digest(path)
    except (OSError, GitError, TreeError):
        return "unreadable"


def _write_source(request: EnvironmentRequest, target: Path) -> None:
    """The installer's own copy of the side's files: the working copy's (written from the
    commit), or, where the side's user runs the checkout itself, what the door gives of
    it (a commit's tree; the working tree without what git ignores)."""
    files = request.files
    if files is not None and request.source.resolve() == request.checkout.resolve():
        copy_side(files, request.checkout, target, None, request.not_copied, COPY_BOUNDS)
        return
    copy_source(request.source, target, request.not_copied)


def _file_hash(checkout: Path, path: str) -> str:
    try:
        found = repo_path(checkout, path).resolve()
    except (OutsideRepository, OSError):
        return "outside the repository"
    if not found.exists():
        return "missing"
    try:
        return hashlib.sha256(read_regular(found, MAX_FILE_BYTES)).hexdigest()
    except OSError:
        return "unreadable"


async def _version(program: str) -> str:
    process = await asyncio.create_subprocess_exec(
        program,
        "--version",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    out, _ = await process.communicate()
    return out.decode(errors="replace").strip()
