"""Whether the programs the definitions name exist, checked by `evalward validate` and, for
the head's agents and its runs' playground services, by a run before any model call
(preflight.py).

An agent's `runtime`, its command tools and its stdio MCP servers each name a program (argv,
no shell, run from the repository root), and so does a playground service's `start` and
`dump`. A misspelt interpreter (`pythonnn3`) or a script that is not in the checkout would
otherwise be found only when a run starts it, after model calls, as that run's error. Here
each is refused at the YAML line that names it:

- the program itself (argv[0]), given by a bare name: it must be on PATH (a path in the
  checkout is checked with the other files a definition names, resources/references.py);
- an interpreter's script (`python3 tools/refund.py`, `node server.js`): the first argument
  that is not an option, when it is a path, must be a file of the checkout.

A bare name this machine does not have is only a warning where the run may still find it:
a program the action's image carries (`IMAGE_PROGRAMS`), or, for a definition with an
`environment`, one its packages may install (their programs are put first on PATH only when
the action builds it), but never a misspelt interpreter its virtualenv would have to hold.
An argument holding a placeholder (`{input}`, `{port}`) is left alone.

What a program reads besides what it names is its definition's `watch`: a glob of it that
matches no file of the tree is a warning at its line (`unmatched_watches`).
"""

from __future__ import annotations

import difflib
import re
import shutil
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from evalward.errors import Problem
from evalward.files.committed import RepoFiles
from evalward.plan.fingerprint import FileIndex
from evalward.resources import ResourceSet
from evalward.resources.agents.agent import AgentEnvironment
from evalward.resources.playground import ServicePart
from evalward.resources.reading.locate import Locator
from evalward.resources.reading.yamlsource import PathKey
from evalward.resources.resource_set import Located

INTERPRETER = re.compile(r"^(?:python[\d.]*|node|nodejs|bash|sh|zsh|ruby|perl|php|tsx|ts-node)\Z")
"""Programs whose first argument that is not an option is the script they run."""
INLINE_CODE = frozenset({"-m", "-c", "-e", "-p", "--eval", "--print"})
"""Options after which an interpreter runs no script file (a module, code given inline)."""
SCRIPT_SUFFIX = re.compile(r"\.(?:py|js|mjs|cjs|ts|mts|sh|bash|rb|pl|php)\Z")
VENV_PYTHON = re.compile(r"^python(?:3(?:\.\d+)?)?\Z")
"""The interpreter's names in a virtualenv's `bin` (`uv venv`): python, python3, python3.N."""

NODE_IMAGE = "the action's `-node` image"
IMAGE_PROGRAMS: Mapping[str, str] = {
    **dict.fromkeys(
        ("python", "python3", "python3.12", "pip", "pip3", "pip3.12"), "the action's image"
    ),
    **dict.fromkeys(("uv", "uvx", "git", "sh", "bash"), "the action's image"),
    **dict.fromkeys(("node", "npm", "npx"), NODE_IMAGE),
}
"""Programs on the PATH of the action's image (the Dockerfile): Python 3.12 and pip from its
base image, uv and uvx from evalward's own dependencies, git and the shells of Debian; node,
npm and npx in the `-node` image only."""


@dataclass
class Absent:
    """What the checks found: refusals, and warnings of programs this machine lacks that a
    run in the action may still find."""

    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)


@dataclass(frozen=True)
class _Program:
    """One program a definition names: what it is (`agent 'bot': the MCP server 'refunds'`),
    where its argv may be set (the line of the one that is set wins), the argv, and the
    environment whose packages its PATH starts with."""

    located: Located[Any]
    what: str
    at: tuple[PathKey, ...]
    argv: list[str]
    environment: AgentEnvironment | None


def missing_programs(
    resources: ResourceSet,
    env: Mapping[str, str],
    agents: Iterable[str] | None = None,
    *,
    services: bool = False,
) -> Absent:
    """A problem (or a warning) at each program (or interpreter's script) that is not there:
    every agent's, or only those of `agents` (a run's); with `services`, every playground
    service's too."""
    locator = Locator(resources)
    found = Absent()
    programs = list(_agent_programs(resources, agents))
    if services:
        programs += _service_programs(resources)
    for program in programs:
        for index, why, refused in _absent(program.argv, program.environment, resources.files, env):
            message = f"{program.what} runs {program.argv[index]!r}, {why}"
            candidates = (
                locator.problem(program.located, (*at, index), message) for at in program.at
            )
            # the argument is where either form puts it (the other is only its parent's mark)
            problem = max(candidates, key=lambda p: (p.line or 0, p.column or 0))
            (found.problems if refused else found.warnings).append(problem)
    return found


def unmatched_watches(
    resources: ResourceSet,
    agents: Iterable[str] | None = None,
    *,
    services: bool = False,
    index: FileIndex | None = None,
) -> list[Problem]:
    """A warning at each `watch` glob that matches no file of the tree: every agent's, or
    only those of `agents` (a run's); with `services`, every playground service's too. A
    misspelt folder (`tols/**`) watches nothing: a pull request that changes the files an
    agent's glob meant runs no Eval, and a service's copy holds none of them. A glob may be
    meant for files to come, so it is not refused. `index`: the tree's listing change
    detection made, where there is one (its folders are not listed again)."""
    if index is None or index.root != resources.root:
        index = FileIndex(resources.root)
    locator = Locator(resources)
    found = []
    watches = list(_watches(resources, agents, services))
    index.prefetch(glob for _, _, globs, _ in watches for glob in globs)  # one listing
    for located, at, globs, costs in watches:
        for glob in globs:
            if glob.endswith("/**") and glob.removesuffix("/**") in globs:
                continue  # `tools` is itself and every file below it: told once, as written
            meant = [glob, f"{glob}/**"] if f"{glob}/**" in globs else [glob]
            if not index.matching(meant):
                message = (
                    f"{glob!r} matches no file of the repository (paths are from its root), "
                    f"so {costs}; fix the glob, or remove it"
                )
                found.append(locator.problem(located, at, message))
    return found


_AGENT_WATCH = "a change to the files it means runs no Eval"
_SERVICE_WATCH = (
    "the copy the service runs from in the action holds none of the files it means, and its "
    "runs are not keyed on them"
)


def _watches(
    resources: ResourceSet, agents: Iterable[str] | None, services: bool
) -> Iterator[tuple[Located[Any], PathKey, list[str], str]]:
    """Each definition's `watch`, where it names one, with what a glob matching nothing
    costs it: the agents', then the services'."""
    names = resources.agents if agents is None else set(agents) & resources.agents.keys()
    for name in sorted(names):
        agent = resources.agents[name]
        if agent.resource.spec.watch:
            yield agent, ("spec", "watch"), agent.resource.spec.watch, _AGENT_WATCH
    if not services:
        return
    for _, located in _service_definitions(resources):
        playground = located.resource.spec.playground
        service = playground.service if playground is not None else None
        if service is not None and service.watch:
            at: PathKey = ("spec", "playground", "service", "watch")
            yield located, at, service.watch, _SERVICE_WATCH


def _service_definitions(resources: ResourceSet) -> list[tuple[str, Located[Any]]]:
    """The Evals and fixtures that may define a playground service, by kind."""
    return [
        *(("Eval", located) for _, located in sorted(resources.evals.items())),
        *(("EvalFixture", located) for _, located in sorted(resources.fixtures.items())),
    ]


def _agent_programs(resources: ResourceSet, agents: Iterable[str] | None) -> Iterator[_Program]:
    names = resources.agents if agents is None else set(agents) & resources.agents.keys()
    for name in sorted(names):
        located = resources.agents[name]
        spec = located.resource.spec
        for program in spec.programs():  # each a run may start (a disabled tool never is)
            if not program.starts:
                continue
            at = program.at
            # `command: [...]` is short for `command: {run: [...]}`: either may hold argv
            forms = (at, (*at, "run"), at[:-1]) if at[-1] == "run" else (at, (*at, "run"))
            what = f"agent {name!r}: {program.what}"
            yield _Program(located, what, forms, program.argv, spec.environment)


def _service_programs(resources: ResourceSet) -> Iterator[_Program]:
    """The `start` and `dump` programs of each playground service an Eval or a fixture
    defines."""
    for kind, located in _service_definitions(resources):
        playground = located.resource.spec.playground
        service = playground.service if playground is not None else None
        if service is None:
            continue
        name = located.resource.metadata.name
        for key, argv in (("start", service.start), ("dump", service.dump)):
            if argv:
                at: PathKey = ("spec", "playground", "service", key)
                what = f"{kind} {name!r}: its playground service's `{key}`"
                yield _Program(located, what, (at,), argv, service.environment)


def absent_service_programs(
    service: ServicePart, files: RepoFiles, env: Mapping[str, str]
) -> Iterator[tuple[PathKey, str]]:
    """(its path below `service`, why) for each program of a playground service, or its
    interpreter's script, that is not there and would not start: what a run refuses before
    its first model call, of the tree its playground is made from (`files`), where the
    service's every run would be an error saying only that it exited."""
    for key, argv in (("start", service.start), ("dump", service.dump)):
        if not argv:
            continue
        for index, why, refused in _absent(argv, service.environment, files, env):
            if refused:
                yield (key, index), f"its service's `{key}` runs {argv[index]!r}, {why}"


def _absent(
    argv: list[str],
    environment: AgentEnvironment | None,
    files: RepoFiles,
    env: Mapping[str, str],
) -> Iterator[tuple[int, str, bool]]:
    """(index in argv, why, refused: else a warning) for the program and its script when
    either is not there."""
    if not argv or "{" in argv[0]:
        return
    name = argv[0]
    if "/" not in name and shutil.which(name, path=env.get("PATH", "")) is None:
        why, refused = _not_on_path(name, files, environment)
        yield 0, why, refused
        if refused:
            return
    if not INTERPRETER.match(PurePosixPath(name).name):
        return
    for index, argument in enumerate(argv[1:], start=1):
        if argument in INLINE_CODE:
            return
        if argument.startswith("-"):
            continue
        looks_like_a_file = "/" in argument or SCRIPT_SUFFIX.search(argument)
        if looks_like_a_file and "{" not in argument and not files.is_file(argument):
            side = files.describe() if files.committed else "the repository"
            why = (
                f"which is not a file of {side} (paths are from its root; an untracked or "
                "git-ignored file is never run)"
            )
            yield index, why, True
        return


def _not_on_path(
    name: str, files: RepoFiles, environment: AgentEnvironment | None
) -> tuple[str, bool]:
    """Why a bare `name` this machine's PATH does not have may not run, and whether that is
    a refusal (else a warning: the run in the action may find it)."""
    if files.is_file(name):
        return (
            f"which is not on PATH: a file of the repository runs only by its path from the "
            f"root; write `./{name}`",
            True,
        )
    if name in IMAGE_PROGRAMS:
        return (
            f"which is not on this machine's PATH: it runs in {IMAGE_PROGRAMS[name]}, which "
            "has it, but not here; install it to run here",
            False,
        )
    installs = [p for p in (environment.python, environment.node) if p] if environment else []
    misspelt = bool(environment and environment.python) and (
        name.startswith("python") and not VENV_PYTHON.match(name)
    )
    if installs and not misspelt:
        return (
            f"which is not on this machine's PATH: it runs only if its environment "
            f"({', '.join(installs)}) installs a program of that name; if none does, fix the "
            "name",
            False,
        )
    venv = (
        ", and not a name its environment's virtualenv gives its interpreter (python, python3, "
        "python3.N)"
        if misspelt
        else ""
    )
    close = difflib.get_close_matches(name, IMAGE_PROGRAMS, 1)
    hint = f" (`{close[0]}`?)" if close else ""
    return (
        "which is on no PATH: not this machine's, not the action's image's (python3, node, "
        f"uv, ...){venv}; expected a program on PATH by its name, or a file of the repository "
        f"by its path from the root (`tools/serve.sh`); fix the name{hint}, or install the "
        "program",
        True,
    )
