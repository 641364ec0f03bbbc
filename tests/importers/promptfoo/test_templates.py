"""promptfoo's templates and variables rendered as promptfoo renders them
(`importers/promptfoo/templates.py`): Nunjucks' rules kept in Jinja's sandbox, an undefined
variable empty and warned about, `env` refused at its line, JSON written as `JSON.stringify`."""

from __future__ import annotations

import pytest

from evalward.errors import Refused
from evalward.importers.promptfoo.source import Node, Source
from evalward.importers.promptfoo.templates import compose, render, render_prompt, stringify
from evalward.resources.reading.yamlsource import parse_documents

pytestmark = pytest.mark.unit

CONFIG = "prompts:\n  - 'Answer {{question}}'\ntests:\n  - vars: {question: why}\n"


def _node() -> Node:
    (document,) = parse_documents(CONFIG)
    return Node(
        document.data["prompts"][0], Source("promptfooconfig.yaml", document), ("prompts", 0)
    )


def test_a_template_renders_as_nunjucks_does() -> None:
    warnings: list[str] = []
    assert render("Q: {{ q }}\n", {"q": "<b>why</b>"}, _node(), warnings) == "Q: <b>why</b>\n"
    assert render("{{ v | dump }}", {"v": {"a": [1, "é"]}}, _node(), warnings) == ('{"a":[1,"é"]}')
    assert render("no template here {", {}, _node(), warnings) == "no template here {"
    assert warnings == []


def test_an_undefined_variable_renders_empty_and_is_warned_about() -> None:
    warnings: list[str] = []
    assert render("Hi {{ name }}!", {}, _node(), warnings) == "Hi !"
    assert warnings == [
        "promptfooconfig.yaml:2: name not defined for this test: rendered empty, as promptfoo does"
    ]


def test_the_environment_of_the_machine_is_refused_at_its_line() -> None:
    with pytest.raises(Refused) as raised:
        render("key {{ env.OPENAI_API_KEY }}", {}, _node(), [])
    problem = raised.value.problem
    assert (problem.file, problem.line, problem.path) == ("promptfooconfig.yaml", 2, "prompts[0]")
    assert "would freeze its value" in problem.message
    assert raised.value.droppable is False


def test_a_template_cannot_reach_python() -> None:
    with pytest.raises(Refused) as raised:
        render("{{ ''.__class__.__mro__[1].__subclasses__() }}", {}, _node(), [])
    assert raised.value.problem.message.startswith("the template does not render: ")
    assert "unsafe" in raised.value.problem.message


def test_variables_fill_each_other_then_render() -> None:
    composed = compose({"name": "Ann\n", "greeting": "Hi {{name}}", "n": 3}, _node(), [])
    assert composed == {"name": "Ann", "greeting": "Hi Ann", "n": 3}


def test_a_json_prompt_has_its_strings_rendered_and_is_written_as_json_stringify_writes() -> None:
    template = '[{"role": "user", "content": "Q: {{ q }}", "n": 2.0}]'
    assert render_prompt(template, {"q": "why"}, _node(), []) == (
        '[\n  {\n    "role": "user",\n    "content": "Q: why",\n    "n": 2\n  }\n]'
    )
    assert render_prompt("cut {{ off", {}, _node(), []) == "cut {{ off"


def test_stringify_writes_whole_numbers_as_integers() -> None:
    assert stringify({"a": 1.0, "b": [2.5, 3.0]}) == '{"a":1,"b":[2.5,3]}'


@pytest.mark.parametrize(
    ("template", "said"),
    [
        ("{% for i in range(100000000) %}x{% endfor %}", "OverflowError: Range too big"),
        ("{{ 1 / 0 }}", "ZeroDivisionError: division by zero"),
        ("{{ 1 + 'a' }}", "TypeError: unsupported operand"),
        ("{{ range(3) | dump }}", "TypeError: Object of type range is not JSON serializable"),
        ("{{ [1].index(2) }}", "ValueError: 2 is not in list"),
        ("{{ [].pop() }}", "IndexError: pop from empty list"),
        ("{{ '%(a)s' % {} }}", "KeyError: 'a'"),
        ("{{ 'x'.encode('nope') }}", "LookupError: unknown encoding: nope"),
        ("{{ 'abc' | truncate(-5, leeway=-100) }}", "AssertionError: expected length"),
        ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "RecursionError: maximum recursion"),
        ("{{ " + "(" * 3000 + "1" + ")" * 3000 + " }}", "RecursionError: maximum recursion"),
        ("{{ q * 5000000 }}", "`*` would make more than 4,194,304 items"),
        ("{{ 2 ** 70000 }}", "`**` would make more than 65,536 bits"),
        (
            "{% for i in range(3) %}{{ 'x' * 2000000 }}{% endfor %}",
            "renders more than 5,242,880 characters",
        ),
    ],
    ids=[
        "range", "zero", "type", "dump", "value", "index", "key", "lookup", "assertion",
        "recursion", "nesting", "repeat", "power", "too-long",
    ],
)  # fmt: skip
def test_a_template_that_fails_however_it_fails_is_refused_at_its_line(
    template: str, said: str
) -> None:
    """Whatever a template's Python raises, or a text too long for the file it goes into, is
    the user's template to fix: one refusal at the prompt's line, never an internal error."""
    with pytest.raises(Refused) as raised:
        render_prompt(template, {"q": "why"}, _node(), [])
    problem = raised.value.problem
    assert (problem.file, problem.line, problem.path) == ("promptfooconfig.yaml", 2, "prompts[0]")
    assert problem.message.startswith("the template ")
    assert said in problem.message
    assert raised.value.droppable is False
