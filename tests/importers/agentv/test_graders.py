"""AgentV's graders as evalward assertions (`importers/agentv/graders.py`), one grader at a
time: each kind keeps AgentV's meaning (a case-insensitive `contains` a regex that matches
any case, a negation a pattern that refuses the text, `similar`'s threshold on evalward's
cosine scale, each execution bound its own check), and a grader evalward cannot honour is
refused at its key with what to write instead."""

from __future__ import annotations

import re
from typing import Any

import pytest

from evalward.errors import AgentVProblem
from evalward.importers.agentv.graders import REFUSED, GraderContext, grader_assertions
from evalward.resources.reading.yamlsource import PathKey

pytestmark = pytest.mark.unit

AT: PathKey = ("tests", 0, "assertions", 0)


def read(name: str, path: PathKey) -> str:
    return {"prompts/grade.md": "Grade it against {{ criteria }}."}[name]


def locate(name: str, path: PathKey) -> str:
    return name


def made(item: Any, *, criteria: str | None = None, reference: str | None = None) -> list[Any]:
    return grader_assertions(item, AT, GraderContext(criteria, reference, read, locate))


def problem(item: Any) -> AgentVProblem:
    with pytest.raises(AgentVProblem) as raised:
        made(item)
    return raised.value


def test_a_case_insensitive_contains_is_a_regex_that_matches_any_case() -> None:
    (check,) = made({"type": "contains", "value": "Order 1+1", "case_sensitive": False})
    assert check["type"] == "regex" and check["weight"] == 1.0
    assert re.search(check["pattern"], "your ORDER 1+1 has shipped")
    assert not re.search(check["pattern"], "your order 11 has shipped")  # `+` is literal
    assert made({"type": "contains", "value": "Ada"}) == [
        {"weight": 1.0, "type": "contains", "value": "Ada"}
    ]


def test_a_negated_list_check_refuses_any_of_its_words() -> None:
    (check,) = made(
        {"type": "icontains-any", "value": ["refund", "lawyer"], "negate": True, "metric": "tone"}
    )
    assert check["axis"] == "tone"
    assert re.search(check["pattern"], "Happy to help with your order.")
    assert not re.search(check["pattern"], "Ask your LAWYER.")


def test_an_equals_without_a_value_compares_with_the_expected_output_trimmed() -> None:
    (check,) = made({"type": "equals"}, reference="42")
    assert check == {"weight": 1.0, "type": "equals", "value": "42"}
    (negated,) = made({"type": "equals", "negate": True}, reference="42")
    assert not re.search(negated["pattern"], "  42\n") and re.search(negated["pattern"], "43")


def test_similar_s_threshold_is_moved_onto_the_cosine_scale() -> None:
    (check,) = made(
        {
            "type": "similar",
            "value": "It has shipped.",
            "threshold": 0.9,
            "config": {"embedding_provider": {"model": "text-embedding-3-small"}},
        }
    )
    assert check["model"] == "openai/text-embedding-3-small"
    assert check["threshold"] == pytest.approx(0.8)  # AgentV's (cosine + 1) / 2 at 0.9


def test_each_execution_bound_is_its_own_check() -> None:
    checks = made(
        {"type": "execution_metrics", "max_tool_calls": 3, "max_cost_usd": 0.05, "weight": 2}
    )
    assert checks == [
        {"weight": 2.0, "type": "maxSteps", "max": 3, "count": "toolCalls"},
        {"weight": 2.0, "type": "cost", "maxUsd": 0.05},
    ]
    assert problem({"type": "execution-metrics", "exploration_ratio": 0.5}).path == (
        *AT,
        "exploration_ratio",
    )


def test_an_assert_set_with_a_threshold_is_a_group_and_without_one_its_members() -> None:
    members = [{"type": "contains", "value": "a", "weight": 2}, {"type": "regex", "value": "b"}]
    (group,) = made({"type": "assert-set", "threshold": 0.5, "assert": members})
    assert group["type"] == "assertSet" and group["threshold"] == 0.5
    assert [m["type"] for m in group["assertions"]] == ["contains", "regex"]
    flat = made({"type": "assert-set", "weight": 3, "metric": "facts", "assert": members})
    assert [(m["weight"], m["axis"]) for m in flat] == [(6.0, "facts"), (3.0, "facts")]


def test_an_llm_grader_reads_its_prompt_file_and_takes_the_criteria() -> None:
    ctx = GraderContext("says the status", None, read, locate)
    (judge,) = grader_assertions({"type": "llm_judge", "prompt": "prompts/grade.md"}, AT, ctx)
    assert judge["rubric"] == "Grade it against says the status."
    assert judge["kind"] == "rubric" and judge["minScore"] == 0.5
    assert ctx.criteria_used  # not added again as a rubric of its own


def test_a_plain_string_is_a_rubric_criterion() -> None:
    assert made("Is polite") == [
        {"type": "judge", "kind": "rubric", "rubric": "Is polite", "weight": 1.0}
    ]


@pytest.mark.parametrize(
    ("item", "where", "words"),
    [
        ({"type": "composite"}, "type", REFUSED["composite"]),
        ({"type": "is-json", "negate": True}, "negate", "`negate` is not supported on 'is-json'"),
        ({"type": "contains", "value": "a", "weight": -1}, "weight", "expected a number >= 0"),
        ({"type": "perplexity"}, "type", "is not supported by evalward; supported: contains"),
    ],
)
def test_what_evalward_cannot_honour_is_refused_at_its_key(
    item: dict[str, Any], where: str, words: str
) -> None:
    refused = problem(item)
    assert refused.path == (*AT, where)
    assert words in refused.message
