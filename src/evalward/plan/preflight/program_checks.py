"""Whether the programs an agent names exist, checked by `evalward validate` and, for the
head's agents, by a run before any model call (preflight.py).

An agent's `runtime`, its command tools and its stdio MCP servers each name a program (argv,
no shell, run from the repository root). A misspelt interpreter (`pythonnn3`) or a script
that is not in the checkout would otherwise be found only when a run starts it, after model
calls, as that run's error. Here each is refused at the YAML line that names it:

- the program itself (argv[0]), given by a bare name: it must be on PATH (a path in the
  checkout is checked with the other files a definition names, resources/references.py);
- an interpreter's script (`python3 tools/refund.py`, `node server.js`): the first argument
  that is not an option, when it is a path, must be a file of the checkout.

A bare name is not looked up for an agent with an `environment`: the programs its packages
install are put first on PATH only when the action builds it. An argument holding a
placeholder (`{input}`, `{port}`) is left alone.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable, Iterator, Mapping
from pathlib import PurePosixPath

from evalward.errors import Problem
from evalward.files.committed import RepoFiles
from evalward.resources import ResourceSet
from evalward.resources.agent import AgentSpec
from evalward.resources.locate import Locator
from evalward.resources.yamlsource import PathKey

INTERPRETER = re.compile(r"^(?:python[\d.]*|node|nodejs|bash|sh|zsh|ruby|perl|php|tsx|ts-node)$")
"""Programs whose first argument that is not an option is the script they run."""
INLINE_CODE = frozenset({"-m", "-c", "-e", "-p", "--eval", "--print"})
"""Options after which an interpreter runs no script file (a module, code given inline)."""
SCRIPT_SUFFIX = re.compile(r"\.(?:py|js|mjs|cjs|ts|mts|sh|bash|rb|pl|php)$")


def missing_programs(
    resources: ResourceSet, env: Mapping[str, str], agents: Iterable[str] | None = None
) -> list[Problem]:
    """A problem at each program (or interpreter's script) an agent names that is not there:
    every agent's, or only those of `agents` (a run's)."""
    locator = Locator(resources)
    problems: list[Problem] = []
    names = resources.agents if agents is None else set(agents) & resources.agents.keys()
    for name in sorted(names):
        located = resources.agents[name]
        spec = located.resource.spec
        for what, at, argv in _programs(spec):
            for index, why in _absent(argv, resources.files, env, on_path=spec.environment is None):
                message = f"agent {name!r}: {what} runs {argv[index]!r}, {why}"
                # `command: [...]` is short for `command: {run: [...]}`: the argument is
                # where either form puts it (the other is only its parent's mark)
                candidates = (
                    locator.problem(located, (*at, *run, index), message) for run in ((), ("run",))
                )
                problems.append(max(candidates, key=lambda p: (p.line or 0, p.column or 0)))
    return problems


def _programs(spec: AgentSpec) -> Iterator[tuple[str, PathKey, list[str]]]:
    """(what, where its argv is set, the argv) of each program the agent names."""
    program = spec.runtime_program()
    if program is not None:
        yield "its runtime", program.at, program.argv
    for index, tool in enumerate(spec.tools):
        if tool.command is not None and tool.enabled:  # a disabled tool is never started
            at: PathKey = ("spec", "tools", index, "command")
            yield f"the command tool {tool.tool_name!r}", at, tool.command.run
    for server_name, server in spec.mcp_servers.items():
        if server.command is not None:
            at = ("spec", "mcpServers", server_name, "command")
            yield f"the MCP server {server_name!r}", at, server.command.run


def _absent(
    argv: list[str], files: RepoFiles, env: Mapping[str, str], *, on_path: bool
) -> Iterator[tuple[int, str]]:
    """(index in argv, why) for the program and its script when either is not there."""
    if not argv or "{" in argv[0]:
        return
    program = argv[0]
    if "/" not in program and on_path and shutil.which(program, path=env.get("PATH", "")) is None:
        yield 0, "which is not on PATH; fix the name, or install it where the run finds it"
        return
    if not INTERPRETER.match(PurePosixPath(program).name):
        return
    for index, argument in enumerate(argv[1:], start=1):
        if argument in INLINE_CODE:
            return
        if argument.startswith("-"):
            continue
        looks_like_a_file = "/" in argument or SCRIPT_SUFFIX.search(argument)
        if looks_like_a_file and "{" not in argument and not files.is_file(argument):
            side = files.describe() if files.committed else "the repository"
            yield (
                index,
                (
                    f"which is not a file of {side} (paths are from its root; an untracked or "
                    "git-ignored file is never run)"
                ),
            )
        return
