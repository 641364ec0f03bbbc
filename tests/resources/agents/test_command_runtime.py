"""A command runtime's arguments (`resources/agents/agent_runtime.py`): `{input}` is the one
placeholder, and an argument that is another name for it alone (`{prompt}`) is refused at its
place; braces inside a program's own text are its own."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from evalward.resources.agents.agent_runtime import CommandRuntime

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "run",
    [
        ["python3", "-c", "import sys; text = sys.stdin.read(); print(f'echo: {text}')"],
        ["sh", "-c", 'read -r request; exec ./agent --ask "${request}"'],
        ["node", "-e", "console.log(`${message}`)"],
        ["./agent", "--format", "{query}: {answer}"],
        ["./agent", "{input}", "--question={input}"],
    ],
    ids=["python f-string", "shell variable", "template literal", "its own format", "input"],
)
def test_braces_a_program_reads_as_its_own_text_load(run: list[str]) -> None:
    CommandRuntime(run=run, stdin="text")


@pytest.mark.parametrize("argument", ["{prompt}", "--question={question}", "{inputs}"])
def test_an_argument_that_is_another_name_for_the_input_alone_is_refused(argument: str) -> None:
    with pytest.raises(ValidationError, match="is no placeholder evalward replaces"):
        CommandRuntime(run=["./agent", argument])


@pytest.mark.parametrize("argument", ["{port}", "{seed}", "{data}"])
def test_an_argument_that_is_a_placeholder_of_another_program_alone_is_refused(
    argument: str,
) -> None:
    """It was passed to the program as written: `{port}` is an http runtime's placeholder,
    `{seed}` and `{data}` a playground service's."""
    with pytest.raises(ValidationError, match=re.escape(f"`{argument}` is no placeholder")):
        CommandRuntime(run=["./agent", "--port", argument])


@pytest.mark.parametrize(
    "run", [["jq", "-c", "{name}"], ["xargs", "-I", "{file}", "cat", "{file}"]]
)
def test_another_name_in_braces_alone_is_the_program_s_own(run: list[str]) -> None:
    assert CommandRuntime(run=run).run == run
