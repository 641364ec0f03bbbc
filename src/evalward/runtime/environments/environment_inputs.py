"""The files an environment is built from (its requirements file, `pyproject.toml`,
`package.json` and their locks), checked before any installer reads them.

They come from the side's checkout, which a pull request wrote: one may be a link (to a
device that never ends, or out of the repository), a file of gigabytes, bytes that are not
text or JSON nested past any parser. An installer handed such a file hangs until its time
limit, runs out of memory or dies with its own stack trace; here each is refused first, as
that side's error naming the file and what is wrong with it.
"""

from __future__ import annotations

import posixpath
import tomllib
from pathlib import Path
from typing import Any

from evalward.errors import AgentRunError, UnsafeFile
from evalward.files.safe_files import read_regular
from evalward.resources.agents.agent import AgentEnvironment
from evalward.text import jsontext

MAX_INPUT_BYTES = 64 * 1024 * 1024
"""The largest file an environment is built from (a large project's lock takes a few MB)."""
MAX_DEPTH = 64
"""How deeply a lock's lists and tables may nest (a real one: under ten)."""


def check_inputs(source: Path, spec: AgentEnvironment) -> None:
    """AgentRunError naming the first of `spec`'s files under `source` (the side's copy of
    its checkout) that is not a well-formed regular file. A lock file that is not there is
    fine (an installer without one resolves afresh)."""
    root = source.resolve()
    for path in spec.files():
        check_input(root, path)


def check_input(root: Path, path: str) -> None:
    """One file of an environment, `path` from the checkout `root` (see `check_inputs`)."""
    where = root / path
    if not where.parent.resolve().is_relative_to(root):
        raise AgentRunError(f"{path}: its folder is a link out of the repository")
    try:
        raw = read_regular(where, MAX_INPUT_BYTES)
    except FileNotFoundError:
        return
    except UnsafeFile as exc:
        raise AgentRunError(f"{path} {exc.reason}; an environment is built from files") from None
    except OSError as exc:
        raise AgentRunError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    problem = _malformed(posixpath.basename(path), raw)
    if problem:
        raise AgentRunError(f"{path}: {problem}")


def _malformed(name: str, raw: bytes) -> str:
    """What is wrong with a file's content ("" when nothing is)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text (byte {exc.start} is {raw[exc.start]:#04x})"
    if "\x00" in text:
        return f"not text (a NUL character at offset {text.index(chr(0))})"
    try:
        document = _parsed(name, text)
    except (ValueError, RecursionError) as exc:
        kind = "JSON" if name.endswith(".json") else "TOML"
        detail = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        return f"not valid {kind} ({detail})"
    if document is not None:
        try:
            jsontext.check_depth(document, MAX_DEPTH)
        except ValueError:
            return f"nested more than {MAX_DEPTH} deep"
    return ""


def _parsed(name: str, text: str) -> Any:
    """The document a JSON or TOML file holds (None for a file of lines: requirements)."""
    if name.endswith(".json"):
        return jsontext.loads(text)
    if name.endswith((".toml", ".lock")):
        return tomllib.loads(text)
    return None
