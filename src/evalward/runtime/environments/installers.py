"""The installers an environment is built with (uv for Python, npm for Node.js), run as the
side's agent user with an environment that holds no secret.

Each command runs in its own process group, as the agent user when there is one, with a
private HOME and TMPDIR inside the folder being built; what it printed comes back for the
message of a failed install. Nothing here decides where an environment lives or whether it
is reused (runtime/environments/environment.py) nor makes it read-only (runtime/isolation/seal.py).

uv reads its settings from the nearest `uv.toml` (or `pyproject.toml` with `[tool.uv]`) in the
folder it runs in or any folder above it. The side's own files may set them; nothing above the
build may: the build folder holds an empty one of evalward's (`CONFIG_STOP`), where the walk
ends, and every folder above it is one only root may write (runtime/isolation/sandbox.py's
`AGENTS_PLACE`), which also keeps a `pyproject.toml` workspace that uv would adopt from above.
uv's `--no-config` is not used: it drops the side's own settings too (its index, `no-index`),
and the install would resolve the side's packages from the public index instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import stat
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from subprocess import SubprocessError

import uv

from evalward.errors import AgentRunError, ConfigError, TreeError, UnsafeFile
from evalward.files import trees
from evalward.files.safe_files import read_regular
from evalward.runtime.agents.process import kill_group, read_tail, tail
from evalward.runtime.environments.environment_limits import EnvironmentLimits
from evalward.runtime.environments.install_watch import watch
from evalward.runtime.isolation import landlock
from evalward.runtime.isolation.agent_users import AgentUser
from evalward.runtime.processes.strays import Sessions

NETWORK_ENV = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "UV_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "UV_EXTRA_INDEX_URL",
    "npm_config_registry",
)
"""What the workflow's environment may tell an installer about the network (a proxy, a CA
bundle, a package mirror); credentials are still withheld (`process.limited_env`), a URL's
login too: an installer reaches a proxy or an index only where the runner needs none."""

UNTRUSTED_TLS = re.compile(
    r"invalid peer certificate|UnknownIssuer|CERTIFICATE_VERIFY_FAILED|"
    r"SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT_LOCALLY|"
    r"unable to get local issuer certificate|self[- ]signed certificate in certificate chain"
)
"""What uv, pip and npm say of a certificate they do not trust: most often a proxy that
inspects TLS on a self-hosted runner, answering with a certificate of its own CA."""
UNTRUSTED_TLS_HINT = (
    "\n(a certificate the installer does not trust: behind a proxy that inspects TLS, name its "
    "CA bundle (PEM) in SSL_CERT_FILE, or NODE_EXTRA_CA_CERTS for npm, in the workflow's env; "
    'the installer is given them: docs/agent-protocols.md, "Dependencies: environment")'
)

LOGINS_WITHHELD_HINT = (
    "\n(the workflow's {names} gave a URL with a login (`user:password@`), and evalward hands "
    "no credential to the pull request's code: the installer was given the URL without it. A "
    "proxy or package index the install needs must let the runner in without a login (by its "
    "address or its network); a private index that needs a token is not supported "
    '(docs/agent-protocols.md, "Dependencies: environment"))'
)
"""Why an install may have failed that was given a proxy's or an index's URL without the
login the workflow's variable held (`process.logins_withheld`)."""

CONFIG_STOP = "uv.toml"
"""The empty uv configuration at the top of a build folder (`stop_config`)."""

NODE_IMAGE_HINT = (
    "The action's default image carries Python only; run the image with Node.js instead: "
    '`docker://ghcr.io/evalward/evalward:<version>-node` (docs/github.md, "Agents with '
    'dependencies").'
)


@dataclass(frozen=True)
class Finished:
    """One command's end: its exit code and the tail of what it printed."""

    code: int
    output: str


class Installer:
    """Runs installer commands as `user` (None: evalward's own) with `env` and a HOME under
    `home`, all of them within the time `limits` allow from now (its source says whose bound
    it is). With a `watched` folder, a command that makes it go over a cap of `limits` is
    ended then, not at the end of its time (`install_watch`: HOME, when it is a child of
    `watched`, holds caches, bounded apart from what the environment keeps). A command
    that fails names `logins_withheld`, the variables whose URLs `env` holds without their
    logins (`process.logins_withheld`)."""

    def __init__(
        self,
        user: AgentUser | None,
        env: Mapping[str, str],
        home: Path,
        limits: EnvironmentLimits,
        sessions: Sessions,
        watched: Path | None = None,
        *,
        logins_withheld: Sequence[str] = (),
    ) -> None:
        self.user = user
        self.logins_withheld = tuple(logins_withheld)
        scratch = home.name if watched is not None and home.parent == watched else None
        self.bounds = (watched, scratch, limits) if watched is not None else None
        self.env = {
            **env,
            "HOME": str(home),
            "TMPDIR": str(home),
            "UV_PYTHON_DOWNLOADS": "never",
            "UV_PYTHON_PREFERENCE": "only-system",
            "UV_CACHE_DIR": str(home / "uv-cache"),
            "UV_NO_PROGRESS": "1",
            "npm_config_cache": str(home / "npm-cache"),
            "npm_config_update_notifier": "false",
            "npm_config_fund": "false",
            "npm_config_audit": "false",
        }
        self.home = home
        self.cap = limits.timeout
        self.declared = f"{limits.declared}: " if limits.declared else ""
        self.sessions = sessions
        """Where its commands' sessions are known while they run (`strays`)."""
        self.deadline = time.monotonic() + self.cap.value

    async def run(self, argv: Sequence[str], cwd: Path, extra: Mapping[str, str] = {}) -> Finished:
        """Run one command to its end (or its timeout: then its group is killed)."""
        user = self.user
        try:
            async with self.sessions.lock:
                process = await asyncio.create_subprocess_exec(
                    *argv,
                    cwd=cwd,
                    env={**self.env, **extra},
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.STDOUT,
                    start_new_session=True,
                    user=user.uid if user else None,
                    group=user.gid if user else None,
                    extra_groups=[] if user else None,
                    umask=0o022,
                    preexec_fn=landlock.confinement() if user else None,
                )
                self.sessions.live.add(process.pid)
        except OSError as exc:
            raise AgentRunError(f"cannot start {argv[0]}: {exc.strerror or exc}") from None
        except SubprocessError:
            raise AgentRunError(f"cannot start {argv[0]}: {landlock.NOT_ENTERED}") from None
        try:
            return await self._wait(process, argv)
        finally:
            self.sessions.live.discard(process.pid)

    async def _wait(self, process: asyncio.subprocess.Process, argv: Sequence[str]) -> Finished:
        output = asyncio.create_task(read_tail(process.stdout))
        try:
            async with asyncio.timeout(max(0.0, self.deadline - time.monotonic())):
                too_large = await self._wait_within_bounds(process)
        except TimeoutError:
            raise AgentRunError(
                f"{self.declared}the install did not finish within {self.cap.value:g} s "
                f"({Path(argv[0]).name} was still running), {self.cap.told()}"
            ) from None
        finally:
            await kill_group(process, 1.0)
        if too_large is not None:
            raise too_large
        try:
            async with asyncio.timeout(5):
                printed = await output
        except TimeoutError:  # a process that left the group still holds the pipe
            printed = b"(the rest of its output is held by a process it left running)"
        return Finished(process.returncode or 0, tail(printed, 3000))

    async def _wait_within_bounds(
        self, process: asyncio.subprocess.Process
    ) -> AgentRunError | None:
        """Wait for `process`; or, as soon as the bounded folder goes over a cap, the error
        that says so (the caller ends the process)."""
        if self.bounds is None:
            await process.wait()
            return None
        ended = asyncio.create_task(process.wait())
        watcher = asyncio.create_task(watch(*self.bounds))
        try:
            await asyncio.wait({ended, watcher}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watcher.cancel()
            ended.cancel()
        if watcher.done() and not watcher.cancelled() and not ended.done():
            return watcher.result()
        return None

    async def check(self, argv: Sequence[str], cwd: Path, extra: Mapping[str, str] = {}) -> str:
        """Run a command that must succeed; its output, or an AgentRunError quoting it."""
        done = await self.run(argv, cwd, extra)
        if done.code != 0:
            said = [x for x in done.output.strip().splitlines() if not x.startswith("Using ")]
            command = " ".join(self._shown(argv))
            raise AgentRunError(
                f"`{command}` failed (exit {done.code}): "
                + ("\n".join(said).strip() or "it printed nothing")
                + (UNTRUSTED_TLS_HINT if UNTRUSTED_TLS.search(done.output) else "")
                + self._logins_hint()
            )
        return done.output

    def _logins_hint(self) -> str:
        """Why an install that needed a login the workflow gave may have failed."""
        if not self.logins_withheld:
            return ""
        return LOGINS_WITHHELD_HINT.format(names=", ".join(self.logins_withheld))

    def _shown(self, argv: Sequence[str]) -> list[str]:
        """A command as a message shows it: programs by name, paths in the folder being
        built from that folder."""
        inside = f"{self.home.parent}/"
        return [Path(argv[0]).name, *(a.removeprefix(inside) for a in argv[1:])]


def uv_binary() -> str:
    """The uv that came with evalward (a dependency: a binary wheel from PyPI)."""
    try:
        return str(uv.find_uv_bin())
    except FileNotFoundError:
        raise ConfigError(
            "evalward's installation has no `uv`, which builds Python environments; "
            "reinstall evalward (uv is one of its dependencies)"
        ) from None


def open_to_others(path: Path, permission: int = stat.S_IXOTH) -> bool:
    """Whether a user that neither owns `path` nor shares its group may run it (or, with
    `permission` S_IROTH, read it): the file allows others that, and every directory on the
    way to it lets them through."""
    try:
        if not path.stat().st_mode & permission:
            return False
        return all(parent.stat().st_mode & stat.S_IXOTH for parent in path.parents)
    except OSError:
        return False


def runnable_copy(program: Path, tools: Path) -> Path:
    """`program` where an agent user may run it: itself when it is open to others, else a copy
    (a hard link where the filesystem allows) in `tools`, a folder evalward owns and others
    may enter. evalward installed in a private folder (a virtualenv under root's 0700 home)
    would otherwise leave the agent user unable to start the installer it ships."""
    if open_to_others(program):
        return program
    tools.mkdir(mode=0o711, exist_ok=True)
    target = tools / program.name
    if not target.exists():
        scratch = tools / f".{program.name}.{os.getpid()}"
        try:
            os.link(program, scratch)
        except OSError:
            shutil.copyfile(program, scratch)
        scratch.chmod(0o755)
        scratch.replace(target)
    return target


def node_tools(env: Mapping[str, str]) -> tuple[str, str]:
    """`node` and `npm` on the workflow's PATH, or a ConfigError naming the image to use."""
    path = env.get("PATH", os.defpath)
    node, npm = shutil.which("node", path=path), shutil.which("npm", path=path)
    if node is None or npm is None:
        raise ConfigError(
            f"this machine has no {'node' if node is None else 'npm'} on PATH, which an "
            f"agent's `environment.node` needs. {NODE_IMAGE_HINT}"
        )
    return node, npm


async def python_interpreter(installer: Installer, uv_bin: str, cwd: Path) -> tuple[str, str]:
    """The interpreter uv would build the virtualenv on, as the agent user finds it from `cwd`
    (a `.python-version` or `requires-python` there may choose among the system's): its path
    and its version."""
    found = await installer.run([uv_bin, "python", "find", "--system"], cwd)
    version = await installer.run([uv_bin, "python", "find", "--system", "--show-version"], cwd)
    if found.code != 0 or version.code != 0:
        raise AgentRunError(
            "no Python interpreter the agent user can run was found on PATH:\n"
            + (found.output or version.output).strip()
        )
    return found.output.strip().splitlines()[-1], version.output.strip().splitlines()[-1]


def editable_installs(venv: Path) -> list[str]:
    """Distributions installed in editable mode: they point into the copy of the checkout the
    installer ran in, which is gone by the time the agent runs. What the install left is read
    without following a link into or out of the virtualenv (`safe_files`); a record that is
    not a regular file is refused (AgentRunError naming it)."""
    found: list[str] = []
    for record in _direct_urls(venv):
        try:
            direct = json.loads(read_regular(record, MAX_RECORD_BYTES))
        except UnsafeFile as exc:
            raise AgentRunError(
                f"the install left {Path(venv.name) / record.relative_to(venv)}, which {exc.reason}"
            ) from None
        except (OSError, ValueError):
            continue
        if isinstance(direct, dict) and (direct.get("dir_info") or {}).get("editable"):
            found.append(record.parent.name.split("-")[0])
    return found


MAX_RECORD_BYTES = 1024 * 1024
"""The largest `direct_url.json` read (pip writes a few hundred bytes)."""


def _direct_urls(venv: Path) -> list[Path]:
    """`lib/python*/site-packages/*.dist-info/direct_url.json`, through real folders only."""
    found: list[Path] = []
    for lib in _folders(venv / "lib", lambda n: n.startswith("python")):
        for info in _folders(lib / "site-packages", lambda n: n.endswith(".dist-info")):
            if os.path.lexists(info / "direct_url.json"):
                found.append(info / "direct_url.json")
    return found


def _folders(parent: Path, wanted: Callable[[str], bool]) -> list[Path]:
    try:
        if not stat.S_ISDIR(os.lstat(parent).st_mode):
            return []
        with os.scandir(parent) as entries:
            return sorted(
                Path(e.path) for e in entries if wanted(e.name) and e.is_dir(follow_symlinks=False)
            )
    except OSError:
        return []


def stop_config(build: Path) -> None:
    """Write evalward's empty uv configuration at the top of `build`, evalward's, read-only:
    uv, run anywhere below it, reads the side's own settings or none, never one from above."""
    stop = build / CONFIG_STOP
    stop.write_text("# evalward: uv reads no settings from the folders above this one\n")
    stop.chmod(0o444)


def remove_tree(path: Path) -> None:
    """Remove a folder the installer used (its scratch copy, its caches), or a sealed one, as
    `files.trees` does; what it cannot remove within its bounds stays, for the job's end."""
    with contextlib.suppress(TreeError):
        trees.remove_tree(path)
