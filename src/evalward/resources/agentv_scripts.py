"""AgentV's script graders (`script`, `code-grader`, and the older `code_judge`) as code
scorers with `protocol: script` (resources/code_scorer.py).

AgentV runs a command, `[python3, check.py]` or `[uv, run, check.py]`, in the eval file's
folder (or its `cwd`). evalward runs the Python or JavaScript file that command names, with
the command's other arguments, as it runs every code scorer: its text read from the same
commit as the eval file (so under `gate-config: base` the base branch's grades a pull
request), as the agent user, with no secret, bounded. A command whose program is not such a
file (TypeScript, a shell line) is refused at its line, saying why.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Callable
from typing import Any

from evalward.resources.agentv_problem import AgentVProblem
from evalward.resources.yamlsource import PathKey

SCRIPT_GRADERS = ("script", "code-grader", "code-judge", "code-evaluator", "script-grader")
"""AgentV's script-run graders, in the current and the older spellings (`code_judge`)."""

_RUNNABLE = {".py": "python", ".js": "javascript", ".cjs": "javascript", ".mjs": "javascript"}
_RUNNERS = {"python", "python3", "uv", "run", "node", "bun", "npx", "tsx", "deno"}
"""Words of a command that only say how to run the file it names."""


def script_assertion(
    item: dict[str, Any],
    path: PathKey,
    base: dict[str, Any],
    locate: Callable[[str, PathKey], str],
) -> dict[str, Any]:
    """One script grader as a code assertion; `locate` turns a path relative to the eval
    file into a repository path (or raises)."""
    key = "command" if "command" in item else "script"
    command = item.get(key)
    if isinstance(command, str):
        command = shlex.split(command)
    if not isinstance(command, list) or not command or not all(isinstance(c, str) for c in command):
        raise AgentVProblem(
            (*path, key), "expected the grader's command: a list of words or a line"
        )
    found = next(
        (i for i, word in enumerate(command) if posixpath.splitext(word)[1] in _RUNNABLE), None
    )
    if found is None or any(word not in _RUNNERS for word in command[:found]):
        raise AgentVProblem(
            (*path, key),
            f"evalward runs a script grader's Python or JavaScript file (`[python3, "
            f"check.py]`, `[node, check.js]`); {shlex.join(command)!r} names none it can run "
            "(a TypeScript grader can be compiled to JavaScript, a shell line written as a "
            "Python script)",
        )
    cwd = item.get("cwd", ".")
    if not isinstance(cwd, str):
        raise AgentVProblem((*path, "cwd"), f"expected a folder; found {cwd!r}")
    script = posixpath.normpath(posixpath.join(cwd, command[found]))
    out: dict[str, Any] = {
        **base,
        "type": "code",
        "protocol": "script",
        "file": locate(script, (*path, key)),
        "args": command[found + 1 :],
    }
    if isinstance(item.get("config"), dict):
        out["config"] = item["config"]
    threshold = item.get("threshold")
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, int | float):
            raise AgentVProblem((*path, "threshold"), f"expected a number; found {threshold!r}")
        out["threshold"] = threshold
    timeout = item.get("timeout_seconds", item.get("timeout"))
    if isinstance(timeout, int | float) and not isinstance(timeout, bool) and 0 < timeout <= 600:
        out["timeoutSeconds"] = timeout
    return out
