"""AgentV's CSV datasets read as AgentV's own reader reads them (its `parseCsvCases`)."""

from __future__ import annotations

import pytest

from evalward.errors import AgentVProblem
from evalward.importers.agentv.csv_cases import csv_cases

pytestmark = pytest.mark.unit


def test_magic_columns_become_the_test_and_other_columns_its_vars() -> None:
    text = (
        "\ufeffid,input,__prefix,__suffix,__expected,__expected2,__config:__expected2:threshold,"
        "__metadata:tags[],__description,vars.user.name,__threshold\n"
        'a,"Say ""hi""",[,],"contains-any:x, y",starts-with:Hi,0.9,"one,two\\,three",'
        "Greets,Ada,0.5\n"
        ",plain,,,Hi there,,0.7,,,,\n"
    )

    first, second = csv_cases(text, "cases/t.csv", ("tests", 0))

    assert first == {
        "id": "a",
        "input": '[Say "hi"]',
        "criteria": "Greets",
        "assert": [
            {"type": "contains-any", "value": ["x", "y"]},
            {"type": "starts-with", "value": "Hi", "min_score": 0.9},
        ],
        "threshold": 0.5,
        "vars": {"user": {"name": "Ada"}},
        "metadata": {"tags": ["one", "two,three"], "threshold": 0.9},
    }
    # no id: AgentV's row number; a plain text: the answer must equal it; an empty column
    # is still a var, as AgentV reads it
    assert second == {
        "id": "row-2",
        "input": "plain",
        "assert": [{"type": "equals", "value": "Hi there"}],
        "vars": {"user": {"name": ""}},
    }


@pytest.mark.parametrize(
    ("row", "said"),
    [
        ("__providerOutput\nfixed\n", "gives a fixed output"),
        ("__expected\nsimilar:hello\n", "'similar' is not a CSV assertion AgentV reads"),
        ("__expected\nfile://check.js\n", "only file://*.py script graders"),
        ("__expected\nlatency\n", "`latency` needs a numeric limit"),
        ('id\n"never closed\n', "invalid CSV"),
    ],
)
def test_what_agentv_refuses_is_refused_with_its_row(row: str, said: str) -> None:
    with pytest.raises(AgentVProblem) as refused:
        csv_cases(row, "cases/t.csv", ("tests", 2))
    assert said in str(refused.value)
