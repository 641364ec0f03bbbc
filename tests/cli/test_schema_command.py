"""`evalward schema [KIND]` in-process (`cli/schema.py`): the JSON Schema of one kind or of all,
for editors; an unknown kind refused with the kinds there are and the nearest one."""

from __future__ import annotations

import argparse
import io
import json

import pytest

from evalward.cli.schema import main, register
from evalward.errors import EXIT_OK, ConfigError
from evalward.host import Host

pytestmark = pytest.mark.unit


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    return parser.parse_args(["schema", *argv])


def _schema(*argv: str) -> dict[str, object]:
    out = io.StringIO()
    assert main(_parse(*argv), out, Host({})) == EXIT_OK
    loaded: dict[str, object] = json.loads(out.getvalue())
    return loaded


def test_one_kind_s_schema_names_its_fields() -> None:
    schema = _schema("Agent")
    text = json.dumps(schema)
    assert '"kind"' in text and '"Agent"' in text
    assert "systemFile" in text


def test_every_kind_s_schema_together_is_a_larger_document() -> None:
    every = json.dumps(_schema())
    for kind in ("Agent", "EvalFixture", "Eval", "JudgeCalibration"):
        assert f'"{kind}"' in every
    assert len(every) > len(json.dumps(_schema("Agent")))


def test_an_unknown_kind_is_refused_with_the_nearest() -> None:
    with pytest.raises(ConfigError) as raised:
        main(_parse("Agnet"), io.StringIO(), Host({}))
    message = str(raised.value)
    assert message.startswith("unknown kind 'Agnet'; expected one of ")
    assert message.endswith(" (did you mean 'Agent'?)")
