"""A run decided by its fixture's `passThreshold` or `scoringFunction` (promptfoo's test
`threshold` and `assertScoringFunction`), through `evalward run` and `evalward validate`: a
share of passing assertions that is enough, a function of the named scores in JavaScript and
Python, and every way the rule could turn an error into a pass."""

from __future__ import annotations

import json
from typing import Any

import pytest

from support.clirun import evalward
from support.documents import documents
from support.gitrepo import GitRepo
from support.greeter import greeter_agent, greeter_eval

pytestmark = pytest.mark.integration

AGENT_AND_EVAL = documents(greeter_agent("openai/gpt-test"), greeter_eval(labelled=True))

FIXTURE = """\
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {name}, labels: {{ agent: greeter }} }}
spec:
  targetAgent: greeter
  input: {{ type: prompt, payload: {{ prompt: "Hi, I am Ann" }} }}
  vars: {{ customer: Ann }}
{spec}
"""

MOCK = """\
replies:
  - match: { agent: greeter }
    turns: [{ content: "Hello Ann! How can I help?" }]
"""

SCORING = {
    "scoring/critical.js": """\
// accuracy decides; tone is reported but does not block
module.exports.critical = (namedScores, context) => ({
  pass: namedScores.accuracy >= 1,
  score: namedScores.accuracy / 2 + (namedScores.tone || 0) / 2,
  reason: `accuracy ${namedScores.accuracy}, tone ${namedScores.tone}`,
});
""",
    "scoring/strict.py": """\
def get_assert(named_scores, context):
    parts = [
        f"{len(context['componentResults'])} results",
        f"threshold {context['threshold']}",
        f"calls {context['tokensUsed']['numRequests']}",
        f"customer {context['vars']['customer']}",
        f"first {context['componentResults'][0]['assertion']['type']}",
        f"scores {sorted(named_scores.items())}",
    ]
    return {"pass": False, "score": 0.1, "reason": "; ".join(parts)}
""",
    "scoring/broken.py": "def get_assert(named_scores, context):\n    return 1 / 0\n",
}

ANN = "- { type: contains, value: Ann, axis: accuracy }"
BOB = "- { type: contains, value: Bob, axis: tone }"
ZED = "- { type: contains, value: Zed, axis: tone }"


def spec(*assertions: str, **extra: str) -> str:
    lines = ["  assertions:", *(f"    {a}" for a in assertions)]
    lines += [f"  {key}: {value}" for key, value in extra.items()]
    return "\n".join(lines)


CASES = {
    # name: (spec, expected status, expected score, a part of the expected message)
    "share-enough": (spec(ANN, BOB, passThreshold="0.5"), "pass", 0.5, ""),
    "share-short": (
        spec(ANN, BOB, ZED, passThreshold="0.5"),
        "fail",
        1 / 3,
        "score 0.33 < passThreshold 0.5 (contains: ",
    ),
    "function-decides-pass": (
        spec(ANN, BOB, scoringFunction="{ file: 'scoring/critical.js:critical' }"),
        "pass",
        0.5,
        "",
    ),
    "function-sees-everything": (
        spec(ANN, BOB, ZED, passThreshold="0.2", scoringFunction="{ file: scoring/strict.py }"),
        "fail",
        0.1,
        "scoringFunction: 3 results; threshold 0.2; calls 1; customer Ann; first contains; "
        "scores [('accuracy', 1.0), ('tone', 0.0)]",
    ),
    "function-number-at-threshold": (
        spec(
            ANN,
            BOB,
            passThreshold="0.4",
            scoringFunction="{ language: javascript, source: 'context.namedScores.accuracy / 2' }",
        ),
        "pass",
        0.5,
        "",
    ),
    "function-crashes": (
        spec(ANN, scoringFunction="{ file: scoring/broken.py }"),
        "error",
        0.0,
        "scoringFunction: the scorer failed: ZeroDivisionError",
    ),
    "an-error-stays-an-error": (
        spec(
            ANN,
            "- { type: code, file: scoring/broken.py }",
            passThreshold="0",
            scoringFunction="{ language: python, source: 'True' }",
        ),
        "error",
        0.5,
        "code: error: the scorer failed: ZeroDivisionError",
    ),
}


def run(repo: GitRepo) -> tuple[int, dict[str, Any]]:
    done = evalward("run", ".", "--mock-script", "mock.yaml", "--json", "--no-cache", cwd=repo.path)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def test_a_threshold_or_a_function_decides_the_run_and_never_passes_an_error(
    repo: GitRepo,
) -> None:
    fixtures = "".join(FIXTURE.format(name=n, spec=s) for n, (s, _, _, _) in CASES.items())
    repo.commit("runs decided by their own rule", {
        "suite.yaml": AGENT_AND_EVAL + fixtures, "mock.yaml": MOCK, **SCORING,
    })  # fmt: skip
    code, results = run(repo)
    found = {f["fixture"]: f for f in results["fixtures"]}
    for name, (_, status, score, said) in CASES.items():
        assert found[name]["status"] == status, (name, found[name]["message"])
        assert abs(found[name]["score"] - score) < 1e-6, (name, found[name]["score"])
        assert said in found[name]["message"], (name, found[name]["message"])
    assert code == 1


def test_a_scoring_function_is_checked_as_the_fixture_loads(repo: GitRepo) -> None:
    fixtures = FIXTURE.format(
        name="unclear", spec=spec(ANN, scoringFunction="{ file: scoring/gone.js }")
    ) + FIXTURE.format(
        name="both",
        spec=spec(ANN, passThreshold="1.5", scoringFunction="{ file: a.py, source: 'True' }"),
    )
    repo.commit("unclear rules", {"suite.yaml": AGENT_AND_EVAL + fixtures})
    done = evalward("validate", ".", cwd=repo.path)
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    assert "spec.scoringFunction.file: the scorer 'scoring/gone.js' is not in the repository" in (
        said
    )
    assert "spec.passThreshold: " in said and "less than or equal to 1" in said
    assert "a `code` assertion needs `file` or `source` (one of them)" in said
    assert "Traceback" not in said
