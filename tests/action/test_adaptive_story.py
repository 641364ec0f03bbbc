"""Adaptive reps tell one story on every surface: a noisy agent answered by a mock script rep by
rep and side by side (`match: {fixture, side}`, `reps: [...]`), through `evalward run` and
through the action.

Every surface counts each gating fixture as passing (its sequential test settled working),
failing (settled broken) or not settled, and those add up; the headline, the "why" lines and
results.json's `reason` name the test that blocked with its numbers; no line speaks of a rule
adaptive reps do not read; and an unchanged pull request whose fixtures pass costs one call
a fixture."""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from fakes.github_api import FakeGitHub, FakePull
from support.actionrun import ActionRun, pull_request_event, run_action
from support.answered import AGENT, commit_suite, helper_eval
from support.clirun import evalward
from support.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

NAMES = [f"f{i}" for i in range(10)]
EVAL = helper_eval("execution: { reps: { max: 8 } }")
"""Adaptive reps, every other setting the default (what `evalward init` writes)."""

DROP = {
    **dict.fromkeys(NAMES[:5], "FPP"),
    **dict.fromkeys(NAMES[5:8], "P"),
    "f8": "FFPPFPFP",
    "f9": "FPFFPFPF",
}
"""A drop spread over the Eval: f0-f4 fail their first rep and then pass (noise), f8 passes
half its reps (settled working: far from broken), f9 3 of 8 (leaning broken at the maximum:
not settled); pooled over the Eval, 20 of 34 head reps pass: a regression."""
NOISY = {**dict.fromkeys(NAMES[:9], "P"), "f9": "FPFFPFPF"}
"""Nothing changed but f9's noise: nothing blocks, and f9 is not settled."""
BROKEN = {
    **dict.fromkeys(NAMES, "P"),
    "f1": "PPPPFPPP",
    "f2": "FPPPPPPP",
    "f3": "PPPFPPPP",
    "f4": "F",
    "f6": "PPPPPPFP",
    "f7": "PPPFPPPP",
    "f8": "PPPFPPPP",
    "f9": "FPPPPPPP",
}
"""f4 broken outright, others failing a rep now and then: the base passes every run."""


def mock(head: dict[str, str], base: dict[str, str] | None = None) -> str:
    """A mock script answering each fixture's reps on each side: P right, F wrong."""
    lines = ["replies:"]
    for side, patterns in (("base", base or dict.fromkeys(NAMES, "P")), ("head", head)):
        for name, pattern in patterns.items():
            lines += [f"  - match: {{ agent: helper, fixture: {name}, side: {side} }}", "    reps:"]
            for answer in pattern:
                said = "the answer" if answer == "P" else "no idea"
                lines.append(f'      - turns: [{{ content: "{said}" }}]')
    return "\n".join(lines) + "\n"


def change(repo: GitRepo, head: dict[str, str], eval_yaml: str = EVAL) -> tuple[str, str]:
    """The suite on main with its mock script, and a branch that changes the agent's prompt."""
    base = commit_suite(repo, eval_yaml, NAMES)
    repo.commit("answers", {"mock.yaml": mock(head)})
    base = repo.head()
    repo.branch("change")
    return base, repo.commit("a new prompt", {"agent.yaml": AGENT.format(version="v2")})


def run(repo: GitRepo, out: Path) -> Any:
    return evalward(
        "run", "--base", "main", "--no-cache", "--no-history", "--mock-script", "mock.yaml",
        "--output-dir", str(out), cwd=repo.path,
    )  # fmt: skip


def comment_lines(body: str) -> tuple[str, str, str]:
    """The headline, the counts line and the Eval's row, as a reader sees them."""
    lines = body.splitlines()
    headline = html.unescape(re.sub(r"^## \S+ evalward: ", "", lines[1]))
    counts = next(line for line in lines if " fixtures pass on head" in line)
    row = next(line for line in lines if line.startswith("| helper-eval |"))
    return headline, counts, row


def tagged(page: str, pattern: str) -> str:
    found = re.search(pattern, page, re.S)
    assert found is not None, pattern
    return html.unescape(found[1]).strip()


def line_adds_up(body: str) -> tuple[int, int, int, int]:
    """The counts line of a comment: passing, fixtures, failing, not settled, which add up."""
    line = comment_lines(body)[1]
    found = re.search(r"(\d+)/(\d+) fixtures pass on head .*· (\d+) failing", line)
    assert found is not None, line
    unsettled = re.search(r" · (\d+) not settled", line)
    passing, fixtures, failing = int(found[1]), int(found[2]), int(found[3])
    settled = int(unsettled[1]) if unsettled else 0
    assert passing + failing + settled == fixtures, line
    return passing, fixtures, failing, settled


def adds_up(record: dict[str, Any]) -> dict[str, int]:
    """results.json's counts, checked against each other and against the verdicts it keeps."""
    counts = record["summary"]["counts"]
    assert counts["passing"] + counts["failing"] + counts["not_settled"] == counts["fixtures"]
    (head,) = [e for e in record["evals"] if e["side"] == "head"]
    verdicts = [f["verdict"] for f in head["sequential"]["fixtures"]]
    settled_working = sum(v in ("stable", "noise", "improvement") for v in verdicts)
    settled_broken = sum(v in ("regression", "still failing", "failing") for v in verdicts)
    assert (counts["passing"], counts["failing"]) == (settled_working, settled_broken)
    assert (head["passing"], head["failing"]) == (settled_working, settled_broken)
    results = {o["name"]: (o["result"], o["verdict"]) for o in head["fixture_results"]}
    assert {v for _, v in results.values()} == set(verdicts)
    return dict(counts)


def shown(page: str) -> str:
    """report.html as a reader sees it: its script (code, and the data it draws) left out."""
    return re.sub(r"<script.*?</script>", "", page, flags=re.S)


def no_rule_that_did_not_decide(*texts: str) -> None:
    for text in texts:
        assert "(rule ≥" not in text and "rule \\u2265" not in text
        assert "McNemar" not in text
        assert "below threshold" not in text


def test_a_drop_over_the_eval_is_blocked_by_the_pooled_test_and_every_count_adds_up(
    repo: GitRepo, tmp_path: Path
) -> None:
    change(repo, DROP)
    out = tmp_path / "out"

    done = run(repo, out)

    assert done.returncode == 1, done.stdout + done.stderr
    comment = (out / "comment.md").read_text()
    assert line_adds_up(comment) == (9, 10, 0, 1)  # was "10/10 … pass · 0 regressions · 2 failing"
    record = json.loads((out / "results.json").read_text())
    counts = adds_up(record)
    assert (counts["fixtures"], counts["passing"], counts["failing"]) == (10, 9, 0)
    assert (counts["not_settled"], counts["regressions"]) == (1, 0)
    (head,) = [e for e in record["evals"] if e["side"] == "head"]
    assert head["sequential"]["pooled"] == "regression"
    f9 = next(o for o in head["fixture_results"] if o["name"] == "f9")
    assert (f9["result"], f9["verdict"]) == ("skipped", "likely regression")

    headline = (
        "Blocked: helper-eval: pass rate dropped (pooled sequential test: head 20/34, base 7/7, "
        "p ≤ 3.2e-05) — 1 of 10 fixtures not settled"
    )
    # what blocked comes first: the fixtures' own counts do not block
    counts_line = (
        "helper-eval blocked by its pooled sequential test: head's pass rate 0.59 (20/34) vs "
        "base 1.00 (7/7) · 9/10 fixtures pass on head on their own · 0 regressions · 0 failing "
        "· 1 not settled"
    )
    why = (
        "helper-eval: pass rate over the Eval regression by the pooled sequential test: head "
        "20/34 (59 %), base 7/7; p ≤ 3.2e-05, within its share of the false-block rate 0.01 "
        "(falseBlockRate 0.02 / 2); driven by f0, f1, f2, f3, f4, f8, f9"
    )
    assert record["summary"]["headline"] == headline
    assert record["reason"] == f"helper-eval blocked by its sequential tests; {why}"
    said, line, row = comment_lines(comment)
    assert (said, line.split(" · 7 flaky")[0]) == (headline, counts_line)
    assert row.endswith("| — | 9/10 (1 not settled) | ❌ Fail |")
    assert f"- {why}" in comment.replace("&lt;", "<")
    # the fixtures that drove the pooled test lead the list, with the test's numbers
    assert "📉 **medium** · [helper-eval / f9]" in comment
    assert (
        "likely regression: head 3/8 · base 1/1 · its failed reps drove the pooled sequential test"
    ) in comment
    assert comment_lines(done.stdout)[:2] == (said, line)  # the terminal says the same
    page = (out / "report.html").read_text()
    assert tagged(page, r'<h2 id="headline">(.*?)</h2>') == headline
    assert tagged(page, r'<p class="counts">(.*?)</p>') == line
    assert '9/10 <span class="muted">(1 not settled)</span>' in page
    no_rule_that_did_not_decide(comment, done.stdout, shown(page), record["reason"])
    assert "unreliable baseline" not in json.dumps(record["evals"])
    # no one fixture regressed: attribution is of the drop over the fixtures that drove it,
    # each variant running them all, as many calls as the gate's runs of them made on the
    # head: more than the default budget, which says so and where to raise it
    drivers = ["f0", "f1", "f2", "f3", "f4", "f8", "f9"]
    stopped = (
        "attribution stopped at its budget of 20 model calls: a variant's runs need about 31 "
        "(what the gate's runs of its fixtures made), more than the 20 left (0.5 × the run's "
        "own: attribution.budget in the base branch's evalward.yaml raises it)"
    )
    (regression,) = record["attribution"]["regressions"]
    assert (regression["fixtures"], regression["pooled"]) == (drivers, True)
    assert (regression["result"], regression["reason"]) == ("not attributable", stopped)
    assert record["attribution"]["untraced"] == []
    where = comment.split("### 🧭 Where it regressed\n\n")[1].split("\n\n")[0]
    named = ", ".join(f"`{name}`" for name in drivers)
    together = "pass rate dropped over them together (pooled sequential test)"
    said = f"not attributable — {stopped} (0 variants run)."
    assert where == f"- **helper-eval** ({named}, {together}): {said}"
    assert "it spent 0 of its 20 model calls" in comment
    assert "attribution: 0 of 1 regressions traced to their hunks" in done.stderr
    assert (
        f"<li><strong>helper-eval</strong> ({', '.join(drivers)}, {together}): not attributable"
        in shown(page)
    )


def test_an_unchanged_noisy_agent_passes_and_says_what_is_not_settled(
    repo: GitRepo, tmp_path: Path
) -> None:
    change(repo, NOISY)
    out = tmp_path / "out"

    done = run(repo, out)

    assert done.returncode == 0, done.stdout + done.stderr
    comment = (out / "comment.md").read_text()
    headline, line, row = comment_lines(comment)
    # was "every affected Eval passes" over "10/10 fixtures pass on head · … · 1 failing"
    assert headline == "every affected Eval passes — 1 of 10 fixtures not settled"
    assert line_adds_up(comment) == (9, 10, 0, 1)
    record = json.loads((out / "results.json").read_text())
    counts = adds_up(record)
    assert (counts["passing"], counts["failing"], counts["not_settled"]) == (9, 0, 1)
    assert line.startswith("9/10 fixtures pass on head · 0 regressions · 0 failing · 1 not settled")
    # nothing blocks, so no ❌ and no "failing fixtures"; the row reads no threshold
    assert row.endswith("| — | 9/10 (1 not settled) | ✅ Pass |")
    assert "Failing fixtures" not in comment and "Why it is blocked" not in comment
    assert "### ❔ Not settled — shown, not blocking" in comment
    assert "- helper-eval / f9 — likely regression: 3/8 reps pass, 95 % CI 14–69 %" in comment
    no_rule_that_did_not_decide(comment, done.stdout)


def test_a_broken_fixture_against_a_perfect_base_is_a_regression_never_an_unreliable_baseline(
    repo: GitRepo, tmp_path: Path
) -> None:
    change(repo, BROKEN)
    out = tmp_path / "out"

    done = run(repo, out)

    assert done.returncode == 1, done.stdout + done.stderr
    record = json.loads((out / "results.json").read_text())
    # was "whole Eval: unreliable baseline (head 31/40, base 2/2)": a base that passed every
    # run is no unreliable baseline, however few its runs
    assert "unreliable baseline" not in json.dumps(record["evals"])
    (head,) = [e for e in record["evals"] if e["side"] == "head"]
    assert head["sequential"]["pooled"] == "likely regression"
    counts = adds_up(record)
    assert (counts["passing"], counts["failing"], counts["regressions"]) == (9, 1, 1)
    headline = (
        "Blocked: helper-eval: f4 regression (per-fixture sequential test: head 0/4, base 1/1, "
        "p ≤ 1.2e-04) — 1 regression"
    )
    assert record["summary"]["headline"] == headline
    assert record["reason"] == (
        "helper-eval blocked by its sequential tests; helper-eval: f4 regression by its "
        "per-fixture sequential test: head 0/4, base 1/1; p ≤ 1.2e-04, within its share of the "
        "false-block rate 1.0e-03 (falseBlockRate 0.02 / 2 / 10 fixtures)"
    )
    comment = (out / "comment.md").read_text()
    assert comment_lines(comment)[:2] == (
        headline,
        "9/10 fixtures pass on head · 1 regression · 1 failing · 2 flaky",
    )
    assert "pooled over the Eval: likely regression (head 11/17, base 1/1" in comment


def test_no_line_speaks_of_a_rule_adaptive_reps_do_not_read(repo: GitRepo, tmp_path: Path) -> None:
    """The broken fixture again: its lines once said "(rule ≥ 60 %)" and a McNemar test
    "— inconclusive" that nothing read, and the reason a threshold that decided nothing."""
    change(repo, BROKEN)
    out = tmp_path / "out"

    done = run(repo, out)

    assert done.returncode == 1, done.stdout + done.stderr
    comment = (out / "comment.md").read_text()
    record = json.loads((out / "results.json").read_text())
    page = shown((out / "report.html").read_text())
    no_rule_that_did_not_decide(comment, done.stdout, page, record["reason"])
    assert "| helper-eval | helper | 1.00 → **0.83** | -0.17 | — | 9/10 | ❌ Fail |" in comment
    assert "regression: head 0/4 · base 1/1 · p ≤ 1.2e-04 (per-fixture sequential test)" in (
        comment
    )


def test_an_unchanged_pull_request_that_passes_costs_one_call_a_fixture(
    repo: GitRepo, tmp_path: Path
) -> None:
    change(repo, dict.fromkeys(NAMES, "P"))
    out = tmp_path / "out"

    done = run(repo, out)

    assert done.returncode == 0, done.stdout + done.stderr
    record = json.loads((out / "results.json").read_text())
    assert record["run"]["spent"]["model_calls"] == 10
    assert {(f["side"], f["rep"]) for f in record["fixtures"]} == {("head", 0)}
    assert record["summary"]["headline"] == "every affected Eval passes"
    assert adds_up(record)["passing"] == 10


def gate(
    repo: GitRepo,
    github: FakeGitHub,
    env: dict[str, str],
    head: dict[str, str],
    inputs: dict[str, str] | None = None,
) -> ActionRun:
    """Pull request 7 of `change(repo, head)`, gated by the action with its mock script, no
    cache and a check run (and `inputs`)."""
    base, commit = change(repo, head)
    github.add_pull(FakePull(number=7, head_sha=commit, base_sha=base))
    return run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, commit),
        env=env,
        inputs={"mock-script": "mock.yaml", "cache": "off", "check-run": "true", **(inputs or {})},
    )


def test_the_action_tells_the_same_story_on_every_surface_and_says_the_input_it_did_not_read(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str]
) -> None:
    """The drop through the action, with `fail-on-regression: any`: the decision is the
    sequential tests' (the input is said not to apply), and the comment, the job summary, the
    check run, report.html and results.json count alike."""
    done = gate(repo, github, env, DROP, {"fail-on-regression": "any"})

    assert done.returncode == 1, done.stdout + done.stderr
    record = done.results()
    (posted,) = github.comments_on(7)
    body = str(posted["body"])
    assert (
        "fail-on-regression: any does not apply to helper-eval: with adaptive reps "
        "(`execution.reps`) the sequential tests decide"
    ) in body.replace("\\`", "`")
    assert any(n.startswith("fail-on-regression: any does not apply") for n in record["notes"])
    counts = adds_up(record)
    assert (counts["passing"], counts["failing"], counts["not_settled"]) == (9, 0, 1)
    headline = record["summary"]["headline"]
    assert headline.startswith("Blocked: helper-eval: pass rate dropped (pooled sequential test")
    said, line, row = comment_lines(body)
    assert said == headline
    assert line.startswith("helper-eval blocked by its pooled sequential test: head's pass rate")
    assert (
        " · 9/10 fixtures pass on head on their own · 0 regressions · 0 failing · 1 not settled"
    ) in line
    assert row.endswith("| — | 9/10 (1 not settled) | ❌ Fail |")
    assert comment_lines(done.summary) == (said, line, row)
    (check,) = github.check_runs
    assert check["output"]["title"] == headline
    assert check["output"]["summary"].split("\n\n")[0] == line
    page = (done.output_dir / "report.html").read_text()
    assert tagged(page, r'<p class="counts">(.*?)</p>') == line
    no_rule_that_did_not_decide(body, done.summary, shown(page), record["reason"])
    # one annotation a fixture that drove the drop (14 head reps failed), in the log and the
    # check run alike
    drivers = ["f0", "f1", "f2", "f3", "f4", "f8", "f9"]
    assert sorted(annotated(done.stdout)) == drivers
    # worst first, as the comment lists them (GitHub shows a step's first ten beside the diff)
    listed = re.findall(r"^\d+\. .*?\[helper-eval / (f\d)\]", body, re.M)
    assert annotated(done.stdout) == listed
    titles = [a["title"] for a in check["output"]["annotations"]]
    assert sorted(t.split(":")[0].split(" / ")[1] for t in titles) == drivers


def annotated(log: str, level: str = "error") -> list[str]:
    """The fixtures the log's `::error` (or `::warning`) annotations name, in order."""
    return [
        line.split("title=evalward%3A helper-eval / ", 1)[1].split("::", 1)[0]
        for line in log.splitlines()
        if line.startswith(f"::{level} ") and "title=evalward%3A helper-eval / " in line
    ]


def test_a_fixture_whose_test_did_not_settle_is_a_warning_not_an_error(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str]
) -> None:
    """Nothing changed but f9's noise (3 of its 8 reps pass): the gate passes, and f9 is
    annotated once, as a warning, where each of its five failed reps was an error."""
    done = gate(repo, github, env, NOISY)

    assert done.returncode == 0, done.stdout + done.stderr
    assert annotated(done.stdout) == []
    assert annotated(done.stdout, "warning") == ["f9"]
    (check,) = github.check_runs
    (annotation,) = check["output"]["annotations"]
    assert annotation["annotation_level"] == "warning"
    assert annotation["title"].startswith("helper-eval / f9: ")


def test_the_action_annotates_a_broken_fixture_once_and_a_noisy_one_that_passes_never(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str]
) -> None:
    """f4 fails every rep its test asks for; seven others fail a rep of their eight and are
    settled working: one annotation, f4's, where every failed run made one."""
    done = gate(repo, github, env, BROKEN)

    assert done.returncode == 1, done.stdout + done.stderr
    failed = [
        (f["fixture"], f["rep"])
        for f in done.results()["fixtures"]
        if f["side"] == "head" and f["status"] != "pass"
    ]
    assert len({name for name, _ in failed}) > 1 and len(failed) > len({n for n, _ in failed})
    assert annotated(done.stdout) == ["f4"]
    (check,) = github.check_runs
    (annotation,) = check["output"]["annotations"]
    assert annotation["title"].startswith("helper-eval / f4: ")
    # junit.xml says the same: a testcase a fixture, f4's failing, each noisy one passing
    # with its failed rep told as a flaky one
    root = ET.fromstring((done.output_dir / "junit.xml").read_text())
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("10", "1", "0")
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert sorted(cases) == NAMES
    broken = [child.tag for child in cases["f4"]]
    assert broken[0] == "failure" and set(broken[1:]) == {"rerunFailure"} and broken[1:]
    noisy = {name for name, _ in failed} - {"f4"}
    assert noisy  # f2 and f9 fail their first rep, and pass the reps it asks for
    for name in NAMES[:4] + NAMES[5:]:
        told = [(child.tag, child.get("message", "").split(":")[0]) for child in cases[name]]
        reps = [f"rep {rep}" for fixture, rep in sorted(failed) if fixture == name]
        assert told == [("flakyFailure", rep) for rep in reps], (name, told)
