"""Code a scorer or a transform is made of (`resources/checks/code_source.py`): one source, a file
inside the repository, its language from its name or said, its function from the file or the
kind's default; and what every assertion may set (`resources/checks/assertion_base.py`)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from evalward.resources.checks.assertion_base import AssertionBase
from evalward.resources.checks.code_scorer import CodeAssertion
from evalward.resources.checks.code_source import (
    MAX_SOURCE_CHARS,
    CodeLanguage,
    CodeSource,
    OutputTransform,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("file", "language", "function"),
    [
        ("scorers/tone.py", CodeLanguage.python, "get_assert"),
        ("scorers/tone.py:polite", CodeLanguage.python, "polite"),
        ("/scorers/tone.mjs", CodeLanguage.javascript, ""),
        ("scorers/tone.cjs:check", CodeLanguage.javascript, "check"),
    ],
)
def test_a_file_s_language_and_function_come_from_its_name(
    file: str, language: CodeLanguage, function: str
) -> None:
    code = CodeSource(file=file)
    assert (code.lang, code.function) == (language, function)
    assert code.path == file.split(":")[0].lstrip("/")
    assert code.origin == (code.path, None)
    assert code.code is None  # its text is read when the fixture loads


def test_a_transform_s_default_function_is_its_own() -> None:
    assert OutputTransform(file="t.py").function == "get_transform"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({}, "needs `file` or `source` (one of them)"),
        ({"file": "a.py", "source": "True"}, "needs `file` or `source` (one of them)"),
        ({"file": "../secret.py"}, "is not a file path in the repository"),
        ({"file": "scorers/"}, "is not a file path in the repository"),
        ({"file": "scorers/tone.rb"}, "cannot tell the language of 'scorers/tone.rb'"),
        ({"source": "output == 'x'"}, "an inline scorer needs `language: python`"),
        ({"source": "   ", "language": "python"}, "an inline scorer is empty"),
        ({"source": "x" * (MAX_SOURCE_CHARS + 1), "language": "python"}, "is limited to"),
        ({"file": "a.py", "timeoutSeconds": 0}, "greater than 0"),
        ({"file": "a.py", "memoryMb": 32}, "greater than or equal to 64"),
    ],
)
def test_code_that_cannot_be_run_as_written_is_refused(
    fields: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        CodeSource.model_validate(fields)


def test_an_inline_scorer_is_named_by_its_language_until_the_load_places_it() -> None:
    code = CodeSource(source="output == 'x'", language=CodeLanguage.python)
    assert code.origin == ("<inline python scorer>", None)
    assert code.code == "output == 'x'"
    placed = code.model_copy(update={"source_at": ("evals/bot.yaml", 12)})
    assert placed.origin == ("evals/bot.yaml", 12)


def test_what_every_assertion_may_set_has_its_bounds() -> None:
    base = AssertionBase.model_validate({})
    assert (base.weight, base.severity, base.turn, base.transform) == (1.0, None, None, None)
    with pytest.raises(ValidationError):
        AssertionBase.model_validate({"weight": -1})
    with pytest.raises(ValidationError):
        AssertionBase.model_validate({"turn": 0})
    shaped = AssertionBase.model_validate({"transform": {"file": "t.py"}, "turn": 2})
    assert shaped.transform is not None
    assert shaped.transform.function == "get_transform"


def test_a_script_scorer_that_names_a_function_is_refused_for_it_would_never_be_called() -> None:
    """`protocol: script` runs the file and reads its exit code: a `:strict` after the file's
    name was passed over without a word, and a scorer whose function returned False passed."""
    with pytest.raises(ValidationError) as refused:
        CodeAssertion.model_validate(
            {"type": "code", "file": "scorers/tone.py:strict", "protocol": "script"}
        )
    assert "the function 'strict' that `file` names would never be called" in str(refused.value)
    assert "name the file alone ('scorers/tone.py')" in str(refused.value)
    CodeAssertion.model_validate({"type": "code", "file": "scorers/tone.py", "protocol": "script"})
