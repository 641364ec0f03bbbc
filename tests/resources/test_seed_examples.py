"""Every YAML example of seed 003 and seed 004 loads unchanged, with the values the seeds state,
and validates against the exported JSON Schema."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import pytest
import yaml

from evalward.definitions.loader import load_resources
from evalward.resources.models import (
    ContainsAssertion,
    EqualsAssertion,
    InputType,
    JudgeAssertion,
    RegexAssertion,
    Severity,
    ToolCalledAssertion,
    ToolNotCalledAssertion,
)
from evalward.resources.reading.repo_config import Defaults, RepoConfig
from evalward.resources.schema import json_schema

pytestmark = pytest.mark.unit

SEEDS = Path(__file__).parent / "seeds"


@pytest.fixture(scope="module")
def seed003(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("seed003")
    for name in ("quickstart.yaml", "support-bot.yaml", "support-bot-agent.yaml"):
        shutil.copy(SEEDS / name, root / name)
    return load_resources(root)


def test_quickstart_agent(seed003) -> None:  # type: ignore[no-untyped-def]
    agent = seed003.agents["math-tutor"].resource
    assert agent.api_version == "pai.io/v1"
    assert agent.spec.models == ["anthropic/claude-haiku-4-5"]
    assert agent.spec.system.startswith("You are a math tutor.")
    assert [(t.tool_name, t.enabled) for t in agent.spec.tools] == [
        ("bash", False),
        ("send_email", False),
    ]


def test_quickstart_fixture(seed003) -> None:  # type: ignore[no-untyped-def]
    fixture = seed003.fixtures["tutor-add"].resource
    assert fixture.metadata.labels == {"agent": "math-tutor"}
    spec = fixture.spec
    assert (spec.target_agent, spec.kind.value, spec.severity) == ("math-tutor", "golden", "medium")
    assert spec.input.type is InputType.prompt
    assert spec.input.payload == {"prompt": "What is 2 + 2?"}
    first, second, third, judge = spec.assertions
    assert first == ContainsAssertion(type="contains", value="answer:")
    assert isinstance(second, ContainsAssertion) and second.value == "4"
    assert isinstance(third, ToolNotCalledAssertion) and third.tool == "bash"
    assert isinstance(judge, JudgeAssertion)
    assert (judge.kind, judge.min_score, judge.weight) == ("rubric", 0.8, 2.0)
    assert "Penalize verbosity." in judge.rubric
    assert first.weight == 1.0 and first.severity is None


def test_quickstart_eval(seed003) -> None:  # type: ignore[no-untyped-def]
    spec = seed003.evals["math-tutor-eval"].resource.spec
    assert spec.target_agent == "math-tutor"
    assert spec.fixture_selector.match_labels == {"agent": "math-tutor"}
    assert (spec.judge.model, spec.judge.temperature) == ("anthropic/claude-haiku-4-5", 0)
    assert spec.scoring.pass_threshold == 1.0
    assert (spec.execution.parallel, spec.execution.timeout_seconds) == (3, 120)
    assert [
        f.resource.metadata.name
        for f in seed003.fixtures_of(seed003.evals["math-tutor-eval"].resource)
    ] == ["tutor-add"]


def test_reference_fixture(seed003) -> None:  # type: ignore[no-untyped-def]
    spec = seed003.fixtures["refund-must-clarify"].resource.spec
    assert (spec.kind.value, spec.severity) == ("bad", Severity.high)
    assert spec.origin is not None
    assert spec.origin.trace_id == "conv-support-cd7e649e"
    assert spec.origin.promoted_at == datetime(2026, 5, 4, 14, 22, 1, tzinfo=UTC)
    assert spec.origin.promoted_by == "amir@company.com"
    assert spec.input.type is InputType.webhook
    assert spec.input.payload == {"ticket": "I want a refund for order #12345"}
    called, not_called, judge = spec.assertions
    assert isinstance(called, ToolCalledAssertion)
    assert (called.tool, called.before) == ("clarify_reason", ["create_jira_ticket"])
    assert isinstance(not_called, ToolNotCalledAssertion)
    assert (not_called.tool, not_called.after) == ("send_email", ["clarify_reason"])
    assert isinstance(judge, JudgeAssertion) and judge.min_score == 0.8


def test_reference_eval(seed003) -> None:  # type: ignore[no-untyped-def]
    spec = seed003.evals["support-bot-eval"].resource.spec
    assert spec.fixtures == ["refund-must-clarify"]
    assert spec.judge.calibration == "support-bot-judge"
    assert spec.judge.model == "anthropic/claude-sonnet-4-6"
    assert spec.scoring.pass_threshold == 0.85
    assert spec.scoring.weight_of(Severity.critical) == 8.0
    assert spec.scoring.weight_of(Severity.low) == 0.5
    assert spec.scoring.weight_of(Severity.high) == 2.0
    assert (spec.execution.parallel, spec.execution.timeout_seconds) == (5, 300)
    assert spec.execution.reps_per_fixture == 1
    assert spec.schedule == "0 9 * * *"


def test_reference_calibration(seed003) -> None:  # type: ignore[no-untyped-def]
    spec = seed003.calibrations["support-bot-judge"].resource.spec
    assert spec.judge_models == ["anthropic/claude-haiku-4-5", "anthropic/claude-sonnet-4-6"]
    first, second = spec.examples
    assert first.trace_ref == "conv-support-cd7e649e"
    assert first.input == {"ticket": "I want a refund for order 12345"}
    assert first.candidate_output == "I'll create a refund ticket right away."
    assert (first.human_score, first.human_label) == (
        0.0,
        "Did not clarify, issued refund directly",
    )
    assert first.disagreement_reason == "rubricWrong"
    assert (second.human_score, second.disagreement_reason) == (1.0, None)


@pytest.mark.parametrize("name", ["quickstart.yaml", "support-bot.yaml", "support-bot-agent.yaml"])
def test_seed003_examples_validate_against_the_json_schema(name: str) -> None:
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    documents = list(yaml.safe_load_all((SEEDS / name).read_text()))
    assert documents
    for document in documents:
        jsonschema.validate(document, schema, cls=jsonschema.Draft202012Validator)
        kind_schema = json_schema(document["kind"])
        jsonschema.validate(document, kind_schema, cls=jsonschema.Draft202012Validator)


def test_json_schema_rejects_what_the_loader_rejects() -> None:
    document = yaml.safe_load((SEEDS / "support-bot.yaml").read_text().split("---")[0])
    document["spec"]["kind"] = "gold"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, json_schema("EvalFixture"))
    document["spec"]["kind"] = "golden"
    document["spec"]["sevrity"] = "high"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, json_schema("EvalFixture"))
    evaluation = yaml.safe_load((SEEDS / "support-bot.yaml").read_text().split("---")[1])
    jsonschema.validate(evaluation, json_schema("Eval"))
    evaluation["spec"]["scoring"]["severityWeights"] = {"extreme": 9.0}
    with pytest.raises(jsonschema.ValidationError, match="'extreme' is not one of"):
        jsonschema.validate(evaluation, json_schema("Eval"))


# --- seed 004 (AgentV) ------------------------------------------------------------------


@pytest.fixture(scope="module")
def seed004(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("seed004")
    shutil.copytree(SEEDS / "agentv", root / "evals")
    return load_resources(root, config=RepoConfig(defaults=Defaults(target_agent="tutor")))


def test_agentv_basic_structure(seed004) -> None:  # type: ignore[no-untyped-def]
    fixture = seed004.fixtures["addition"].resource
    assert fixture.metadata.labels["agent"] == "tutor"
    spec = fixture.spec
    assert spec.target_agent == "tutor"
    assert spec.input.type is InputType.prompt
    assert spec.input.payload == {"prompt": "What is 15 + 27?"}
    assert spec.reference == "42"
    (judge,) = spec.assertions
    assert isinstance(judge, JudgeAssertion)
    assert judge.rubric == "Correctly calculates 15 + 27 = 42"
    assert spec.description == "Correctly calculates 15 + 27 = 42"


def test_agentv_message_arrays(seed004) -> None:  # type: ignore[no-untyped-def]
    spec = seed004.fixtures["tutor-messages"].resource.spec
    assert spec.input.type is InputType.messages
    assert [(m.role, m.content) for m in spec.input.messages] == [
        ("system", "You are a helpful math tutor."),
        ("user", "What is 15 + 27?"),
    ]
    assert spec.reference == "42"


def test_agentv_per_case_execution_overrides(seed004) -> None:  # type: ignore[no-untyped-def]
    spec = seed004.fixtures["complex-case"].resource.spec
    assert spec.target_agent == "gpt4_target"
    (judge,) = spec.assertions
    assert isinstance(judge, JudgeAssertion)
    assert judge.rubric == (
        "Does the explanation cover partitioning, recursion and complexity in depth?\n\n"
        "Criteria: Provides detailed explanation"
    )
    assert spec.input.payload == {"prompt": "Explain quicksort algorithm"}


def test_agentv_file_references_are_inlined(seed004) -> None:  # type: ignore[no-untyped-def]
    spec = seed004.fixtures["code-review"].resource.spec
    assert spec.input.type is InputType.prompt
    assert spec.input.payload["prompt"] == (
        "Review this code against our guidelines.\n"
        '<file path="./guidelines.md">\nFunctions have docstrings.\n</file>'
    )


def test_agentv_sidecar_is_judge_metadata(seed004) -> None:  # type: ignore[no-untyped-def]
    spec = seed004.fixtures["code-gen"].resource.spec
    assert spec.sidecar == {"language": "python", "difficulty": "medium"}


def test_agentv_current_format(seed004) -> None:  # type: ignore[no-untyped-def]
    greeting = seed004.fixtures["greeting"].resource.spec
    assert greeting.target_agent == "default"
    assert greeting.reference == "Hello! How can I help you?"
    assert [(a.rubric, a.weight) for a in greeting.assertions] == [  # type: ignore[union-attr]
        ("Greeting is friendly and warm", 1.0),
        ("Offers to help", 1.0),
    ]
    context = seed004.fixtures["multi-turn-context"].resource.spec
    assert [m.role for m in context.input.messages] == ["user", "assistant", "user"]
    assert [(a.rubric, a.weight) for a in context.assertions] == [  # type: ignore[union-attr]
        ("Correctly recalls the user's name from earlier in the conversation", 5.0),
        ("Answers in one sentence", 1.0),
    ]
    mixed = seed004.fixtures["mixed-eval"].resource.spec
    judge, contains, equals, regex = mixed.assertions
    assert isinstance(judge, JudgeAssertion)
    assert judge.rubric == "Response is helpful and mentions the fix"
    # AgentV compares `contains` exactly (`output.includes(value)`), case counted
    assert contains == ContainsAssertion(type="contains", value="fix")
    assert equals == EqualsAssertion(type="equals", value="42")
    assert isinstance(regex, RegexAssertion) and regex.pattern == r"\d+"
    assert seed004.fixtures["mixed-eval"].resource.metadata.labels["agentv-suite"] == "current"
