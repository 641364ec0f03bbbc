"""Where and as whom the action runs programs from a checkout: powerless, and blind to secrets.

In the action, bring-your-own agents and command tools are code from the pull request. They run
as an unprivileged user (`evalward-agent`, created in the image), so they cannot read evalward's
process environment (`/proc/<pid>/environ` of another user is closed), signal it, or write
what evalward owns: its installation, `.evalward/`, the runner's file-command files. They work
in a read-only copy of the checkout (without `.git` and `.evalward`) and get a private temp
dir as HOME and TMPDIR, removed when the process is gone. Their environment is built from
scratch by `process.limited_env`. A run's programs end with the run, and the sides take turns
(`apart`).

The copies, the homes and every environment built for them live in a folder of
`AGENTS_PLACE`, never under TMPDIR (which every user may write), below folders only root may
write, or no program starts (`open_above` says why).

Switching user needs root, which a Docker action always has. Without root the isolation is
`unavailable`: a run that would start such a program is refused before anything runs, unless
the workflow turned the user switch off (`agent-isolation: off`), as `evalward action` on a
runner must. On the command line there is no sandbox at all: a developer's agents run as they
always did.

An agent that names an `environment` gets its packages here (`with_packages`): the built
environment's `bin` folders first on PATH, its variables, and links in its working copy
(`node_modules` beside the package.json), on top of everything above.
"""

from __future__ import annotations

import contextlib
import copy
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from evalward.errors import AgentRunError, ConfigError, GitError, TreeError
from evalward.files.committed import RepoFiles
from evalward.files.inside import link_on_the_way
from evalward.files.trees import REMOVAL, TreeBounds, remove_tree
from evalward.resources.agents.agent import AgentEnvironment, AgentSpec
from evalward.resources.models import Agent
from evalward.runtime.environments.environment_limits import EnvironmentLimits
from evalward.runtime.isolation.agent_users import CLAIMS, AgentUser, ClaimedUser
from evalward.runtime.isolation.apart import Apart
from evalward.runtime.isolation.checkout_copy import copy_side
from evalward.runtime.isolation.shared_places import AGENTS_PLACE
from evalward.runtime.processes.strays import RunProcesses, Sessions

COPY_BOUNDS = TreeBounds(depth=256, entries=1_000_000, seconds=300.0)
"""A checkout is copied for the agent user within these."""
ROOT_REMOVAL = TreeBounds(entries=10_000_000, seconds=600.0)
"""The job's end removes every copy and home within these: each copy a million entries at
most, each home what REMOVAL removes."""
NOT_COPIED = frozenset({".git", ".evalward"})
"""Left out of an agent's working copy (paths relative to the checkout): the history and
evalward's own output and cache."""


@dataclass(frozen=True)
class Packages:
    """What a built environment gives every process of its agent."""

    bin: tuple[Path, ...] = ()
    """Folders put first on PATH (the virtualenv's `bin`, `node_modules/.bin`)."""
    variables: tuple[tuple[str, str], ...] = ()
    """Set in the environment (VIRTUAL_ENV, NODE_PATH)."""
    links: tuple[tuple[str, Path], ...] = ()
    """(path in the working copy, from its root; what it links to): `node_modules`."""


@dataclass(frozen=True)
class EnvironmentRequest:
    """One agent's environment on one side."""

    agent: str
    side: str
    spec: AgentEnvironment
    checkout: Path
    """The side's checkout, as evalward sees it: what the key hashes."""
    source: Path
    """The copy of it the side's user may read: what the installer starts from."""
    not_copied: frozenset[str]
    user: AgentUser | None
    env: Mapping[str, str]
    """The installer's environment, already without secrets (`process.limited_env`)."""
    logins_withheld: tuple[str, ...] = ()
    """The variables of `env` whose URLs lost their logins (`process.logins_withheld`): a
    failed install names them."""
    limits: EnvironmentLimits | None = None
    """The bounds of its install (`environment_limits.side_limits`; None: its own and the
    store's)."""
    commit: str = ""
    """The commit of its files when `checkout` is not its tree (a code scorer's); "": its."""
    files: RepoFiles | None = None
    """The door to the side's files (files/committed.py): what the key hashes of the files
    the environment names, and, where `source` is the checkout itself, what the installer's
    copy is written from. None: `checkout` on disk (a folder evalward wrote: a scorer's)."""

    @property
    def label(self) -> str:
        return f"{self.agent} ({self.side})"


class Environments(Protocol):
    """The job's store of built environments (runtime/environments/environment.py's
    EnvironmentStore) as the sandboxes that hold it see it: a protocol, as that module builds on
    this one."""

    untrusted_head: bool
    """The job gates a pull request: its head is bounded by the base even where the base
    lacks the agent."""
    limits: EnvironmentLimits
    """The action's inputs' bounds, for an agent the base lacks."""

    def attach(
        self, live: Path, sessions: Sessions | None = None, apart: Apart | None = None
    ) -> None: ...
    def check(self, spec: AgentEnvironment, env: Mapping[str, str]) -> None: ...
    async def provide(self, request: EnvironmentRequest) -> Packages: ...
    def close(self) -> None: ...


@dataclass
class _Shared:
    """What every side's view of one sandbox shares: the folder of copies and homes."""

    sessions: Sessions
    """The programs started and still running, and the lock their starts take."""
    apart: Apart
    """The sides' turns and the runs' processes (`apart`)."""
    login: str
    """USER and LOGNAME of every agent process, either side's: the head user's name."""
    root: Path | None = None
    copies: dict[tuple[Path, frozenset[str] | None], Path] = field(default_factory=dict)
    """The working copies made, by checkout and what each holds (None: all of it): agents
    that read the same files share one."""
    pools: dict[tuple[Path, frozenset[str] | None], Path] = field(default_factory=dict)
    """The copies agents' copies link their files from, by checkout and what they hold:
    evalward's alone, no program runs in one and no environment is linked into one, so a
    link in it leads only where the commit's own does."""
    homes: dict[int, Path] = field(default_factory=dict)
    closed: dict[Path, int] = field(default_factory=dict)
    """Paths closed to others while agents run, with the mode to give back."""
    environments: Environments | None = None
    linked: set[Path] = field(default_factory=set)
    """Links to environments made in checkouts themselves (no user switch), removed at the end."""
    hidden: set[str] = field(default_factory=set)
    """Files left out of every working copy besides `not_copied`: those that define a
    simulated user, whose persona, goal and hidden facts the agent must not read."""
    reads: dict[tuple[Path, str | None], frozenset[str] | None] = field(default_factory=dict)
    """What the runs read of a checkout, by (checkout, agent) (`limit`); None: all of it."""
    sides: dict[Path, RepoFiles] = field(default_factory=dict)
    """Each checkout's side (`from_side`): a commit's copy is written from its tree."""
    claim: ClaimedUser | None = None
    """The agent users' claim (`agent-user: auto`), let go once none of their processes is
    left."""


class Sandbox:
    """The action's setting for every process it starts from a checkout.

    `user` None runs them as evalward's own user (still with a scratch environment and a
    private temp dir, in the checkout itself). `unavailable` says why the user switch that
    was asked for cannot happen; such a sandbox starts nothing.
    """

    def __init__(
        self,
        user: AgentUser | None,
        *,
        unavailable: str = "",
        not_copied: Iterable[str] = NOT_COPIED,
        agent_env: Iterable[str] = (),
    ) -> None:
        """evalward's own sandbox (the head side's, no environment, no run): its variants
        (`for_side`, `with_packages`, `in_run`) share what it makes."""
        self.user = user
        self.unavailable = unavailable
        self.not_copied = frozenset(not_copied)
        self.agent_env = frozenset(agent_env)
        """Variables the workflow lets any agent's `env:` list name (input `agent-env`)."""
        self.side = "head"
        self.packages: Packages | None = None
        self.run: RunProcesses | None = None
        """The run whose programs this sandbox starts (None: no run's, such as an http
        agent's server or a code scorer)."""
        self.agent: str | None = None
        """The agent whose programs this sandbox starts (`for_agent`): their working copy
        holds what that agent reads (`limit`). None: no agent's."""
        sessions = Sessions()
        users = (user, user.base_side()) if user is not None else ()
        self._shared = _Shared(sessions, Apart(sessions, users), users[0].name if users else "")
        self._apart = self._shared.apart

    def for_side(self, side: str) -> Sandbox:
        """The sandbox of one side's programs. The base side's run as another user than the
        head's (uid + 1): a pull request's program cannot signal, trace or read the
        environment of a base program (the base's scorers that grade it run in its turn)."""
        if side != "base":
            return self
        user = self.user.base_side() if self.user is not None else None
        return self._variant(user, side, self.packages)

    def for_agent(self, name: str) -> Sandbox:
        """This side's sandbox for the programs of one agent (its runs, tools, servers and
        environment): they run in the copy of what that agent reads."""
        variant = self._variant(self.user, self.side, self.packages, self.run)
        variant.agent = name
        return variant

    def with_packages(self, packages: Packages) -> Sandbox:
        """This side's sandbox for an agent whose processes get a built environment."""
        return self._variant(self.user, self.side, packages)

    def in_run(self, run: RunProcesses | None) -> Sandbox:
        """This sandbox for the programs of one run (`begin_run`): they are the run's."""
        return self._variant(self.user, self.side, self.packages, run)

    def _variant(
        self,
        user: AgentUser | None,
        side: str,
        packages: Packages | None,
        run: RunProcesses | None = None,
    ) -> Sandbox:
        """This sandbox, every setting kept, for another user, side, environment or run."""
        variant = copy.copy(self)
        variant.user = user
        variant.side = side
        variant.packages = packages
        variant.run = run
        return variant

    @property
    def environments(self) -> Environments | None:
        """Where agents' environments are built and kept (None: they are not built)."""
        return self._shared.environments

    def use_environments(self, store: Environments) -> None:
        self._shared.environments = store
        store.attach(self.root / "environments", self._shared.sessions, self._apart)

    @property
    def sessions(self) -> Sessions:
        return self._shared.sessions

    def keep_apart(
        self,
        log: Callable[[str], None],
        turns: Path | None = CLAIMS,
        default_branch: bool = False,
    ) -> None:
        """Track each run's processes in a cgroup where one can be made, and take the
        sides' turns with the other jobs of this machine (with a user switch: only root can
        take them; `default_branch`: the job's base is the repository's default branch);
        the first turn says what holds in `log`."""
        self._apart.track(turns if self.user is not None else None, log, default_branch)

    def head_alive(self, during: str) -> bool:
        """Whether the head's programs could have reached a base run (`Apart.head_alive`)."""
        return self._apart.head_alive(during)

    def begin_run(self) -> RunProcesses:
        """One run of this side, whose programs (`in_run`) are ended with it (`end_run`)."""
        return self._apart.begin_run(self.user.uid if self.user is not None else None)

    async def end_run(self, run: RunProcesses) -> None:
        """End every process of the run, escaped from its session or not, and every process
        of its user that no run under way can claim."""
        await self._apart.end_run(run)

    def turn(self, side: str, commit: str) -> contextlib.AbstractAsyncContextManager[None]:
        """A side's turn (`apart.Apart.turn`): the other side's programs are gone, and gone
        again when it ends."""
        return self._apart.turn(side, commit)

    def permitted_env(
        self, env: Mapping[str, str], head: Agent, base: Agent | None
    ) -> dict[str, str]:
        """The environment a head agent's programs may take their `env:` names from. The
        list is the pull request's own, so it may name only what the workflow allows
        (`agent-env`) or what the base branch's definition of the agent already lists:
        otherwise a pull request could name any secret of the job (`DATABASE_URL`)."""
        allowed = self.agent_env | (listed_in(base.spec) if base is not None else frozenset())
        asked = listed_in(head.spec)
        return {k: v for k, v in env.items() if k not in asked or k in allowed}

    @property
    def root(self) -> Path:
        """evalward's directory for working copies, homes and environments: others may pass,
        not list. With a user switch it is made in `AGENTS_PLACE` (`placed`: ConfigError when
        that place is not safe)."""
        if self._shared.root is None:
            where = placed(AGENTS_PLACE) if self.user is not None else None
            self._shared.root = Path(tempfile.mkdtemp(prefix="evalward-agents-", dir=where))
            self._shared.root.chmod(0o711)
        return self._shared.root

    def hide(self, paths: Iterable[str]) -> None:
        """Leave these files (relative to a checkout, `/`-separated) out of the working copies
        made from now on."""
        self._shared.hidden.update(paths)

    def limit(self, checkout: Path, paths: Iterable[str] | None, agent: str | None = None) -> None:
        """Copy only `paths` of `checkout` (and the links on their way) into the working copy
        `agent`'s programs run in (None: any program of `checkout` no agent's limit covers):
        what its runs read (`plan/reach.py`), not the whole repository. `paths` None: all
        of it, for an agent that may read anything. An agent reads no file in its copy that
        only another agent names, which its cache key would not hash."""
        self._shared.reads[checkout.resolve(), agent] = (
            frozenset(paths) if paths is not None else None
        )

    def from_side(self, checkout: Path, files: RepoFiles) -> None:
        """Make the working copy of `checkout` from its side's files (files/committed.py):
        a commit's tree, never the workspace's copy of it (default: the working tree)."""
        self._shared.sides[checkout.resolve()] = files

    def files_of(self, checkout: Path) -> RepoFiles:
        """The door to `checkout`'s files (`from_side`; default: the working tree)."""
        return self._shared.sides.get(checkout.resolve()) or RepoFiles.working_tree(checkout)

    def working_copy(self, checkout: Path) -> Path:
        """Where programs of `checkout` run: the checkout itself without a user switch, else a
        copy owned by evalward that the agent user can read and run but not change, holding
        what this sandbox's agent reads (`limit`). Made once per checkout and reach, on
        first use: agents that read the same files (all of it, say) share one."""
        if self.user is None:
            self._link_packages(checkout, in_checkout=True)
            return checkout
        key = checkout.resolve()
        copy = self._copy(key, self._reads(key))
        self._link_packages(copy, in_checkout=False)
        return copy

    def _copy(self, key: Path, reads: frozenset[str] | None) -> Path:
        """The copy of the checkout `key` holding `reads` (None: all of it), made on first
        use. Where several agents' copies of it hold less than all of it, the copy of what
        they read together is made first (`_pool`) and each copy links its files from there
        (`RepoFiles.write_copy`): a file several agents read is written once, as when they
        shared one copy."""
        copies = self._shared.copies
        if (key, reads) in copies:
            return copies[key, reads]
        pool, limits = None, self._shared.reads
        if reads is not None and (key, None) in limits and self._agents_limited(key) > 1:
            pool = self._pool(key, limits[key, None])  # every agent's reads, or all of it
        copies[key, reads] = self._write(key, reads, pool)
        return copies[key, reads]

    def _pool(self, key: Path, together: frozenset[str] | None) -> Path:
        """The copy of what `key`'s agents read `together` that their copies link from, made
        on first use. It is not a working copy: a working copy gets the environment's links
        (`_link_packages`), and a file linked through one would be the environment's, not the
        commit's."""
        pools = self._shared.pools
        if (key, together) not in pools:
            pools[key, together] = self._write(key, together, None)
        return pools[key, together]

    def _write(self, key: Path, reads: frozenset[str] | None, pool: Path | None) -> Path:
        """A new copy of the checkout `key` holding `reads`, its files linked from `pool`
        where it holds them."""
        target = Path(tempfile.mkdtemp(prefix="checkout-", dir=self.root))
        target.chmod(0o755)
        left_out = self.not_copied | self._shared.hidden
        try:
            files = self.files_of(key)
            copy_side(files, key, target / "tree", reads, left_out, COPY_BOUNDS, linked_from=pool)
        except (OSError, TreeError, GitError) as exc:
            raise AgentRunError(f"cannot copy the checkout for the agent user: {exc}") from None
        return target / "tree"

    def _agents_limited(self, checkout: Path) -> int:
        """How many agents' copies of `checkout` hold less than all of it (`limit`)."""
        return sum(
            1
            for (limited, agent), reads in self._shared.reads.items()
            if limited == checkout and agent is not None and reads is not None
        )

    def _reads(self, checkout: Path) -> frozenset[str] | None:
        """What this sandbox's programs may read of `checkout` (resolved): its agent's
        limit, else the checkout's, else all of it."""
        limits = self._shared.reads
        if self.agent is not None and (checkout, self.agent) in limits:
            return limits[checkout, self.agent]
        return limits.get((checkout, None))

    def _link_packages(self, tree: Path, *, in_checkout: bool) -> None:
        """Make the environment's links in `tree`. In evalward's own copy a `node_modules`
        the checkout brought is replaced; in a checkout itself (no user switch) it is not
        touched, and the run is refused instead."""
        for relative, target in self.packages.links if self.packages else ():
            link = tree / relative
            if link_on_the_way(tree, link.parent) is not None or not link.parent.is_dir():
                raise AgentRunError(f"cannot link {relative}: its folder is not in the checkout")
            if link.is_symlink() and link.readlink() == target:
                continue
            if os.path.lexists(link):
                if in_checkout and link not in self._shared.linked:
                    raise AgentRunError(
                        f"the checkout already has {relative}, where evalward links the "
                        "environment it built: remove it (do not install the agent's packages "
                        "in the workflow; its `environment` is built for it)"
                    )
                try:
                    remove_tree(link)
                except TreeError as exc:
                    raise AgentRunError(f"cannot replace {relative}: {exc}") from None
            link.symlink_to(target, target_is_directory=True)
            if in_checkout:
                self._shared.linked.add(link)

    def new_home(self) -> Path:
        """A private directory for one process: its HOME and TMPDIR (its name random, no
        count of the processes before it: a run learns nothing of its rep from it)."""
        home = Path(tempfile.mkdtemp(prefix="home-", dir=self.root))
        if self.user is not None:
            os.chown(home, self.user.uid, self.user.gid)
        return home

    def keep(self, pid: int, home: Path) -> None:
        """Remember the home of a started process until `release`."""
        self._shared.homes[pid] = home
        self._shared.sessions.live.add(pid)
        if self.run is not None:
            self._apart.adopt(self.run, pid)

    def environment(self, home: Path, env: Mapping[str, str]) -> dict[str, str]:
        """What the sandbox itself puts in a process's environment, over `env` (its PATH
        comes after the built environment's folders)."""
        values = {"HOME": str(home), "TMPDIR": str(home)}
        if self.user is not None:  # the head side's name on both sides: no side marker
            values |= {"USER": self._shared.login, "LOGNAME": self._shared.login}
        if self.packages is not None:
            path = env.get("PATH", os.defpath)
            values["PATH"] = os.pathsep.join([*map(str, self.packages.bin), path])
            values |= dict(self.packages.variables)
        return values

    def release(self, pid: int) -> Path | None:
        """Forget a process that is gone (its group was killed); the home it leaves, which
        `discard` removes."""
        home = self._shared.homes.pop(pid, None)
        self._shared.sessions.live.discard(pid)
        return home

    @staticmethod
    def discard(home: Path, bounds: TreeBounds = REMOVAL) -> str:
        """Remove a process's home, whatever it left there (`files.trees`: however deep,
        following no link, within `bounds`); what could not be removed, or ""."""
        try:
            remove_tree(home, bounds)
        except TreeError as exc:
            return str(exc)
        return ""

    def hold(self, claim: ClaimedUser) -> None:
        """Keep the claim on this sandbox's users until `close` has ended their processes."""
        self._shared.claim = claim

    def close_to_others(self, folder: Path) -> None:
        """Take every permission of others from `folder` until `close`: the workspace, whose
        `.git/config` may keep the checkout's token (`persist-credentials`). Agents work in
        their copies and need nothing of it."""
        if self.user is None:
            return
        mode = stat.S_IMODE(folder.stat().st_mode)
        self._shared.closed.setdefault(folder, mode)
        folder.chmod(mode & ~0o007)

    def give_back(self, modes: Mapping[Path, int]) -> None:
        """Give these paths these modes again at `close`, once no agent runs (what `protect`
        took from the runner's files and the workspace)."""
        for path, mode in modes.items():
            self._shared.closed.setdefault(path, mode)

    def close(self) -> str:
        """Kill what agent users left running; give back every permission taken from others
        (`close_to_others`, `protect`); remove every working copy and home. What could not
        be removed, or ""."""
        self._apart.kill_all()  # those that left their group (`setsid`, a double fork) outlive it
        shared = self._shared
        if shared.environments is not None:
            shared.environments.close()
        for link in shared.linked:
            with contextlib.suppress(OSError):
                link.unlink()
        shared.linked.clear()
        for folder, mode in shared.closed.items():
            with contextlib.suppress(OSError):
                folder.chmod(mode)
        shared.closed.clear()
        root, shared.root = shared.root, None
        shared.copies.clear()
        shared.pools.clear()
        shared.homes.clear()
        left = self.discard(root, ROOT_REMOVAL) if root is not None else ""
        self._apart.close()
        if shared.claim is not None:
            shared.claim.release()
            shared.claim = None
        return left


def placed(folder: Path) -> Path:
    """`folder`, made if it is not there, once it and every folder above it are folders
    only root (or evalward's own user) may write (`open_above`). ConfigError otherwise."""
    kept = f"evalward keeps the agents' working copies, homes and environments in {folder}"
    try:
        folder.mkdir(mode=0o711)
    except FileExistsError:
        pass
    except OSError as exc:
        raise ConfigError(f"{kept}, and cannot make it: {exc.strerror or exc}") from None
    if (found := open_above(folder)) is not None:
        raise ConfigError(
            f"{kept}, and {found}: an agent user could put files above the other side's "
            "programs. Make every folder on the way root's, writable by root alone"
        )
    return folder


def open_above(folder: Path) -> str | None:
    """What makes `folder` or a folder above it one that others than root and evalward's own
    user may write, or None. A program reads files from the folders above where it runs (uv
    its nearest `uv.toml` and a `pyproject.toml` workspace): one an agent user wrote there
    would choose what a program of the other side installs and runs."""
    try:
        real = folder.resolve(strict=True)
    except OSError as exc:
        return f"{folder} cannot be read ({exc.strerror or exc})"
    for each in (real, *real.parents):
        info = each.lstat()
        if (
            not stat.S_ISDIR(info.st_mode)
            or info.st_uid not in (0, os.geteuid())
            or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        ):
            return (
                f"{each} is not a folder only root may write (owner {info.st_uid}, mode "
                f"{stat.S_IMODE(info.st_mode):o})"
            )
    return None


def listed_in(spec: AgentSpec) -> frozenset[str]:
    """Every variable the programs of an agent's spec ask for by name (runtime, command
    tools, MCP servers)."""
    return frozenset(name for program in spec.programs() for name in program.env)
