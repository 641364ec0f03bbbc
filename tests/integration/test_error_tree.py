"""One error tree: every exception class evalward defines derives from `EvalwardError`, so
the one top-level handler maps it to its exit code and a message, and a caller that catches
evalward's errors catches all of them (the exit codes: src/evalward/errors.py)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import evalward
from evalward.errors import EXIT_CONFIG, EXIT_EXTERNAL, ConfigError, EvalwardError


def defined_exceptions() -> list[type[BaseException]]:
    """Every exception class a module of evalward defines (not one it imports)."""
    found = []
    for info in pkgutil.walk_packages(evalward.__path__, "evalward."):
        if info.name == "evalward.__main__":
            continue
        module = importlib.import_module(info.name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if value.__module__ == module.__name__ and issubclass(value, BaseException):
                found.append(value)
    return found


def test_every_exception_evalward_defines_derives_from_evalward_error() -> None:
    found = defined_exceptions()
    assert len(found) > 30  # the walk reached the packages
    outside = sorted(
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in found
        if not issubclass(cls, EvalwardError)
    )
    assert outside == [], "derive these from EvalwardError (or one of its kinds)"


def test_every_exception_has_an_exit_code_of_the_table() -> None:
    codes = {cls.exit_code for cls in defined_exceptions() if issubclass(cls, EvalwardError)}
    assert codes <= {EXIT_CONFIG, EXIT_EXTERNAL}
    assert issubclass(importlib.import_module("evalward.files.committed").NotCommitted, ConfigError)
