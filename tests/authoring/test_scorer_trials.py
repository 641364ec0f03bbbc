"""Each code scorer run once on a sample of what it grades (`authoring.scorer_trials`), on
definitions loaded from a real repository: a scorer that cannot give a verdict whatever the
output is refused at its assertion's line, one that fails on the sample only is a warning,
a scorer shared by fixtures is tried once, and the sample is the fixture's input and its
reference (or a stock reply)."""

from __future__ import annotations

import asyncio

import pytest

from evalward.authoring.scorer_trials import SAMPLE_REPLY, sample_trace, try_scorers
from evalward.definitions.loader import load_resources
from evalward.rundata.trace import StepType
from support.gitrepo import GitRepo
from support.greeter import greeter_agent

pytestmark = pytest.mark.integration

AGENT = greeter_agent("openai/gpt-4.1-mini")
FIXTURE = """\
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {name} }}
spec:
  targetAgent: greeter
  input: {{ type: prompt, payload: {{ prompt: "Refund order 7." }} }}
{reference}  assertions:
    - type: code
      language: python
      source: "{source}"
"""


def tried(repo: GitRepo, *fixtures: tuple[str, str, str]) -> tuple[list[str], list[str]]:
    """The problems and warnings the trials found, each as `file:line: message`."""
    text = AGENT + "".join(
        FIXTURE.format(name=name, source=source, reference=reference)
        for name, source, reference in fixtures
    )
    repo.commit("suite", {"evals/suite.yaml": text})
    found = asyncio.run(try_scorers(load_resources(repo.path), {"PATH": "/usr/bin:/bin"}))
    return (
        [f"{p.file}:{p.line}: {p.message}" for p in found.problems],
        [f"{p.file}:{p.line}: {p.message}" for p in found.warnings],
    )


def test_a_scorer_that_gives_a_verdict_on_the_sample_is_not_told(repo: GitRepo) -> None:
    assert tried(repo, ("refund", "'order' in output.lower()", "")) == ([], [])


def test_an_answer_that_is_no_verdict_is_refused_at_its_assertions_line(repo: GitRepo) -> None:
    problems, warnings = tried(repo, ("refund", "'yes'", ""))

    (problem,) = problems
    line = (AGENT + FIXTURE).split("\n").index("    - type: code") + 1
    assert problem.startswith(f"evals/suite.yaml:{line}: the Python scorer, run once on a sample")
    assert f"the final message {SAMPLE_REPLY!r}" in problem
    assert problem.endswith(
        'the scorer returned "yes"; expected true/false, a number, or {pass, score, reason}'
    )
    assert warnings == []


def test_a_failure_on_the_sample_only_is_a_warning_and_a_shared_scorer_is_tried_once(
    repo: GitRepo,
) -> None:
    raising = "context['vars']['order'] in output"
    problems, warnings = tried(repo, ("b-refund", raising, ""), ("a-refund", raising, ""))

    assert problems == []
    (warning,) = warnings
    assert "sample run of fixture 'a-refund'" in warning  # the first by name
    assert "KeyError: 'order'" in warning
    assert warning.endswith("a run whose output is like this sample is scored `error`")


def test_the_sample_is_the_fixtures_input_and_its_reference(repo: GitRepo) -> None:
    repo.commit(
        "suite",
        {
            "evals/suite.yaml": AGENT
            + FIXTURE.format(name="with", source="True", reference="  reference: Refunded.\n")
            + FIXTURE.format(name="without", source="True", reference="")
        },
    )
    fixtures = load_resources(repo.path).fixtures

    given = sample_trace(fixtures["with"].resource)
    bare = sample_trace(fixtures["without"].resource)

    assert [(s.type, s.content) for s in given.steps] == [
        (StepType.input, "Refund order 7."),
        (StepType.final, "Refunded."),
    ]
    assert bare.final_output == SAMPLE_REPLY
