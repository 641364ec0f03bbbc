"""One error tree, in one module: every error evalward raises on purpose derives from
`EvalwardError` and is defined in src/evalward/errors.py, whose docstring draws the tree, so
the one top-level handler maps it to its exit code and a message; a module's private signal
is no EvalwardError, so one that leaked is reported as a bug (exit 4)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import evalward
from evalward import errors
from evalward.errors import EXIT_CONFIG, EXIT_EXTERNAL, ConfigError, EvalwardError

pytestmark = pytest.mark.integration


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


def test_every_error_evalward_raises_on_purpose_is_defined_in_errors_py() -> None:
    found = defined_exceptions()
    assert len(found) > 30  # the walk reached the packages
    elsewhere = sorted(
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in found
        if issubclass(cls, EvalwardError) and cls.__module__ != "evalward.errors"
    )
    assert elsewhere == [], "define these in src/evalward/errors.py, in its tree"


def test_a_private_signal_is_no_evalward_error_so_a_leaked_one_is_a_bug() -> None:
    signals = [cls for cls in defined_exceptions() if cls.__module__ != "evalward.errors"]
    assert {cls.__name__ for cls in signals} >= {"_Unevaluable", "_Failed"}
    assert [cls for cls in signals if issubclass(cls, EvalwardError)] == []


def test_the_tree_in_the_docstring_names_every_error() -> None:
    tree = errors.__doc__ or ""
    named = {cls.__name__ for cls in defined_exceptions() if cls.__module__ == "evalward.errors"}
    assert named, "no error found in evalward.errors"
    missing = sorted(name for name in named if f" {name} " not in tree)
    assert missing == [], "add these to the tree in src/evalward/errors.py's docstring"


def test_every_exception_has_an_exit_code_of_the_table() -> None:
    codes = {cls.exit_code for cls in defined_exceptions() if issubclass(cls, EvalwardError)}
    assert codes <= {EXIT_CONFIG, EXIT_EXTERNAL}
    assert issubclass(errors.NotCommitted, ConfigError)
