"""jinja2's sandbox held to what a template may make and how long it may run.

A template evalward renders is data someone else wrote (a pull request's mock output, a
promptfoo prompt being imported), and it renders in evalward's own process: the sandbox keeps
it from Python's internals, `*` and `**` are held to what a reply could hold (`"x" * 10**10`
asks for gigabytes in one step no clock can stop), and `until` stops a template that runs past
its time (a loop over loops would otherwise hold the process for hours).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any

import jinja2
from jinja2.exceptions import SecurityError
from jinja2.sandbox import SandboxedEnvironment

LONGEST_REPEAT = 4 * 1024 * 1024
"""The most items (characters of a text, entries of a list) a template's `*` may make: the
most a command tool may answer (tools.MAX_OUTPUT_BYTES), under the largest resource file."""
LARGEST_POWER_BITS = 64 * 1024
"""The most bits a template's `**` of two integers may make."""


class Late(Exception):
    """The template ran past its time (raised inside it, by the tracer of `until`)."""


class BoundedSandbox(SandboxedEnvironment):
    """The sandbox, with `*` and `**` refused (a SecurityError) past what a reply could hold."""

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(
        self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any
    ) -> Any:
        if operator == "*" and (_too_long(left, right) or _too_long(right, left)):
            raise SecurityError(f"`*` would make more than {LONGEST_REPEAT:,} items")
        if operator == "**" and _too_large(left, right):
            raise SecurityError(f"`**` would make more than {LARGEST_POWER_BITS:,} bits")
        return super().call_binop(context, operator, left, right)


@contextlib.contextmanager
def until(deadline: float) -> Iterator[None]:
    """Python's tracer on this thread while a template renders: a template is Python code
    (jinja2 compiles it), so every line it runs asks the clock, and past `deadline` (of
    `time.monotonic`) the line raises `Late` inside it. The tracer before (a coverage
    tool's) is put back."""

    def traced(frame: FrameType, event: str, arg: object) -> Any:
        del frame, event, arg
        if time.monotonic() > deadline:
            raise Late
        return traced

    before = sys.gettrace()
    sys.settrace(traced)
    try:
        yield
    finally:
        sys.settrace(before)


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
