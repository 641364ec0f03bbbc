"""What promptfoo sends each model API for a rendered prompt (`importers/promptfoo/messages.py`):
OpenAI's chat gets YAML or JSON messages or one user text, Anthropic's a JSON list or lines
opening turns, a completion the text; what an API would refuse is refused at its line."""

from __future__ import annotations

import pytest

from evalward.errors import Refused
from evalward.importers.promptfoo.messages import sent
from evalward.importers.promptfoo.source import Node, Source
from evalward.resources.reading.yamlsource import parse_documents

pytestmark = pytest.mark.unit


def _node() -> Node:
    (document,) = parse_documents("prompts:\n  - file://prompt.txt\n")
    return Node("file://prompt.txt", Source("promptfooconfig.yaml", document), ("prompts", 0))


def _sent(text: str, reads: str, warnings: list[str] | None = None) -> object:
    return sent(text, reads, "openai:gpt-4.1-mini", _node(), [] if warnings is None else warnings)


def test_openai_s_chat_reads_yaml_json_or_one_text() -> None:
    assert _sent(
        "- role: system\n  content: Be brief\n- role: user\n  content: hi\n", "openai"
    ) == [
        {"role": "system", "content": "Be brief"},
        {"role": "user", "content": "hi"},
    ]
    assert _sent('[{"role": "user", "content": [{"type": "text", "text": "hi"}]}]', "openai") == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    ]
    assert _sent("What is 2 + 2?", "openai") == "What is 2 + 2?"
    assert _sent('{"role": "user"', "openai") == '{"role": "user"'  # not JSON-like: a text
    assert _sent("  keep   as is ", "text") == "  keep   as is "


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"role": "user",}', "looks like JSON but does not parse"),
        ('{"role": "user", "content": "hi"}', "as the request's `messages`: here an object"),
        ("- role: user\n  content: [unclosed\n", "not valid YAML"),
        ('[{"role": "tool", "content": "x"}]', "a message with role 'tool'"),
        ('[{"role": "user", "content": [{"type": "image_url"}]}]', "a message with role 'user'"),
    ],
)
def test_what_openai_s_chat_would_not_take_is_refused_at_its_line(text: str, message: str) -> None:
    with pytest.raises(Refused) as raised:
        _sent(text, "openai")
    assert message in raised.value.problem.message
    assert raised.value.problem.line == 2


def test_anthropic_reads_lines_as_turns_and_its_system_apart() -> None:
    text = "system: Be brief\n\nuser: hi\n  there\nassistant: hello\nuser: refund 7\n"
    assert _sent(text, "anthropic") == [
        {"role": "system", "content": [{"type": "text", "text": "Be brief"}]},
        {"role": "user", "content": "hi\nthere"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "refund 7"},
    ]
    assert _sent("  one question\n", "anthropic") == "one question"
    assert _sent("user: only me\n", "anthropic") == "only me"


def test_anthropic_is_sent_the_first_system_message_only_and_told_so() -> None:
    warnings: list[str] = []
    text = (
        '[{"role": "system", "content": "A"}, {"role": "user", "content": "hi"},'
        ' {"role": "system", "content": "B"}]'
    )
    assert _sent(text, "anthropic", warnings) == [
        {"role": "system", "content": [{"type": "text", "text": "A"}]},
        {"role": "user", "content": "hi"},
    ]
    assert warnings == [
        "promptfooconfig.yaml:2: promptfoo sends Anthropic the first system message only; "
        "the others are left out, as it leaves them"
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("system: only a system line\n", "the prompt is only a `system:` line"),
        ('[{"role": "system", "content": "A"}]', "a JSON list with no user or assistant message"),
        ('thinking: {"type": "enabled"}\nuser: hi\n', "turns on Claude's extended thinking"),
        ('[{"role": "user", "content": "hi", "thinking": true}]', "extended thinking"),
        ('["not a message"]', "holds something other than a message"),
    ],
)
def test_what_anthropic_would_refuse_or_evalward_cannot_mean_is_refused(
    text: str, message: str
) -> None:
    with pytest.raises(Refused) as raised:
        _sent(text, "anthropic")
    assert message in raised.value.problem.message
