"""`evalward validate --playgrounds`: each code scorer run once on a sample of what it grades,
so a scorer that cannot give a verdict is found before a run's first model call.

The sample is shaped like a run of the first fixture that uses the scorer: the fixture's
input (or its first scripted turn), its `vars` and `reference`, and a trace of that input and
one final message (the fixture's `reference`, else `SAMPLE_REPLY`). The scorer runs as a run
runs it on the command line (scoring/code/code_scorer.py: the same harness, limits and
environment with no secret); what it answers is read as a run reads it.

What it makes of the sample is told at the assertion's YAML line:

- an answer that is not a verdict (a string, `null`, `{pass: "yes"}`) and a name the code
  does not define (NameError, ReferenceError, a file without the function named) are
  refused: no run's output can make them a verdict;
- any other failure (an exception, a timeout) is a warning: a real run's output may be what
  the scorer expects where the sample is not (JSON, a transform's value).

A scorer that does not compile, or a Python file that does not define the function named,
is the static check's (scorer_checks.py), not told twice: it is not run.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from evalward.errors import Problem
from evalward.plan.preflight.scorer_checks import undefined_function
from evalward.resources import ResourceSet
from evalward.resources.checks.code_scorer import CodeAssertion
from evalward.resources.checks.code_scorer_files import code_sources
from evalward.resources.checks.code_source import CodeLanguage
from evalward.resources.models import EvalFixture
from evalward.resources.reading.locate import Locator
from evalward.resources.reading.yamlsource import PathKey
from evalward.resources.resource_set import Located
from evalward.rundata.results import Status
from evalward.rundata.trace import StepType, Trace
from evalward.runtime.agents.inputs import input_messages, input_text
from evalward.scoring.code.code_scorer import CodeScorers, scorer_case
from evalward.scoring.code.scorer_environments import ScorerEnvironments

SAMPLE_REPLY = "Thank you for waiting. I have looked into it and done what you asked."
"""The final message of a sample run whose fixture gives no `reference`."""
TRIALS_AT_ONCE = 4
"""Scorers run at once (each mostly waits for its interpreter to start)."""
_NOT_A_VERDICT = "the scorer returned "
"""How scoring/code/code_verdicts.py begins the error of an answer of the wrong shape."""
_UNDEFINED = re.compile(
    r"\b(?:NameError|UnboundLocalError|ReferenceError)\b|defines no function|exports no function"
)
"""A failure no output can avoid: the code names what it does not define."""
_UNCOMPILED = re.compile(r"\b(?:SyntaxError|IndentationError|TabError)\b")
"""A scorer that does not compile: the static check's to tell, at the code's own line."""


@dataclass
class ScorerTrials:
    """What running each scorer once found: refusals, and warnings."""

    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)


@dataclass(frozen=True)
class _Trial:
    fixture: Located[EvalFixture]
    at: PathKey
    scorer: CodeAssertion


async def try_scorers(resources: ResourceSet, env: Mapping[str, str]) -> ScorerTrials:
    """Run each distinct code scorer of the tree's fixtures once, on a sample of the first
    fixture (by name) that uses it."""
    trials: dict[str, _Trial] = {}
    for _, fixture in sorted(resources.fixtures.items()):
        for at, code in code_sources(fixture.resource):
            if (
                isinstance(code, CodeAssertion)
                and code.code is not None
                and undefined_function(code) is None
            ):
                trials.setdefault(code.model_dump_json(), _Trial(fixture, at, code))
    found = ScorerTrials()
    if not trials:
        return found
    scorers = CodeScorers(env, environments=ScorerEnvironments(env, None, resources.root))
    locator = Locator(resources)
    bound = asyncio.Semaphore(TRIALS_AT_ONCE)

    async def tried(trial: _Trial) -> None:
        async with bound:
            case = scorer_case(trial.fixture.resource.spec, sample_trace(trial.fixture.resource))
            verdict = await scorers.score(trial.scorer, case)
        if verdict.status is not Status.error or _UNCOMPILED.search(verdict.message):
            return
        language = "Python" if trial.scorer.lang is CodeLanguage.python else "JavaScript"
        name = trial.fixture.resource.metadata.name
        message = (
            f"the {language} scorer, run once on a sample run of fixture {name!r} (its input, "
            f"the final message {case.output!r}), gives no verdict: {verdict.message}"
        )
        refused = verdict.message.startswith(_NOT_A_VERDICT) or _UNDEFINED.search(verdict.message)
        if not refused:
            message += "; a run whose output is like this sample is scored `error`"
        problem = locator.problem(trial.fixture, trial.at, message)
        (found.problems if refused else found.warnings).append(problem)

    try:
        await asyncio.gather(*(tried(trial) for trial in trials.values()))
    finally:
        scorers.close()
    found.problems.sort(key=Problem.order)
    found.warnings.sort(key=Problem.order)
    return found


def sample_trace(fixture: EvalFixture) -> Trace:
    """A run of `fixture` as its scorers see one: what the user said, and a final message."""
    spec = fixture.spec
    trace = Trace()
    if spec.input is not None:
        said = input_text(input_messages(spec.input))
    elif spec.conversation is not None and spec.conversation.turns:
        said = spec.conversation.turns[0].user
    else:
        said = "Hello."
    trace.add(StepType.input, content=said)
    reply = spec.reference if isinstance(spec.reference, str) and spec.reference else SAMPLE_REPLY
    trace.add(StepType.final, content=reply)
    return trace
