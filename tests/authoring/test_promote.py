"""A trace promoted to a fixture in-process (`authoring/promote.py`): the format read off the
document, the tools the agent called as `toolCalled` in order of first use, their results
replayed, a conversation turn by turn, and a file's other documents kept on a rewrite.
`evalward promote` itself runs in tests/cli/test_cli_commands.py."""

from __future__ import annotations

import datetime as dt
import json
import tempfile
from pathlib import Path

import pytest
import yaml

from evalward.authoring.promote import (
    LoadedTrace,
    Promotion,
    build_fixture,
    default_name,
    detect,
    load_trace,
    render,
    write,
)
from evalward.errors import ConfigError
from evalward.resources.models import EvalFixture

pytestmark = pytest.mark.unit

NOW = dt.datetime(2026, 3, 1, 12, 30, 15, 999, tzinfo=dt.UTC)
REFUND = [
    {"role": "system", "content": "You are a support bot."},
    {"role": "user", "content": "Refund order 7"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "lookup_order", "arguments": '{"id": 7}'},
            },
            {
                "id": "c2",
                "type": "function",
                "function": {"name": "refund", "arguments": '{"id": 7}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": '{"status": "shipped"}'},
    {"role": "tool", "tool_call_id": "c2", "content": "refused"},
    {"role": "assistant", "content": "Order 7 cannot be refunded once shipped."},
]


def _trace_file(tmp_path: Path, document: object, name: str = "trace.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({"steps": []}, "evalward"),
        ({"trace": {"steps": []}}, "evalward"),
        ({"messages": REFUND}, "openai"),
        (
            [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}],
            "anthropic",
        ),
        ({"system": "be brief", "messages": [{"role": "user", "content": "hi"}]}, "anthropic"),
        ({"messages": []}, None),
        ({"messages": ["not a message"]}, None),
        ("a string", None),
    ],
)
def test_the_format_is_read_off_the_document(document: object, expected: str | None) -> None:
    assert detect(document) == expected


def test_an_openai_transcript_becomes_a_fixture_that_calls_and_replays_its_tools(
    tmp_path: Path,
) -> None:
    loaded = load_trace(_trace_file(tmp_path, {"id": "run-42", "messages": REFUND}))
    assert (loaded.format, loaded.trace_id) == ("openai", "run-42")
    promotion = Promotion(agent="support-bot", name="refund", promoted_by="a@b.c", now=NOW)
    document = build_fixture(loaded, promotion)
    spec = document["spec"]
    assert spec["input"] == {"type": "prompt", "payload": {"prompt": "Refund order 7"}}
    assert spec["assertions"] == [
        {"type": "toolCalled", "tool": "lookup_order"},
        {"type": "toolCalled", "tool": "refund"},
    ]
    assert [(r["tool"], r["output"]) for r in spec["toolReplay"]] == [
        ("lookup_order", '{"status": "shipped"}'),
        ("refund", "refused"),
    ]
    assert spec["origin"] == {
        "traceId": "run-42",
        "promotedAt": "2026-03-01T12:30:15Z",
        "promotedBy": "a@b.c",
    }
    assert document["metadata"]["labels"] == {"agent": "support-bot"}
    EvalFixture.model_validate(yaml.safe_load(render(document)))


def load_trace_from(messages: list[dict[str, object]]) -> LoadedTrace:
    """The transcript read as `load_trace` reads a file of it (named `t-1.json`)."""
    with tempfile.TemporaryDirectory() as folder:
        return load_trace(_trace_file(Path(folder), messages, "t-1.json"))


def test_without_replay_and_with_checks_of_its_own() -> None:
    loaded = load_trace_from(REFUND)
    promotion = Promotion(
        agent="a",
        name="n",
        promoted_by=None,
        now=NOW,
        replay=False,
        contains=("shipped",),
        rubric="Says why",
    )
    spec = build_fixture(loaded, promotion)["spec"]
    assert "toolReplay" not in spec
    assert "promotedBy" not in spec["origin"]
    assert spec["assertions"][2:] == [
        {"type": "contains", "value": "shipped"},
        {"type": "judge", "kind": "rubric", "rubric": "Says why", "minScore": 0.8},
    ]


def test_a_trace_with_no_tool_and_no_check_is_refused_with_what_to_add() -> None:
    loaded = load_trace_from(
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    )
    with pytest.raises(ConfigError, match=r"trace t-1: the agent called no tool.*--contains"):
        build_fixture(loaded, Promotion(agent="a", name="n", promoted_by=None, now=NOW))


def test_a_conversation_scripts_each_user_message_with_its_own_tools() -> None:
    second = [
        {"role": "user", "content": "And order 8?"},
        {"role": "assistant", "content": "Order 8 is refunded."},
    ]
    loaded = load_trace_from(REFUND + second)
    promotion = Promotion(agent="a", name="n", promoted_by=None, now=NOW, conversation=True)
    spec = build_fixture(loaded, promotion)["spec"]
    assert "input" not in spec
    turns = spec["conversation"]["turns"]
    assert [turn["user"] for turn in turns] == ["Refund order 7", "And order 8?"]
    assert turns[0]["assertions"] == [
        {"type": "toolCalled", "tool": "lookup_order"},
        {"type": "toolCalled", "tool": "refund"},
    ]
    assert "assertions" not in turns[1]


def test_a_conversation_of_one_message_is_refused() -> None:
    promotion = Promotion(agent="a", name="n", promoted_by=None, now=NOW, conversation=True)
    with pytest.raises(ConfigError, match=r"1 user message\(s\).*without --conversation"):
        build_fixture(load_trace_from(REFUND), promotion)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON"),
        ('{"hello": 1}', "not a trace evalward knows"),
        ('{"messages": [{"role": "user", "content": "x"}, 3]}', "not a valid openai trace"),
        (
            '{"steps": [{"index": "x", "type": "input", "content": "hi"}]}',
            r"not a valid evalward trace: steps\[0\]\.index: Input should be a valid integer",
        ),
        (
            '{"steps": [{"type": "input", "content": "hi"}]}',
            r"not a valid evalward trace: steps\[0\]\.index: Field required",
        ),
    ],
)
def test_an_unreadable_trace_names_its_file(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=message) as raised:
        load_trace(path, "openai" if "valid openai" in message else None)
    assert str(raised.value).startswith(f"{path}: ")


def test_a_default_name_is_a_safe_slug_of_the_trace_id() -> None:
    assert default_name("Run 42/Refund!") == "promoted-run-42-refund"
    assert default_name("///") == "promoted-trace"
    assert len(default_name("x" * 200)) == len("promoted-") + 50


def test_writing_replaces_a_fixture_of_the_same_name_and_keeps_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "fixtures.yaml"
    path.write_text(
        "# kept comment\napiVersion: x\nkind: Eval\nmetadata: {name: other}\n", encoding="utf-8"
    )
    promotion = Promotion(agent="a", name="refund", promoted_by=None, now=NOW)
    document = build_fixture(load_trace_from(REFUND), promotion)
    assert write(path, document) == "added"
    assert write(path, document) == "replaced"
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# kept comment\n")
    documents = list(yaml.safe_load_all(text))
    assert [d["metadata"]["name"] for d in documents] == ["other", "refund"]


def test_a_file_that_is_not_yaml_is_refused_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "fixtures.yaml"
    path.write_text("key: [unclosed\n", encoding="utf-8")
    document = build_fixture(
        load_trace_from(REFUND), Promotion(agent="a", name="n", promoted_by=None, now=NOW)
    )
    with pytest.raises(ConfigError, match="cannot be read as YAML"):
        write(path, document)
    assert path.read_text(encoding="utf-8") == "key: [unclosed\n"


def test_a_fixture_added_keeps_the_file_s_text_as_written(tmp_path: Path) -> None:
    """Added, the file's own documents are not written again: `{ type: contains }` stayed
    `{ type: contains }`, and a long line stayed one line (the help says "kept as it is")."""
    path = tmp_path / "fixtures.yaml"
    own = (
        "apiVersion: evalward.dev/v1\nkind: EvalFixture\nmetadata: { name: other }\n"
        "spec:\n  assertions:\n    - { type: contains, value: shipped }   # kept\n"
        f"    - {{ type: notContains, value: {'x' * 120} }}\n"
    )
    path.write_text(own, encoding="utf-8")
    document = build_fixture(
        load_trace_from(REFUND), Promotion(agent="a", name="refund", promoted_by=None, now=NOW)
    )
    assert write(path, document) == "added"
    text = path.read_text(encoding="utf-8")
    assert text.startswith(own)
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(text)] == ["other", "refund"]


@pytest.mark.parametrize(
    ("name", "content", "said"),
    [
        ("prompt.md", "You are the support agent.\n", "holds a document that is no resource"),
        ("notes.md", "", "is not a YAML file"),
        ("list.yaml", "- a\n- b\n", "holds a document that is no resource"),
    ],
)
def test_a_file_of_something_else_than_resources_is_refused_and_left(
    tmp_path: Path, name: str, content: str, said: str
) -> None:
    """`--output prompts/assistant.md` rewrote the agent's prompt as YAML, the fixture after
    it, and validate still passed: the agent then ran with that prompt."""
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    document = build_fixture(
        load_trace_from(REFUND), Promotion(agent="a", name="n", promoted_by=None, now=NOW)
    )
    with pytest.raises(ConfigError) as refused:
        write(path, document)
    assert f"{path}: {said}" in str(refused.value)
    assert path.read_text(encoding="utf-8") == content
