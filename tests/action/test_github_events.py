"""Every GitHub event evalward handles, run as the runner runs it: `python -m evalward` with the
GITHUB_* environment, a real git repository, the fake GitHub API (every request checked against
GitHub's OpenAPI description) and a scripted model server."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.github_api import TIMESTAMP, FakeGitHub, FakePull
from fakes.model_server import Rule, ScriptedModelServer, text
from support.actionrun import prepare, pull_request_event, run_action, start_action, under_test
from support.gitrepo import GitRepo
from support.suite import (
    BASE_PROMPT,
    GREETING_FIXTURE,
    HEAD_PROMPT,
    ORDER_FIXTURE,
    SUPPORT_BOT,
    SUPPORT_EVAL,
    Shared,
    make_pr,
    script_model,
    shared_pr,
)

pytestmark = pytest.mark.e2e

WEBHOOKS = Path(__file__).resolve().parents[1] / "data" / "github" / "webhooks"
LABEL = "force-eval-bypass"


def real_payload(name: str, **changes: Any) -> dict[str, Any]:
    """A payload from @octokit/webhooks-examples with our repository's numbers put in."""
    payload: dict[str, Any] = json.loads((WEBHOOKS / f"{name}.json").read_text())
    payload["repository"]["full_name"] = "acme/agents"
    pull = payload.get("pull_request")
    if pull is not None:
        pull["number"] = payload["number"] = changes.pop("number", 7)
        pull["head"]["sha"] = changes.pop("head", pull["head"]["sha"])
        pull["base"]["sha"] = changes.pop("base", pull["base"]["sha"])
        pull["base"]["ref"] = "main"  # the fake's pull request is into main, as its API says
    payload.update(changes)
    return payload


@pytest.fixture(scope="module")
def greets_badly(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    """The pull request whose head greets badly, for the tests of what a gate does once its
    runs are done (the log, the check run, the bypass)."""
    yield from shared_pr(tmp_path_factory.mktemp("greets-badly"), head_greets_well=False)


def comment_body(github: FakeGitHub) -> str:
    comments = github.comments_on(7)
    assert len(comments) == 1
    return str(comments[0]["body"])


# --- pull_request and pull_request_target ---------------------------------------------------


def test_real_opened_payload_gates_and_logs_grouped_errors_on_fixture_lines(
    greets_badly: Shared, github: FakeGitHub, tmp_path: Path
) -> None:
    change = greets_badly
    change.opened(github)

    run = change.gate(
        github, real_payload("pull_request.opened", head=change.head, base=change.base), tmp_path
    )

    assert run.returncode == 1, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("::group::evalward: pull request #7")
    assert "::endgroup::" in lines
    errors = [line for line in lines if line.startswith("::error ")]
    assert errors == [
        "::error file=evals/fixtures/greeting.yaml,line=1,"
        "title=evalward%3A support-bot-eval / greeting::" + errors[0].split("::", 2)[2]
    ]
    out = run.output_dir
    assert {p.name for p in out.iterdir()} >= {
        "results.json",
        "junit.xml",
        "comment.md",
        "report.html",
    }
    assert 'failures="1"' in (out / "junit.xml").read_text()
    assert run.results()["run"]["pull_request"] == 7


def test_closed_action_is_skipped_without_running(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, head = make_pr(repo, github)
    run = run_action(
        repo.path, github, real_payload("pull_request.closed", head=head, base=base), env=env
    )
    assert run.returncode == 0, run.stderr
    assert run.outputs["result"] == "skipped"
    assert model.requests == [] and github.requests == []


def test_a_job_that_talks_to_no_github_does_not_load_its_client(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str]
) -> None:
    """PyGithub is a quarter of the action's start-up: a job that never calls GitHub's API
    (here, a closed pull request's) does not import it; a gate does."""
    base, head = make_pr(repo, github)

    def imported(payload: dict[str, Any]) -> set[str]:
        launch = prepare(repo.path, github, payload, env=env)
        entry = under_test()
        done = subprocess.run(
            [entry[0], "-X", "importtime", *entry[1:]],
            cwd=repo.path, env=launch.env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode in (0, 1), done.stderr[-3000:]
        return {line.split("|")[-1].strip() for line in done.stderr.splitlines()}

    assert "github" not in imported(real_payload("pull_request.closed", head=head, base=base))
    assert "github" in imported(pull_request_event(github.repository, 7, base, head))


def test_pull_request_target_is_refused_unless_opted_in(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=True)
    event = real_payload("pull_request.synchronize", head=head, base=base)

    refused = run_action(repo.path, github, event, env=env, event_name="pull_request_target")

    assert refused.returncode == 2
    assert "pull_request_target" in refused.stderr
    assert "secrets" in refused.stderr and "allow-untrusted-head: true" in refused.stderr
    assert model.requests == []

    allowed = run_action(
        repo.path,
        github,
        event,
        env=env,
        event_name="pull_request_target",
        inputs={"allow-untrusted-head": "true"},
    )
    assert allowed.returncode == 0, allowed.stderr
    assert allowed.outputs["result"] == "pass"


# --- the bypass ----------------------------------------------------------------------------


def labeled(base: str, head: str, sender: str = "maintainer") -> dict[str, Any]:
    """GitHub's payload of `sender` applying the label on `head`, at the fake's TIMESTAMP (when
    `add_label` applies it unless told another time)."""
    payload = real_payload(
        "pull_request.labeled", head=head, base=base, label={"name": LABEL, "color": "f00"}
    )
    payload["sender"]["login"] = sender
    payload["pull_request"]["updated_at"] = TIMESTAMP
    return payload


def test_bypass_covers_the_labelled_sha_and_a_later_push_rearms_the_gate(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=False)
    github.permissions["maintainer"] = "maintain"
    github.add_label(7, LABEL, actor="maintainer")

    first = run_action(repo.path, github, labeled(base, head), env=env)

    assert first.returncode == 0, first.stderr
    assert first.outputs["result"] == "bypassed"
    audit_line = next(x for x in first.stdout.splitlines() if x.startswith("{"))
    assert audit_line.startswith('{"event": "eval_gate_bypass"')
    assert json.loads(first.outputs["audit"])["outcome"] == "honoured"
    assert f"head `{head[:12]}` only" in comment_body(github)

    # a re-run on the same head (any event) keeps the bypass: the comment records the SHA
    again = run_action(
        repo.path, github, real_payload("pull_request.reopened", head=head, base=base), env=env
    )
    assert again.outputs["result"] == "bypassed", again.stdout

    # a push after the label: new head, the label is still there, the gate is armed again
    new_head = repo.commit("tweak", {"notes.txt": "more\n"})
    github.pulls[7].head_sha = new_head
    pushed = run_action(
        repo.path,
        github,
        real_payload("pull_request.synchronize", head=new_head, base=base),
        env=env,
    )
    assert pushed.returncode == 1, pushed.stdout
    assert pushed.outputs["result"] == "fail"
    record = json.loads(pushed.outputs["audit"])
    assert record["event"] == "eval_gate_bypass" and record["outcome"] == "refused"
    assert "re-arms the gate" in record["reason"]
    assert "### ⛔ Bypass refused" in comment_body(github)
    audit = (pushed.output_dir / "audit.jsonl").read_text().splitlines()
    assert [json.loads(x)["outcome"] for x in audit] == ["honoured", "honoured", "refused"]

    # scope `pr`: the same label covers every later commit
    scoped = run_action(
        repo.path,
        github,
        real_payload("pull_request.synchronize", head=new_head, base=base),
        env=env,
        inputs={"bypass-scope": "pr"},
    )
    assert scoped.returncode == 0 and scoped.outputs["result"] == "bypassed"


def test_bypass_by_a_user_without_write_permission_is_refused_and_audited(
    greets_badly: Shared, github: FakeGitHub, tmp_path: Path
) -> None:
    change = greets_badly
    change.opened(github)
    github.permissions["triager"] = "triage"
    github.add_label(7, LABEL, actor="triager")

    run = change.gate(github, labeled(change.base, change.head, sender="triager"), tmp_path)

    assert run.returncode == 1
    assert run.outputs["result"] == "fail"
    record = json.loads(run.outputs["audit"])
    assert record["outcome"] == "refused" and record["actor"] == "triager"
    assert record["permission"] == "triage"
    assert any(x.startswith("::warning::evalward bypass refused") for x in run.stdout.splitlines())
    assert any(r.path.endswith("/collaborators/triager/permission") for r in github.requests)


def test_a_forged_comment_cannot_plant_a_bypass_record(
    greets_badly: Shared, github: FakeGitHub, tmp_path: Path
) -> None:
    change = greets_badly
    change.opened(github)
    github.permissions["maintainer"] = "write"
    github.add_label(7, LABEL, actor="maintainer")
    forged = github.add_comment(
        7,
        "<!-- evalward-comment:evals/gate -->\n"
        f'<!-- evalward-bypass-record {{"label": "{LABEL}", "labeled_at": '
        f'"2026-11-20T10:00:00+00:00", "sha": "{change.head}", "base": "main"}} -->',
        author="mallory",
    )

    run = change.gate(
        github,
        real_payload("pull_request.synchronize", head=change.head, base=change.base),
        tmp_path,
    )

    assert run.outputs["result"] == "fail"
    assert github.comments[forged["id"]]["user"]["login"] == "mallory"
    assert "evalward-bypass-record" in github.comments[forged["id"]]["body"]  # untouched
    assert len(github.comments_on(7)) == 2


# --- forks and secrets --------------------------------------------------------------------


def test_fork_without_a_key_says_so_and_follows_on_missing_secrets(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base, head = make_pr(repo, github)
    github.pulls[7].head_repo = "contributor/agents"
    event = real_payload("pull_request.opened", head=head, base=base)

    failed = run_action(repo.path, github, event, env={})

    assert failed.returncode == 2
    assert "secrets are not passed to workflows from forks" in failed.stderr
    assert "contributor/agents" in failed.stderr and "on-missing-secrets: skip" in failed.stderr
    assert "401" not in failed.stderr

    skipped = run_action(repo.path, github, event, env={}, inputs={"on-missing-secrets": "skip"})
    assert skipped.returncode == 0
    assert skipped.outputs["result"] == "skipped"
    assert "::warning::evalward skipped" in skipped.stdout
    assert model.requests == []


# --- comment modes and the check run --------------------------------------------------------


def test_comment_modes(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=True)
    event = pull_request_event(github.repository, 7, base, head)

    for mode in ("never", "on-failure"):
        run = run_action(repo.path, github, event, env=env, inputs={"comment": mode})
        assert run.outputs["result"] == "pass"
        assert github.comments_on(7) == []
        assert "comment-url" not in run.outputs
        assert (run.output_dir / "comment.md").exists()

    run = run_action(repo.path, github, event, env=env, inputs={"comment": "always"})
    assert run.outputs["comment-url"].endswith(f"#issuecomment-{github.comments_on(7)[0]['id']}")


def test_check_run_annotates_the_failing_fixture_and_sets_a_status(
    greets_badly: Shared, github: FakeGitHub, tmp_path: Path
) -> None:
    change, head = greets_badly, greets_badly.head
    change.opened(github)

    run = change.gate(
        github,
        pull_request_event(github.repository, 7, change.base, head),
        tmp_path,
        inputs={"check-run": "true"},
    )

    assert run.returncode == 1
    (check,) = github.check_runs
    assert check["head_sha"] == head and check["conclusion"] == "failure"
    assert check["details_url"] == "https://github.example/acme/agents/actions/runs/4242"
    (note,) = check["output"]["annotations"]
    assert note["path"] == "evals/fixtures/greeting.yaml"
    assert note["start_line"] == 1 and note["annotation_level"] == "failure"
    (status,) = github.statuses
    assert status["sha"] == head and status["state"] == "failure"
    assert status["target_url"] == check["details_url"]


# --- workflow_dispatch, schedule, push -----------------------------------------------------


def test_workflow_dispatch_without_pr_runs_every_eval_and_writes_the_summary(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    make_pr(repo, github)
    script_model(model, head_greets_well=True)
    model.script("MATH-TUTOR-PROMPT", text("The answer: 4"))

    run = run_action(
        repo.path,
        github,
        real_payload("workflow_dispatch"),
        env=env,
        event_name="workflow_dispatch",
    )

    assert run.returncode == 0, run.stderr
    assert {e["eval"] for e in run.results()["evals"]} == {"math-tutor-eval", "support-bot-eval"}
    assert "math-tutor-eval" in run.summary
    # what ran and why, not every agent listed as a "new agent" of a change
    assert "**Manual run**: every Eval on the current ref." in run.summary
    assert "Changed agents" not in run.summary and "new agent" not in run.summary
    assert "Manual run" in (run.output_dir / "comment.md").read_text()
    assert github.comments_on(7) == []
    assert model.requests_mentioning("BASE-V1") == []  # no baseline on a plain run


def test_workflow_dispatch_with_pr_gates_that_pull_request(
    greets_badly: Shared, github: FakeGitHub, tmp_path: Path
) -> None:
    greets_badly.opened(github)

    run = greets_badly.gate(
        github,
        real_payload("workflow_dispatch"),
        tmp_path,
        event_name="workflow_dispatch",
        inputs={"pr": "7"},
    )

    assert run.returncode == 1
    assert "### Why it is blocked — worst first" in comment_body(github)


def test_workflow_dispatch_refuses_a_fork_pull_request_unless_opted_in(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """workflow_dispatch has the repository's secrets, as pull_request_target has: gating a
    fork's head there runs its author's code with them."""
    make_pr(repo, github)
    github.pulls[7].head_repo = "contributor/agents"
    script_model(model, head_greets_well=True)
    dispatch = real_payload("workflow_dispatch")

    refused = run_action(
        repo.path, github, dispatch, env=env, event_name="workflow_dispatch", inputs={"pr": "7"}
    )

    assert refused.returncode == 2, refused.stderr
    assert "::error::GITHUB_EVENT_NAME=workflow_dispatch: pull request #7" in refused.stderr
    assert "contributor/agents" in refused.stderr and "secrets" in refused.stderr
    assert "allow-untrusted-head: true" in refused.stderr
    assert model.requests == [] and github.comments_on(7) == []
    assert refused.outputs["result"] == "incomplete"
    assert "stopped before a decision" in refused.summary

    # the same refusal for a shard of that run, which would run the fork's agents too
    shard = run_action(
        repo.path,
        github,
        dispatch,
        env=env,
        event_name="workflow_dispatch",
        inputs={"pr": "7", "shard": "1/2"},
    )
    assert shard.returncode == 2 and "contributor/agents" in shard.stderr
    assert model.requests == []

    allowed = run_action(
        repo.path,
        github,
        dispatch,
        env=env,
        event_name="workflow_dispatch",
        inputs={"pr": "7", "allow-untrusted-head": "true"},
    )
    assert allowed.returncode == 0, allowed.stderr
    assert allowed.outputs["result"] == "pass"


def test_schedule_runs_only_the_evals_whose_cron_fired(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    make_pr(repo, github)
    repo.commit(
        "schedule the tutor",
        {
            "agents/math-tutor.yaml": (repo.path / "agents/math-tutor.yaml")
            .read_text()
            .replace(
                "  targetAgent: math-tutor\n  fixtureSelector:",
                "  targetAgent: math-tutor\n  schedule: '0 6 * * 1'\n  fixtureSelector:",
                1,
            )
        },
    )
    model.script("MATH-TUTOR-PROMPT", text("The answer: 4"))
    event = {"schedule": "0  6 * * 1", "repository": {"full_name": "acme/agents"}}

    run = run_action(repo.path, github, event, env=env, event_name="schedule")

    assert run.returncode == 0, run.stderr
    assert {e["eval"] for e in run.results()["evals"]} == {"math-tutor-eval"}
    assert model.requests_mentioning("HEAD-V2") == []
    assert (
        "**Scheduled run** (cron `0 6 * * 1`): every Eval with this schedule — math-tutor-eval."
        in run.summary
    )
    assert "Changed agents" not in run.summary and "new agent" not in run.summary

    # A scheduled run on the same commit runs again (it is there to catch a model's drift),
    # and stores what it finds.
    calls = len(model.requests)
    again = run_action(repo.path, github, event, env=env, event_name="schedule")
    assert again.returncode == 0, again.stderr
    assert again.results()["cacheHits"] == 0
    assert len(model.requests) > calls

    other = run_action(
        repo.path, github, {**event, "schedule": "30 1 1 1 *"}, env=env, event_name="schedule"
    )
    # not this Eval's cron; it may be due by the clock only if it fired in the last hour
    assert other.returncode == 0


def test_push_runs_on_the_default_branch_only(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    make_pr(repo, github)
    script_model(model, head_greets_well=True)
    model.script("MATH-TUTOR-PROMPT", text("The answer: 4"))
    payload = real_payload("push")

    tag = run_action(repo.path, github, payload, env=env, event_name="push")
    assert tag.returncode == 0 and tag.outputs["result"] == "skipped"
    assert model.requests == []

    default = run_action(
        repo.path, github, {**payload, "ref": "refs/heads/master"}, env=env, event_name="push"
    )
    assert default.returncode == 0, default.stderr
    assert default.outputs["result"] == "pass"
    assert len(default.results()["evals"]) == 2
    assert "**Run on push to master**: every Eval." in default.summary
    assert "Changed agents" not in default.summary and "new agent" not in default.summary


# --- cancellation ----------------------------------------------------------------------------


def test_sigterm_stops_writes_partial_results_and_updates_the_comment(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=True)
    # the base's runs come first (sides take turns): the head's is the slow one
    slow = Rule(lambda b: "HEAD-V2" in json.dumps(b) and "Hello there" in json.dumps(b), [])
    slow.replies.append(text("Hello!", delay=60))
    model.rules.insert(0, slow)
    launch = prepare(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=env,
        inputs={"parallel": "1"},
    )
    process = start_action(repo.path, launch)
    while not [r for r in model.requests if slow.matcher(r)]:  # the slow head run started
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=60)
    run = launch.finish(process.returncode, stdout, stderr)

    assert run.returncode == 130, stderr
    assert run.outputs["result"] == "incomplete"
    results = run.results()
    assert results["run"]["cancelled"] is True
    done, planned = results["run"]["runs_done"], results["run"]["runs_planned"]
    assert planned == 4 and 1 <= done < planned
    assert len(results["fixtures"]) == done
    assert f"cancelled after {done} of 4 runs" in comment_body(github)


def test_results_json_matches_its_documented_schema(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    base, head = make_pr(repo, github)
    script_model(model, head_greets_well=False)
    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )
    doc = (Path(__file__).resolve().parents[2] / "docs" / "results-schema.md").read_text()
    documented = {line.split("`")[1] for line in doc.splitlines() if line.startswith("| `")}
    results = run.results()
    assert set(results) == documented
    assert results["schemaVersion"] == 1
    for key in results["run"]:
        assert f"`{key}`" in doc
    for key in results["fixtures"][0]:
        assert f"`{key}`" in doc
    for key in results["evals"][0]:
        assert f"`{key}`" in doc, key
    for key in results["evals"][0]["fixture_results"][0]:
        assert f"`{key}`" in doc, key


def test_a_workflow_dispatch_rerun_decides_like_the_pull_request_gate(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Every gate setting is the Eval's, read from the base branch: a rerun of the gate from
    workflow_dispatch blocks exactly as the pull_request event did, for the same reason,
    although the pull request loosens the rule and the rerun's input asks for none."""
    strict = SUPPORT_EVAL.replace(
        "passThreshold: 0.9", "passThreshold: 0.5\n    gate: { failOnRegression: any }"
    )
    base = repo.commit(
        "agents and evals",
        {
            "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=BASE_PROMPT),
            "evals/support-bot.yaml": strict,
            "evals/fixtures/order-status.yaml": ORDER_FIXTURE,
            "evals/fixtures/greeting.yaml": GREETING_FIXTURE,
        },
    )
    repo.branch("feature")
    head = repo.commit(
        "sharpen the prompt, and let regressions through",
        {
            "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=HEAD_PROMPT),
            "evals/support-bot.yaml": strict.replace(
                "failOnRegression: any", "failOnRegression: none"
            ),
        },
    )
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    script_model(model, head_greets_well=False)  # above the 0.5 threshold, but a regression

    def why(body: str) -> list[str]:
        lines = body.split("### Why it is blocked", 1)[1].split("\n###", 1)[0].splitlines()
        return [line for line in lines if line.startswith("- ")]  # not the run's timing

    gate = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )
    gated = comment_body(github)
    rerun = run_action(
        repo.path,
        github,
        real_payload("workflow_dispatch"),
        env=env,
        event_name="workflow_dispatch",
        inputs={"pr": "7", "fail-on-regression": "none"},
    )
    rerun_body = comment_body(github)  # the same comment, updated

    assert (gate.returncode, rerun.returncode) == (1, 1), gate.stderr + rerun.stderr
    assert gate.outputs["result"] == rerun.outputs["result"] == "fail"
    assert why(gated) == why(rerun_body)
    assert any("greeting" in line and "regress" in line for line in why(gated)), gated
    assert (gate.results()["reason"], gate.results()["summary"]["counts"]) == (
        rerun.results()["reason"],
        rerun.results()["summary"]["counts"],
    )
