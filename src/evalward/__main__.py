"""`python -m evalward` and the `evalward` script: one top-level handler, distinct exit codes.

With no arguments inside GitHub Actions (GITHUB_ACTIONS or GITHUB_EVENT_PATH is set) it runs as
the action; otherwise it is the command line. Everything is imported when needed, so `--version` and
`--help` load almost nothing.
"""

from __future__ import annotations

import contextlib
import gc
import os
import select
import signal
import sys
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from evalward.host import Host


def main(argv: list[str] | None = None, host: Host | None = None) -> int:
    """Run the command `argv` names (the action, in GitHub Actions with no arguments) with
    the `host`'s environment; every error becomes one message and an exit code."""
    from evalward.host import Host

    args = sys.argv[1:] if argv is None else argv
    host = host or Host.of_process()
    for stream in (sys.stdout, sys.stderr):
        # A file name's byte that is not UTF-8 (a surrogate) is printed as `\udcNN`.
        getattr(stream, "reconfigure", lambda **_: None)(errors="backslashreplace")
    if not isinstance(sys.stderr, _QuietWhenClosed):
        sys.stderr = _QuietWhenClosed(sys.stderr)
    try:
        # a job's step sets GITHUB_ACTIONS: without its event, the action says so, never a
        # help text and exit 0 that turn the job green
        if not args and (
            host.env.get("GITHUB_EVENT_PATH") or host.env.get("GITHUB_ACTIONS") == "true"
        ):
            from evalward.action.run import main as run_action

            return run_action(host=host)
        from evalward import cli

        return cli.main(args, host=host)
    except KeyboardInterrupt:
        from evalward.errors import EXIT_INTERRUPTED

        _report("interrupted (SIGINT or SIGTERM: Ctrl-C, or a cancelled job)", host)
        return EXIT_INTERRUPTED
    except Exception as exc:  # the one place a bug becomes a message, not a traceback
        from evalward.errors import EXIT_BUG, EXIT_OUTPUT_CLOSED, EvalwardError, refused_write

        if isinstance(exc, BrokenPipeError) and _stdout_reader_left():
            # `evalward run | head`: the reader has what it wanted; files were written first.
            _close_stdout()
            return EXIT_OUTPUT_CLOSED
        if isinstance(exc, EvalwardError):
            _report(str(exc), host)
            return exc.exit_code
        if isinstance(exc, OSError) and refused_write(exc):
            from evalward.errors import EXIT_EXTERNAL, refusal_message

            if exc.filename == STDOUT:  # what it still buffers would be refused again at exit
                _close_stdout()
            _report(refusal_message(exc), host)
            return EXIT_EXTERNAL
        import traceback

        _report(
            f"internal error: {type(exc).__name__}: {exc}. This is a bug in evalward; "
            "please report it with the details below.",
            host,
        )
        trace = host.redactor()(traceback.format_exc(limit=-8))
        if host.env.get("GITHUB_ACTIONS") == "true":  # it quotes the error: no runner command
            from evalward.text.escaping import log_text

            trace = log_text(trace) + "\n"
        print(trace, end="", file=sys.stderr)
        return EXIT_BUG


def entry() -> int:
    """The process's entry point: the `evalward` script and `python -m evalward`. It owns the
    process's environment, its redaction and the collector's start-up pause (`host`)."""
    from evalward.host import Host

    host = Host.of_process()
    host.pause_collector()
    signal.signal(signal.SIGTERM, _interrupt)
    # SIGINT likewise where the process started with it ignored (a job a shell started in
    # the background): the runs honour it (`flows.interrupt`), so the rest does too
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if not isinstance(sys.stdout, _NamedOutput):
        sys.stdout = _NamedOutput(sys.stdout)
    code = main(host=host)
    try:
        sys.stdout.flush()  # what is still buffered, while a closed pipe can be handled
    except BrokenPipeError:
        from evalward.errors import EXIT_OUTPUT_CLOSED

        _close_stdout()
        code = code or EXIT_OUTPUT_CLOSED
    except OSError as exc:
        from evalward.errors import EXIT_EXTERNAL, refusal_message, refused_write

        if not refused_write(exc):
            raise
        # `evalward run --json > results.json` on a full disk: its end is lost, which is said
        _close_stdout()
        _report(refusal_message(exc), host)  # named by `_NamedOutput`
        code = code or EXIT_EXTERNAL
    if code == 0 and isinstance(sys.stderr, _QuietWhenClosed) and sys.stderr.refused:
        from evalward.errors import EXIT_EXTERNAL

        code = EXIT_EXTERNAL  # its warnings and errors are lost: not a clean run to take
    # Everything is written. The interpreter's last collections would rescan every object
    # the run built (0.1 s after 1,000 fixtures) and find no cycles; reference counting
    # frees them all the same.
    gc.freeze()
    return code


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM as SIGINT: a cancelled job gets either. Where a run is under way its session
    keeps what finished (`flows.interrupt`); anywhere else (looking up the pull request,
    before the runs) it is an interruption, exit 130 and said, not a death without a word."""
    raise KeyboardInterrupt


STDOUT = "standard output"
"""How a refused write to standard output names it (`_NamedOutput`)."""


class _NamedOutput:
    """Standard output whose refused write names it: `evalward run --json > out.json` on a
    full disk is said as `the machine refused a write (standard output): …`, not as a write
    to no file in particular."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            _raise_named(exc)
            raise

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            _raise_named(exc)
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _raise_named(exc: OSError) -> None:
    """Raise a refused write to standard output named so; return on any other error, for
    its caller to raise as it is."""
    from evalward.errors import refused_write

    if refused_write(exc) and exc.filename is None:
        raise OSError(exc.errno, exc.strerror, STDOUT) from exc


class _QuietWhenClosed:
    """Standard error that goes quiet once its reader has left (`evalward run 2>&1 | head`)
    or the disk under it refuses a write (`2> run.log` on a full disk, a file size limit):
    the progress lines it would lose must not stop a run before its files are written. A
    refusal is kept (`refused`): a run that passed exits 3, as nothing could say the loss."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._closed = False
        self.refused: OSError | None = None

    def write(self, text: str) -> int:
        if not self._closed:
            try:
                return self._stream.write(text)
            except OSError as exc:
                self._quiet(exc)
        return len(text)

    def flush(self) -> None:
        if not self._closed:
            try:
                self._stream.flush()
            except OSError as exc:
                self._quiet(exc)

    def _quiet(self, exc: OSError) -> None:
        """Go quiet on a broken pipe or a refused write; raise any other error."""
        from evalward.errors import refused_write

        if not isinstance(exc, BrokenPipeError) and not refused_write(exc):
            raise exc
        self._closed = True
        if not isinstance(exc, BrokenPipeError):
            self.refused = exc
            # what the stream still buffers would fail again at the interpreter's last flush
            with contextlib.suppress(OSError, ValueError):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, self._stream.fileno())
                os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _stdout_reader_left() -> bool:
    """Whether standard output is a pipe with no reader: only then is a broken pipe the
    user's `| head` and not a failure inside a run (an agent's or a provider's pipe)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):
        return False


def _close_stdout() -> None:
    """Point standard output at /dev/null, so the interpreter's last flush has nowhere to fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _report(message: str, host: Host) -> None:
    """An error on stderr, an `::error::` annotation in GitHub Actions. A message can quote
    what it rejects, and that can be a secret: it is redacted like everything else written."""
    from evalward.action.workflow import command

    in_actions = host.env.get("GITHUB_ACTIONS") == "true"
    lines = [
        command("error", line) if in_actions else f"evalward: {line}"
        for line in message.splitlines() or [message]
    ]
    print(host.redactor()("\n".join(lines)), file=sys.stderr)


if __name__ == "__main__":
    sys.exit(entry())
