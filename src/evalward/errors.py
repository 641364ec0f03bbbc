"""Every error evalward raises on purpose, and the exit code each one maps to.

One base class (`EvalwardError`) and one top-level handler (`evalward.__main__`) turn
anything a user can cause into a single clear message and a distinct exit code, never a
traceback. The tree:

    EvalwardError                 exit 3  something outside evalward failed
    ├── ConfigError               exit 2  a user mistake in a file, an input or a setting
    │   ├── ResourceError                 one or more located problems in YAML resources
    │   ├── YamlSyntaxError               a YAML file that does not parse, at its line
    │   ├── MissingSecretError            a provider key the plan needs is not set
    │   ├── UnknownPullRequest            GitHub's API does not know the pull request to gate
    │   ├── NotCommitted                  a file a definition names that this side may not read
    │   ├── OutsideRepository             a path that resolves outside the repository
    │   ├── SeedError                     a playground's seed that does not load
    │   │   └── SeedTimeout               ... within its time
    │   ├── Refused                       a promptfoo setting with no evalward equivalent
    │   ├── AgentVProblem                 a mistake in an AgentV file, at its path
    │   └── AgentVProblems                every mistake of one AgentV test case
    ├── GitError                  exit 3  a git command failed
    ├── GitHubError               exit 3  the GitHub API refused or failed
    ├── ProviderError             exit 3  a model provider could not be used
    │   ├── BudgetRefusal                 the job's budget refused the call before it left
    │   └── ProviderUnavailable           it kept failing through its retries (an outage)
    │       └── KeyRejected               it refused the API key (HTTP 401)
    ├── AgentRunError             exit 3  an agent could not be started or crashed
    │   (what an agent's run can meet, each the run's error, not the job's:)
    ├── ProtocolError                     an agent's event that breaks the protocol
    │   └── NoSpans                       an OpenTelemetry document with no span
    ├── ExportError                       an OTLP export that cannot be read
    ├── WireError                         a model request the proxy cannot read
    ├── EventStreamError                  a stream that is not server-sent events
    ├── McpFailure                        an MCP server that broke the protocol or a bound
    ├── PortTaken                         a port that is not (only) the agent's
    ├── PlaygroundError                   a playground that cannot be provisioned or read
    ├── UserUnavailable                   the simulated user could not answer
    ├── EmbeddingError                    no embeddings came back
    ├── JudgeError                        the judge gave no usable verdict
    ├── ScorerFailed                      a code scorer gave no value
    ├── ScorerEnvironmentError            a scorer's environment is not there
    ├── TransformError                    a transform gave the checks nothing to read
    │   (and what the foundation meets:)
    ├── HttpFailure                       no complete HTTP reply
    │   └── HttpTimeout                   ... within the call's timeout
    ├── DuplicateKey                      a JSON object that gives one key twice
    ├── UnsafeFile                        a file evalward will not read (a link, a FIFO, too large)
    ├── UnsafeArchive                     an archive evalward will not unpack (a link, a `..`)
    └── TreeError                         a tree not walked, copied or removed within its bounds

Every class that derives from `EvalwardError` is defined here (tests/toplevel/
test_error_tree.py), so this tree is the whole of it. A module's private signal (a run that
stopped, a value that cannot be evaluated) derives from `Exception` alone and is caught where
it is raised: one that leaked would be a bug, reported as exit 4, never as an outside failure.

Exit codes:

    0  the gate passed (or was bypassed)
    1  the gate failed: an affected Eval is below its threshold
    2  configuration error: nothing was gated
    3  an external failure (git, provider, GitHub, agent process; in the action, a file the
       runner could not write, where the gate would have exited 0)
    4  a bug in evalward (an OSError whose errno says the machine refused a write — a full
       disk or quota, a file size limit, a read-only or failing disk — is exit 3:
       `refused_write`)
    130  interrupted
    141  standard output was closed by its reader (`evalward run | head`); files are written
"""

from __future__ import annotations

import errno
import re
from dataclasses import dataclass, field
from pathlib import Path

from evalward.text.counts import counted
from evalward.text.cuts import cap_chars

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_CONFIG = 2
EXIT_EXTERNAL = 3
EXIT_BUG = 4
EXIT_INTERRUPTED = 130
EXIT_OUTPUT_CLOSED = 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader left

DISK_REFUSALS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO})
"""A write the machine refused (a full disk or quota, a file size limit, a read-only or
failing disk): an outside failure to say and rerun (exit 3), not a bug. Where a write's loss
costs that file alone, its caller says so and goes on; the rest end the run with
`refusal_message`."""


def refused_write(exc: BaseException | None) -> bool:
    """Whether `exc` is the machine refusing a write (`DISK_REFUSALS`), not a bug."""
    return isinstance(exc, OSError) and exc.errno in DISK_REFUSALS


def why_refused(exc: OSError) -> str:
    """The system's reason a write failed, with its name: `File too large (EFBIG)`."""
    reason = exc.strerror or str(exc)
    if (name := errno.errorcode.get(exc.errno or 0)) is not None:
        reason = f"{reason} ({name})"
    return reason


def refusal_message(exc: OSError) -> str:
    """One line for a refused write a run cannot go on without: what, why, and what to do;
    the same words on stderr and in the decision a run's comment shows."""
    where = f" ({exc.filename})" if exc.filename else ""
    return (
        f"the machine refused a write{where}: {why_refused(exc)}. Free space (or raise the "
        "file size limit) and run again."
    )


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
        at = f" {printable(self.path)}:" if self.path else ""  # its keys are the file's
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
        head = f"{counted(count, 'problem')} in evalward resources{of}:"
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


class BudgetRefusal(ProviderError):
    """The job's budget refused the call before it left (`max-cost-usd`): nothing was asked of
    the provider, and what it would have said is not known."""


class ProviderUnavailable(ProviderError):
    """Every attempt failed in a way worth retrying (connection refused, timeouts, 429, 5xx):
    an outage says nothing about the agent, and a rerun is the remedy."""


class KeyRejected(ProviderUnavailable):
    """The provider refused the API key (HTTP 401: a typo, a revoked key), whatever the call
    asked: no call reaches it until the key is mended. Like an outage, that says nothing
    about the agent: a run it ends is `unavailable`, not a failure of the agent's. A 403 is
    not one: a provider says so of a model the key may not use, which the agent chose."""


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


class DuplicateKey(EvalwardError, ValueError):
    """An object that gives one key twice."""

    def __init__(self, key: str) -> None:
        super().__init__(f"the key `{cap_chars(key, 80)}` is given twice in one object")
        self.key = key


class HttpFailure(EvalwardError):
    """No complete reply: the connection failed or was reset, the body was cut short, or
    the request was not sent at all (a header that HTTP cannot carry)."""


class HttpTimeout(HttpFailure):
    """No complete reply within the call's timeout."""


class EventStreamError(EvalwardError, ValueError):
    """A stream that is not server-sent events the proxy can pass on."""


class UnsafeFile(EvalwardError, OSError):
    """A file evalward will not read: not a regular file, a link, or larger than its bound.
    `reason` says which, as the end of a sentence about the file ("is a FIFO, not ...")."""

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(f"{path} {reason}")
        self.reason = reason


class UnsafeArchive(EvalwardError, ValueError):
    """An archive from elsewhere that evalward will not unpack: not a zip, past its bounds, or
    an entry that could write outside its folder (a link, a device, a name with `..`)."""


class OutsideRepository(ConfigError, ValueError):
    """A path that resolves outside the repository."""


class NotCommitted(ConfigError, ValueError):
    """A path a definition names that is not a file evalward may read on this side."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path!r} {reason}")
        self.path = path
        self.reason = reason


class TreeError(EvalwardError):
    """A tree that could not be walked, copied or removed within its bounds, or at all."""


class YamlSyntaxError(ConfigError):
    def __init__(self, message: str, line: int | None, column: int | None) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


class Refused(ConfigError):
    """A part of the configuration that has no evalward equivalent; `droppable` when leaving
    it out (with --skip-unsupported) keeps the rest meaningful."""

    def __init__(self, problem: Problem, *, droppable: bool = True) -> None:
        super().__init__(problem.render())
        self.problem = problem
        self.droppable = droppable


class AgentVProblem(ConfigError):
    """A mistake at `path` (keys and indexes into the AgentV document)."""

    def __init__(self, path: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


class AgentVProblems(ConfigError):
    """Every mistake found in one test case (each of its graders is checked)."""

    def __init__(self, problems: list[AgentVProblem]) -> None:
        super().__init__("; ".join(p.message for p in problems))
        self.problems = problems


class ProtocolError(EvalwardError, ValueError):
    """An event that does not follow the protocol; the message says what was expected."""


class NoSpans(ProtocolError):
    """A document with no span in it (a metrics-only batch, an empty flush)."""


class ExportError(EvalwardError, ValueError):
    """An export that cannot be read."""


class WireError(EvalwardError, ValueError):
    """A request body the proxy cannot read; the message names the field."""


class McpFailure(EvalwardError):
    """An MCP server that broke the protocol or a bound: the run's error, naming the server."""


class EmbeddingError(EvalwardError):
    """Why no embeddings came back; `unavailable` when the provider kept failing."""

    def __init__(self, message: str, *, unavailable: bool = False) -> None:
        super().__init__(message)
        self.unavailable = unavailable


class UserUnavailable(EvalwardError):
    """The simulated user could not answer; `outage` when its provider was down, `refused`
    when the job's budget refused its call."""

    def __init__(self, message: str, *, outage: bool = False, refused: bool = False) -> None:
        super().__init__(message)
        self.outage = outage
        self.refused = refused


class PortTaken(EvalwardError):
    """The port is not (only) the agent's: a message for AgentRunError."""


class PlaygroundError(EvalwardError):
    """A playground that cannot be provisioned or read: the run's error, naming it."""


class SeedError(ConfigError):
    """Why a seed does not load, in words that name it (not its playground); `where`, the
    part of a fixtures seed that did not load (`the row at shop/seed.yaml:7`) when it is
    known: its first line, as an SQL seed's failing statement is, tells the user nothing."""

    def __init__(self, message: str, where: str = "") -> None:
        super().__init__(message)
        self.where = where


class SeedTimeout(SeedError):
    """A seed that did not load within SEED_SECONDS."""


class ScorerEnvironmentError(EvalwardError):
    """Why a scorer's environment is not there to run it with."""


class ScorerFailed(EvalwardError):
    """Why a function, run as a scorer runs, gave no value."""


class JudgeError(EvalwardError):
    """The judge could not give a usable verdict (timeout, provider failure, invalid JSON)."""

    def __init__(
        self, message: str, *, reply: str = "", unavailable: bool = False, refused: bool = False
    ) -> None:
        super().__init__(message)
        self.reply = reply
        """The judge's last reply when it was unusable, capped at REPLY_CAP_CHARS."""
        self.unavailable = unavailable
        """The judge's provider kept failing through its retries (an outage)."""
        self.refused = refused
        """The job's budget refused the judge's call (`BudgetRefusal`)."""


class TransformError(EvalwardError):
    """Why a transform gave the checks nothing to read."""


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
