"""A tool's mock output rendered over the call's arguments: each of its strings a template.

A template is an agent definition's, a pull request's for the head's runs. One that only
names arguments renders here; any other in a child process of evalward's (`serve`, one a
process, started by the first such template): in jinja2's sandbox (no Python internals),
within RENDER_SECONDS for one call's output (a loop over loops would hold the job until the
workflow's own time limit; a child that outlives its time is ended), and within
RENDERER_MEMORY bytes of address space, which the kernel holds it to (`'x' |
center(3000000000)`, a chain of `replace`s that each quadruple a text, a loop of a long
text: one step each that no clock stops, which in evalward's own process took gigabytes
from the job beside every run). `*` and `**` are held to what a reply could hold, for a
message that says which (text/bounded_templates.py). A template that fails, whatever it
raises, or that runs past its time or its memory, is the tool's reply, an error the model
reads, never the run's end: the model reads what any tool that failed would say. Each
template is compiled once, not at every call.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import re
import select
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jinja2 import Template
    from jinja2.sandbox import SandboxedEnvironment

RENDER_SECONDS = 5.0
"""How long one call's mock output may take to render, all of its templates together."""
RENDERER_MEMORY = 1024 * 1024 * 1024
"""The address space of the process templates render in: an interpreter with jinja2 takes
about 40 MiB of it, and a reply is at most REPLY_BYTES."""
REPLY_BYTES = 16 * 1024 * 1024
"""The most a rendered output may take as JSON, more than a tool may answer."""
STARTED_SECONDS = 60.0
"""How long the child may take to start (an interpreter and jinja2 on a busy machine): not
counted in any call's RENDER_SECONDS."""
ENDED_GRACE = 1.0
"""How much longer than its time the parent waits for the child's own word that a template
ran past it, before ending the child."""
_SOURCE = str(Path(__file__).resolve().parents[3])
"""Where the evalward package this module is of lives: the child imports it from there."""


def render_mock(output: Any, arguments: Mapping[str, Any]) -> Any:
    """Render every string of a mock output as a template over the call's arguments: one
    that only names arguments (`{{ order_id }}`, most mocks) here, where it makes no more
    than they hold, and any other in the child (`_Renderer`)."""
    # lazy: the child imports this module, and the definitions' models would cost it 0.25 s
    # of start-up that rendering never needs
    from evalward.resources.agents.agent import templated_strings

    templates = list(templated_strings(output))
    if not templates:
        return output
    deadline = time.monotonic() + RENDER_SECONDS
    here = [text for text in templates if _names_only(text)]
    rendered = {text: _rendered(text, arguments, deadline, RENDER_SECONDS) for text in here}
    apart = [text for text in templates if text not in rendered]
    if apart:
        rendered.update(zip(apart, _RENDERER.render(apart, arguments), strict=True))
    return _replaced(output, rendered)


_NAMED = re.compile(r"\{\{\s*[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\s*\}\}")
"""A placeholder that names an argument, or a field of one."""


def _names_only(template: str) -> bool:
    """Whether `template` is text and placeholders that name arguments (`_NAMED`): no
    filter, call, operator or statement, nothing that makes more than the arguments hold."""
    rest = _NAMED.sub("", template)
    return "{{" not in rest and "{%" not in rest and "{#" not in rest


def _replaced(output: Any, rendered: Mapping[str, str]) -> Any:
    if isinstance(output, str):
        return rendered.get(output, output)
    if isinstance(output, dict):
        return {k: _replaced(v, rendered) for k, v in output.items()}
    if isinstance(output, list):
        return [_replaced(v, rendered) for v in output]
    return output


class _NoReply(Exception):
    """The child said nothing within its time and the grace after it."""


class _Renderer:
    """The child process templates render in, started on first use (again after one that
    ended), one call at a time; ended as evalward ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._owner = 0
        atexit.register(self.stop)

    def render(self, templates: list[str], arguments: Mapping[str, Any]) -> list[str]:
        """Each of `templates` rendered, or the error that is its tool's reply."""
        seconds = RENDER_SECONDS
        request = {"templates": templates, "arguments": arguments, "seconds": seconds}
        with self._lock:
            try:
                reply = self._ask(json.dumps(request).encode() + b"\n", seconds + ENDED_GRACE)
                if len(reply) != len(templates):
                    raise ValueError("a reply of another length")
            except _NoReply:
                self.stop()
                return [_late(seconds)] * len(templates)
            except (OSError, ValueError) as exc:
                self.stop()  # it ended (its memory), or said what is no reply: a new one next
                said = f"error: the mock output template failed: its renderer stopped ({exc})"
                return [said] * len(templates)
        return [str(text) for text in reply]

    def _ask(self, request: bytes, seconds: float) -> list[Any]:
        process = self._started()
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(request)
        process.stdin.flush()
        reply = json.loads(self._read_line(process, seconds))
        if not isinstance(reply, list):
            raise ValueError("a reply of another shape")
        return reply

    @staticmethod
    def _read_line(process: subprocess.Popen[bytes], seconds: float) -> bytes:
        """One line from the child within `seconds` (`_NoReply` past them); OSError when it
        ended, ValueError past REPLY_BYTES."""
        assert process.stdout is not None
        deadline = time.monotonic() + seconds
        line = b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([process.stdout], [], [], left)[0]:
                raise _NoReply
            chunk = os.read(process.stdout.fileno(), 1 << 16)
            if not chunk:
                raise OSError(f"exit code {process.wait()}")
            line += chunk
            if len(line) > REPLY_BYTES:
                raise ValueError(f"a reply of more than {REPLY_BYTES:,} bytes")
        return line

    def _started(self) -> subprocess.Popen[bytes]:
        ended = self._process is not None and self._process.poll() is not None
        if self._process is None or self._owner != os.getpid() or ended:  # ended: its memory
            start = (
                f"import sys; sys.path.insert(0, {_SOURCE!r}); "
                "from evalward.runtime.tools.mock_templates import serve; serve()"
            )
            self._process = subprocess.Popen(  # this interpreter, evalward's own code
                [sys.executable, "-I", "-X", "utf8", "-c", start],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env={},
            )
            self._owner = os.getpid()
            self._read_line(self._process, STARTED_SECONDS)  # its word that it is ready
        return self._process

    def stop(self) -> None:
        """End the child, if this process started one."""
        process, self._process = self._process, None
        if process is not None and self._owner == os.getpid():
            with contextlib.suppress(OSError):
                process.kill()
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                process.wait(timeout=5)
            for pipe in (process.stdin, process.stdout):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()


_RENDERER = _Renderer()


def _late(seconds: float) -> str:
    return f"error: the mock output template did not render within {seconds:g} s"


def serve() -> None:
    """The child's loop: a request a line (templates, arguments, seconds), a reply a line
    (each template rendered, or its error), held to RENDERER_MEMORY by the kernel."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (RENDERER_MEMORY, RENDERER_MEMORY))
    _templates()  # jinja2 imported before the first call's clock starts
    sys.stdout.buffer.write(b"ready\n")
    sys.stdout.buffer.flush()
    for line in sys.stdin.buffer:
        request = json.loads(line)
        deadline = time.monotonic() + float(request["seconds"])
        arguments, shown = request["arguments"], []
        for template in request["templates"]:
            try:
                shown.append(_rendered(template, arguments, deadline, float(request["seconds"])))
            except MemoryError:
                shown.append(
                    "error: the mock output template failed: it would take more than "
                    f"{RENDERER_MEMORY // (1024 * 1024):,} MiB"
                )
        reply = json.dumps(shown).encode() + b"\n"
        if len(reply) > REPLY_BYTES:
            said = f"error: the mock output template made more than {REPLY_BYTES:,} bytes"
            reply = json.dumps([said] * len(shown)).encode() + b"\n"
        sys.stdout.buffer.write(reply)
        sys.stdout.buffer.flush()


def _rendered(template: str, arguments: Mapping[str, Any], deadline: float, seconds: float) -> str:
    # lazy: imported with the sandbox, by the first templated output
    from jinja2 import TemplateError

    # lazy: it imports jinja2 (about 10 ms of start-up), as above
    from evalward.text.bounded_templates import Late, until

    try:
        compiled = _compiled(template)
        with until(deadline):
            return compiled.render(**arguments)
    except Late:
        return _late(seconds)
    except MemoryError:
        raise
    except TemplateError as exc:
        return f"error: the mock output template failed: {exc}"
    except Exception as exc:
        return f"error: the mock output template failed: {type(exc).__name__}: {exc}"


@functools.lru_cache(maxsize=256)
def _compiled(source: str) -> Template:
    """`source` compiled once, for every call of the tool (compiling is jinja2's own code,
    timed by no clock: its size is the definition's)."""
    return _templates().from_string(source)


@functools.cache
def _templates() -> SandboxedEnvironment:
    """The sandbox mock outputs render in, made for the first templated one."""
    # lazy: jinja2 costs about 10 ms of start-up, paid only by a run whose mocks template
    import jinja2

    # lazy: it imports jinja2, as above
    from evalward.text.bounded_templates import BoundedSandbox

    return BoundedSandbox(undefined=jinja2.ChainableUndefined, autoescape=False)
