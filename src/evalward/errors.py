"""Every error evalward raises on purpose, and the exit code each one maps to.

One base class (`EvalwardError`) and one top-level handler (`evalward.__main__`) turn
anything a user can cause into a single clear message and a distinct exit code, never a
traceback. The tree:

    EvalwardError               exit 3  something outside evalward failed
    ├── ConfigError             exit 2  a user mistake in a file, an input or a setting
    │   ├── ResourceError               one or more located problems in YAML resources
    │   ├── MissingSecretError          a provider key the plan needs is not set
    │   └── UnknownPullRequest          GitHub's API does not know the pull request to gate
    ├── GitError                exit 3  a git command failed
    ├── ProviderError           exit 3  a model provider could not be used
    │   └── ProviderUnavailable         it kept failing through its retries (an outage)
    ├── GitHubError             exit 3  the GitHub API refused or failed
    └── AgentRunError           exit 3  an agent could not be started or crashed

Every other error class evalward defines derives from one of these, with its exit code: a
file a definition names that is not committed, a seed that does not load or a foreign file
that cannot be converted is a ConfigError; a playground, an HTTP exchange, a wire format, a
tree walk or a scorer that fails is an EvalwardError (tests/integration/test_error_tree.py).

Exit codes:

    0  the gate passed (or was bypassed)
    1  the gate failed: an affected Eval is below its threshold
    2  configuration error: nothing was gated
    3  an external failure (git, provider, GitHub, agent process)
    4  a bug in evalward
    130  interrupted
    141  standard output was closed by its reader (`evalward run | head`); files are written
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_CONFIG = 2
EXIT_EXTERNAL = 3
EXIT_BUG = 4
EXIT_INTERRUPTED = 130
EXIT_OUTPUT_CLOSED = 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader left


class EvalwardError(Exception):
    """Base of every error evalward raises deliberately; its message is shown as is."""

    exit_code = EXIT_EXTERNAL


class ConfigError(EvalwardError):
    """A user mistake: a bad input, setting or file. Fix the configuration and rerun."""

    exit_code = EXIT_CONFIG


@dataclass(frozen=True)
class Problem:
    """One located problem in a resource file."""

    file: str
    line: int | None
    column: int | None
    path: str
    message: str
    consequence: bool = False
    """It follows from another problem (an Eval that lists a fixture that does not load):
    listed after every problem that is a cause (`order`)."""

    def order(self) -> tuple[bool, str, int, int]:
        """Where it is listed: causes first, then in file order."""
        return (self.consequence, self.file, self.line or 0, self.column or 0)

    def render(self) -> str:
        where = printable(self.file)
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        at = f" {self.path}:" if self.path else ""
        return f"{where}:{at} {self.message}"


@dataclass
class ResourceError(ConfigError):
    """All problems found while loading resources, reported together."""

    problems: list[Problem] = field(default_factory=list)
    source: str = ""
    """Whose resources, when not the checkout's own (e.g. "the base branch (abc123)")."""
    after: tuple[str, ...] = ()
    """Lines told after the problems (`validate`'s warnings and what it provisioned): the
    problems lead."""

    def __post_init__(self) -> None:
        super().__init__(str(self))

    def __str__(self) -> str:
        count = len(self.problems)
        of = f" of {self.source}" if self.source else ""
        head = f"{count} problem{'s' if count != 1 else ''} in evalward resources{of}:"
        return "\n".join([head, *(f"  {p.render()}" for p in self.problems), *self.after])


class MissingSecretError(ConfigError):
    """A provider the plan needs has no key (on a fork PR: secrets are not passed to it).

    `skippable` is False when the base branch's own configuration has every key it needs:
    then only the pull request's change asks for the missing one, and skipping the gate would
    let a pull request turn it off by switching providers."""

    def __init__(self, message: str, *, skippable: bool = True) -> None:
        super().__init__(message)
        self.skippable = skippable


class GitError(EvalwardError):
    """A git command failed; the message carries git's own words."""


class ProviderError(EvalwardError):
    """A model provider failed after its retries, refused the request, or sent a reply that
    could not be read."""


class ProviderUnavailable(ProviderError):
    """Every attempt failed in a way worth retrying (connection refused, timeouts, 429, 5xx):
    an outage says nothing about the agent, and a rerun is the remedy."""


class GitHubError(EvalwardError):
    """The GitHub API refused or failed a request; `status` is its HTTP status (None when no
    answer came: the connection failed, or the answer could not be read) and `answer` the
    status with GitHub's own words ("HTTP 404 Not Found")."""

    def __init__(self, message: str, *, status: int | None = None, answer: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.answer = answer


class UnknownPullRequest(ConfigError):
    """The pull request the event or an input names is one GitHub's API does not know
    (404, 410): the number, the repository or the token's reach is wrong, not GitHub."""


class AgentRunError(EvalwardError):
    """An agent could not be run to completion."""


_UNSHOWABLE = re.compile('[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff"\\\\]')
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def printable(path: str) -> str:
    """A file name as it can be shown, in a message, a log line or a report: as it is when
    every character shows as itself, else quoted the way git quotes one (`"a\\nb"`), with a
    byte that is not UTF-8 (kept by `os.fsdecode` as a surrogate) as `\\xNN` and a control
    character as `\\n`, `\\t` or `\\xNN`. Quoting makes a name holding a newline or a bidi
    control one visible token; it is never read back as a path."""
    if not _UNSHOWABLE.search(path):
        return path
    return '"' + _UNSHOWABLE.sub(_escape, path) + '"'


def _escape(match: re.Match[str]) -> str:
    char = match[0]
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
