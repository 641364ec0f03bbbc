"""The built-in templates' compiled code, kept beside them as Python keeps a module's
bytecode, so a run renders its comment without compiling the template again.

Compiling comment.md.j2 costs about 45 ms (Jinja's code generation, then Python's compiler):
a twentieth of the CPU of a whole 1,000-fixture run (bench/p6_user_suite.py). Jinja checks
each cached entry against its template's source, so an edited template is compiled again.
The cache lives in `templates/__pycache__` inside the installed package, which only who can
change evalward's own code can write; where that folder cannot be written, templates are
compiled on every run, as before. Users' own templates (`comment-template`) never use it:
their folder is the repository's.
"""

from __future__ import annotations

import contextlib
import functools
import os
from pathlib import Path

import jinja2

TEMPLATES = Path(__file__).parent / "templates"


class _QuietCache(jinja2.FileSystemBytecodeCache):
    """A cache that is only ever a saving: an entry it cannot read or write is compiled."""

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except (OSError, EOFError, ValueError, TypeError):  # unreadable, or cut short
            bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        with contextlib.suppress(OSError):
            super().dump_bytecode(bucket)


@functools.cache
def template_cache() -> jinja2.BytecodeCache | None:
    """The built-in templates' cache, or None where the package's folder is read-only."""
    directory = TEMPLATES / "__pycache__"
    try:
        directory.mkdir(mode=0o755, exist_ok=True)
    except OSError:
        return None
    if not os.access(directory, os.W_OK):
        return None
    return _QuietCache(str(directory))
