"""The base branch's failing Eval leads every surface, however many Evals of its own a pull
request adds to fail worse.

An Eval the pull request adds gates, so it can only add failures; but its threshold and its
severity weights are the pull request's to choose. Forty-one Evals of its own at
`passThreshold: 1.0` over fixtures that fail, weighted a million for `critical`, sorted
ahead of the base's regressed `support-bot-eval` by "furthest below its threshold" and
"heaviest severity": the headline and the check run's title named three of them ("… and 39
more Evals"), the first fixtures the comment and the annotations blamed were theirs, and the
Eval table, cut at forty rows, no longer held the base's Eval. A reviewer read a pull
request whose only failures were its own unfinished Evals, and could bypass it as such.
"""

from __future__ import annotations

import re

import pytest

from action.test_adaptive_story import DROP, EVAL, change
from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer
from support.actionrun import pull_request_event, run_action
from support.gitrepo import GitRepo
from support.suite import make_pr, provider_env, script_model

pytestmark = pytest.mark.hostile

DECOYS = 41


def decoy(n: int) -> str:
    """An Eval of the pull request's own, `0-wip-<n>`, over a fixture no reply passes."""
    return f"""\
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: 0-wip-{n} }}
spec:
  targetAgent: support-bot
  fixtures: [0-wip-{n}]
  scoring:
    passThreshold: 1.0
    severityWeights: {{ critical: 1000000 }}
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: 0-wip-{n} }}
spec:
  targetAgent: support-bot
  severity: critical
  input: {{ type: prompt, payload: {{ prompt: "Hello there!" }} }}
  assertions:
    - {{ type: contains, value: NEVER-SAID }}
"""


def test_the_base_branchs_failing_eval_comes_before_the_pull_requests_own(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base, _ = make_pr(repo, github)  # the head's prompt breaks the base's `greeting`
    decoys = {f"evals/wip-{n}.yaml": decoy(n) for n in range(DECOYS)}
    head = repo.commit("Evals of its own, failing", decoys)
    github.pulls[7].head_sha = head
    script_model(model, head_greets_well=False)

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=provider_env(model),
        inputs={"check-run": "true"},
    )

    assert run.returncode == 1, run.stdout + run.stderr
    (check,) = github.check_runs
    assert check["output"]["title"].startswith("Blocked: support-bot-eval 0."), check["output"]
    assert check["output"]["annotations"][0]["title"].startswith("support-bot-eval / greeting")
    assert check["output"]["summary"].find("support-bot-eval") < check["output"]["summary"].find(
        "0-wip-"
    ), "the reason names the base's Eval first"
    body = github.comments_on(7)[0]["body"]
    for shown in (body, run.summary):
        heading = shown.splitlines()[1]
        assert heading.startswith("## ❌ evalward: Blocked: support-bot-eval 0."), heading
        why = re.findall(r"^- (\S+):", shown, re.MULTILINE)
        assert why[0] == "support-bot-eval", why[:3]
        first = re.search(r"^1\. .*$", shown, re.MULTILINE)
        assert first is not None and "support-bot-eval / greeting" in first[0], first
        assert re.search(r"^\| support-bot-eval \|", shown, re.MULTILINE), "its row in the table"
    errors = re.findall(r"^::error [^:]*title=evalward%3A ([^:]+)::", run.stdout, re.MULTILINE)
    assert errors[0] == "support-bot-eval / greeting", errors[:3]
    page = (run.output_dir / "report.html").read_text()
    card = re.findall(r'class="reason-link"[^>]*>([^<]+)</a>', page)
    assert card[0] == "support-bot-eval / greeting", card[:3]


def test_the_base_branchs_reasons_are_in_the_comment_past_seven_hundred_of_the_prs_own(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """One "why" line per failing Eval stands above the reasons: seven hundred Evals of the
    pull request's own filled the comment with theirs, and it was cut before the first
    reason, the counts and the Eval table."""
    base, _ = make_pr(repo, github)
    decoys = "---\n".join(decoy(n) for n in range(700))
    head = repo.commit("Evals of its own, failing", {"evals/wip.yaml": decoys})
    github.pulls[7].head_sha = head
    script_model(model, head_greets_well=False)

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=provider_env(model),
    )

    assert run.returncode == 1, run.stdout + run.stderr
    body = github.comments_on(7)[0]["body"]
    for shown in (body, run.summary):
        first = re.search(r"^1\. .*$", shown, re.MULTILINE)
        assert first is not None and "support-bot-eval / greeting" in first[0], shown[-800:]
        assert re.search(r"^- … and [\d,]+ more Evals \(results\.json", shown, re.MULTILINE)
        assert re.search(r"^\d+/\d+ fixtures pass on head", shown, re.MULTILINE), "the counts"


def test_the_check_runs_counts_line_names_the_base_branchs_blocked_eval_first(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str]
) -> None:
    """The counts line leads with each Eval a test blocks beside its fixtures' own results
    ("… blocked by its pooled sequential test"): Evals of the pull request's own, copies of
    the base's over its fixtures and named to sort first, were named there before the base's
    `helper-eval`, and enough of them would push it past what the check run's summary holds."""
    own = "---\n".join(EVAL.replace("helper-eval", f"0-wip-{n}") for n in range(3))
    base, _ = change(repo, DROP)
    head = repo.commit("Evals of its own", {"wip.yaml": own})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=env,
        inputs={"mock-script": "mock.yaml", "cache": "off", "check-run": "true"},
    )

    assert run.returncode == 1, run.stdout + run.stderr
    (check,) = github.check_runs
    counts = check["output"]["summary"].split("\n\n")[0]
    body = github.comments_on(7)[0]["body"]
    comment_counts = next(line for line in body.splitlines() if " fixtures pass on head" in line)
    for line in (counts, comment_counts):
        blocked = re.findall(r"(\S+) blocked by its pooled sequential test", line)
        assert len(blocked) == 4 and blocked[0] == "helper-eval", line
