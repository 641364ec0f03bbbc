"""A tool's mock output rendered over the call's arguments: each of its strings a template.

A template is an agent definition's, a pull request's for the head's runs, and it renders in
evalward's own process, beside every other run of the job: in jinja2's sandbox (no Python
internals), within RENDER_SECONDS for one call's output (a loop over loops would hold the
job until the workflow's own time limit), and with `*` and `**` held to what a reply could
hold (`"x" * 10**10` asks for gigabytes in one step no clock can stop). A template that
fails, whatever it raises, or that runs past its time, is the tool's reply, an error the
model reads, never the run's end: the model reads what any tool that failed would say.
Each template is compiled once, not at every call.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import time
from collections.abc import Iterator, Mapping
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jinja2 import Template
    from jinja2.sandbox import SandboxedEnvironment

RENDER_SECONDS = 5.0
"""How long one call's mock output may take to render, all of its templates together."""
LONGEST_REPEAT = 4 * 1024 * 1024
"""The most items (characters of a text, entries of a list) a template's `*` may make: the
most a command tool may answer (tools.MAX_OUTPUT_BYTES)."""
LARGEST_POWER_BITS = 64 * 1024
"""The most bits a template's `**` of two integers may make."""


class _Late(Exception):
    """The template ran past its time (raised inside it, by the tracer of `_until`)."""


def render_mock(output: Any, arguments: Mapping[str, Any]) -> Any:
    """Render every string of a mock output as a template over the call's arguments."""
    return _rendered(output, arguments, time.monotonic() + RENDER_SECONDS)


def _rendered(output: Any, arguments: Mapping[str, Any], deadline: float) -> Any:
    if isinstance(output, str):
        if "{{" not in output and "{%" not in output:
            return output
        # lazy: imported with the sandbox, by the first templated output
        from jinja2 import TemplateError

        try:
            template = _compiled(output)
            with _until(deadline):
                return template.render(**arguments)
        except _Late:
            return f"error: the mock output template did not render within {RENDER_SECONDS:g} s"
        except TemplateError as exc:
            return f"error: the mock output template failed: {exc}"
        except Exception as exc:
            return f"error: the mock output template failed: {type(exc).__name__}: {exc}"
    if isinstance(output, dict):
        return {k: _rendered(v, arguments, deadline) for k, v in output.items()}
    if isinstance(output, list):
        return [_rendered(v, arguments, deadline) for v in output]
    return output


@contextlib.contextmanager
def _until(deadline: float) -> Iterator[None]:
    """Python's tracer on this thread while a template renders: a template is Python code
    (jinja2 compiles it), so every line it runs asks the clock, and past `deadline` the line
    raises `_Late` inside it. The tracer before (a coverage tool's) is put back."""

    def traced(frame: FrameType, event: str, arg: object) -> Any:
        del frame, event, arg
        if time.monotonic() > deadline:
            raise _Late
        return traced

    before = sys.gettrace()
    sys.settrace(traced)
    try:
        yield
    finally:
        sys.settrace(before)


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
    from jinja2.exceptions import SecurityError
    from jinja2.sandbox import SandboxedEnvironment

    class Bounded(SandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**"})

        def call_binop(
            self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any
        ) -> Any:
            if operator == "*" and (_too_long(left, right) or _too_long(right, left)):
                raise SecurityError(f"`*` would make more than {LONGEST_REPEAT:,} items")
            if operator == "**" and _too_large(left, right):
                raise SecurityError(f"`**` would make more than {LARGEST_POWER_BITS:,} bits")
            return super().call_binop(context, operator, left, right)

    return Bounded(undefined=jinja2.ChainableUndefined, autoescape=False)


def _too_long(sized: Any, times: Any) -> bool:
    return (
        isinstance(sized, (str, bytes, list, tuple))
        and isinstance(times, int)
        and len(sized) * times > LONGEST_REPEAT
    )


def _too_large(base: Any, exponent: Any) -> bool:
    if not (isinstance(base, int) and isinstance(exponent, int)) or exponent <= 1:
        return False
    return max(abs(base).bit_length(), 1) * exponent > LARGEST_POWER_BITS
