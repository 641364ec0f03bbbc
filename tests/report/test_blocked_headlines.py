"""A blocked pull request's headline names the Eval and what decided, and its counts line
never reads as a pass, run as GitHub runs the action (agents and judge answered by a mock
script): a pairwise judge that blocks with fixed reps and with adaptive reps (every
assertion passing), and a drop spread so thin over an Eval that every fixture passes on its
own while the pooled test blocks. The comment, the job summary, the check run and
results.json say the same."""

from __future__ import annotations

import html
import re

import pytest

from action.test_adaptive_story import NAMES, mock
from fakes.github_api import FakeGitHub, FakePull
from scoring.judges.test_pairwise_gate import CALIBRATION, CURT, RUBRIC, script
from support.actionrun import ActionRun, pull_request_event, run_action
from support.answered import AGENT, commit_suite, helper_eval
from support.documents import documents
from support.gitrepo import GitRepo
from support.greeter import greeter_agent, greeter_eval, greeting_fixture

pytestmark = pytest.mark.e2e


def greeter(system: str, execution: str) -> str:
    pairwise = f"{{ rubric: {RUBRIC}, margin: 0.4, calibration: greeting-pairs }}"
    return documents(
        greeter_agent("openai/gpt-4.1-mini", system),
        greeting_fixture("{ type: contains, value: Hello }"),
        greeter_eval(
            f"judge: {{ model: openai/gpt-4.1-mini, pairwise: {pairwise} }}",
            execution,
            "scoring: { gate: { falseBlockRate: 0.2 } }",
        ),
        CALIBRATION,
    )


def gate(repo: GitRepo, github: FakeGitHub, base: str, head: str) -> ActionRun:
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    return run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env={"OPENAI_API_KEY": "sk-test-unused"},
        inputs={"mock-script": "mock.yaml", "cache": "off", "check-run": "true"},
    )


def shown(run: ActionRun, github: FakeGitHub) -> tuple[str, str]:
    """The headline and the counts line, checked alike on every surface."""
    headline = run.results()["summary"]["headline"]
    (posted,) = github.comments_on(7)
    for body in (str(posted["body"]), run.summary):
        lines = html.unescape(body).replace("\\", "").splitlines()
        assert re.sub(r"^## \S+ evalward: ", "", lines[1]) == headline
    lines = html.unescape(str(posted["body"])).replace("\\", "").splitlines()
    counts = next(line for line in lines if "fixtures pass on head" in line)
    (check,) = github.check_runs
    assert check["output"]["title"] == headline
    assert check["output"]["summary"].split("\n\n")[0].replace("\\", "") == counts
    return headline, counts


@pytest.mark.parametrize(
    "execution",
    ["execution: { repsPerFixture: 4 }", "execution: { reps: { min: 4, max: 8 } }"],
    ids=["fixed-reps", "adaptive-reps"],
)
def test_a_pairwise_block_says_the_judge_decided_and_never_that_everything_passes(
    repo: GitRepo, github: FakeGitHub, execution: str
) -> None:
    base = repo.commit(
        "a greeter",
        {
            "greeter.yaml": greeter("Greet warmly.", execution),
            "mock.yaml": script(CURT),
            ".gitignore": ".evalward/\n",
        },
    )
    repo.branch("terse")
    head = repo.commit("a terser greeter", {"greeter.yaml": greeter("Greet tersely.", execution)})

    run = gate(repo, github, base, head)

    assert run.returncode == 1, run.stdout + run.stderr
    headline, counts = shown(run, github)
    # was "Blocked: greeter-eval 1.00 < 1.00" (fixed reps), "Blocked: greeter-eval:" (adaptive)
    # the one fixture's own test decides (its line is reachable within its pairs)
    assert headline.startswith(
        "Blocked: greeter-eval: head preferred less than base on greeting (pairwise judge, "
        "base preferred "
    ), headline
    assert " < " not in headline and not headline.rstrip().endswith(":")
    # was "1/1 fixtures pass on head · 0 regressions · 0 failing"
    assert counts.startswith(
        "greeter-eval blocked by its pairwise judge: head preferred less than base on greeting "
        "(base preferred "
    ), counts
    assert " · 1/1 fixtures pass on head on their own · 0 regressions · 0 failing" in counts


def test_a_thin_drop_the_pooled_test_blocks_names_it_though_every_fixture_passes(
    repo: GitRepo, github: FakeGitHub
) -> None:
    commit_suite(repo, helper_eval("execution: { reps: { max: 8 } }"), NAMES)
    repo.commit("answers", {"mock.yaml": mock(dict.fromkeys(NAMES, "FPP"))})
    base = repo.head()
    repo.branch("change")
    head = repo.commit("a new prompt", {"agent.yaml": AGENT.format(version="v2")})

    run = gate(repo, github, base, head)

    assert run.returncode == 1, run.stdout + run.stderr
    record = run.results()
    counts = record["summary"]["counts"]
    assert (counts["passing"], counts["fixtures"], counts["failing"]) == (10, 10, 0)
    headline, line = shown(run, github)
    assert headline.startswith(
        "Blocked: helper-eval: pass rate dropped (pooled sequential test: head "
    ), headline
    # was "10/10 fixtures pass on head · 0 regressions · 0 failing · … flaky"
    assert line.startswith(
        "helper-eval blocked by its pooled sequential test: head's pass rate "
    ), line
    assert " · 10/10 fixtures pass on head on their own · 0 regressions · 0 failing" in line
    # no fixture regressed alone: attribution would trace the drop over the fixtures that
    # drove it, each variant running them all, which its default budget does not afford
    # (the comment says where to raise it), so no review
    (posted,) = github.comments_on(7)
    where = str(posted["body"]).split("### 🧭 Where it regressed\n\n")[1].split("\n\n")[0]
    fixtures = ", ".join(f"`{name}`" for name in NAMES)
    assert where.startswith(
        f"- **helper-eval** ({fixtures}, pass rate dropped over them together (pooled "
        "sequential test)): not attributable — attribution stopped at its budget of "
    ), where
    assert "attribution.budget in the base branch's evalward.yaml raises it" in where
    (regression,) = record["attribution"]["regressions"]
    assert (regression["pooled"], regression["fixtures"]) == (True, NAMES)
    assert record["attribution"]["untraced"] == []
    assert github.reviews_on(7) == []
