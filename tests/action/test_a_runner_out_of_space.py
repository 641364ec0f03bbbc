"""A runner that cannot take the action's files (its disk full, a file size limit) costs
those files, not the decision: the comment and the check run still say it, results.json is
written first, and a gate that would have exited 0 exits 3 (rerun) with one `::error`
naming what was not written, why, and what to do, never an internal error.

The action runs under `prlimit --fsize`: a write past the limit fails with EFBIG (CPython
ignores SIGXFSZ), as one on a full disk fails with ENOSPC. The agents' replies are long runs
of `<>`, which report.html writes as `\\u003c`-escapes: it grows past the limit while
results.json, a sixth of its size, stays well under it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fakes.github_api import FakeGitHub
from fakes.model_server import ScriptedModelServer, text, tool_call
from support import resultdb
from support.actionrun import (
    SHARD_KEY,
    ActionRun,
    Launch,
    prepare,
    pull_request_event,
    start_action,
)
from support.clirun import SOURCE
from support.gitrepo import GitRepo
from support.limits import subprocess_limit
from support.suite import make_pr, script_model

pytestmark = pytest.mark.e2e

LIMIT = 400_000
"""The largest file the action may write, in bytes: results.json of the long replies is
about 150 KB, report.html about 860 KB."""

PRLIMIT = "/usr/bin/prlimit"
LABEL = "force-eval-bypass"


def _gate(repo: GitRepo, github: FakeGitHub, env: dict[str, str], labeled_by: str = "") -> Launch:
    """Pull request 7 (`make_pr`) gated with a check run; on the bypass label's `labeled`
    event, applied by `labeled_by` with write access, when one is named."""
    base, head = make_pr(repo, github)
    payload = pull_request_event(github.repository, 7, base, head)
    if labeled_by:
        github.add_label(7, LABEL, actor=labeled_by)
        github.permissions[labeled_by] = "write"
        payload = pull_request_event(
            github.repository, 7, base, head,
            labels=[LABEL], action="labeled", label=LABEL, sender=labeled_by,
        )  # fmt: skip
    inputs = {"cache": "off", "check-run": "true"}
    return prepare(repo.path, github, payload, env=env, inputs=inputs)


def _run_limited(repo: GitRepo, launch: Launch, limit: int = LIMIT) -> ActionRun:
    process = start_action(repo.path, launch, (PRLIMIT, f"--fsize={limit}", "--"))
    stdout, stderr = process.communicate(timeout=subprocess_limit())
    return launch.finish(process.returncode, stdout, stderr)


def _long_replies(
    model: ScriptedModelServer, *, head_greets_well: bool, pairs: int = 25_000
) -> None:
    """Both sides look the order up and greet at length (`pairs` of `<>`); the head greets
    without the "Hello" the greeting fixture asks for unless `head_greets_well`."""
    padding = "<>" * pairs
    for tag in ("BASE-V1", "HEAD-V2"):
        model.script(
            lambda b, tag=tag: tag in json.dumps(b) and "12345" in json.dumps(b),
            tool_call("lookup_order", {"order_id": "12345"}),
            text("Your order has shipped and arrives on 2026-11-25."),
        )
    model.script(lambda b: "BASE-V1" in json.dumps(b), text(f"Hello! {padding}"))
    greeting = "Hello!" if head_greets_well else "Hi."
    model.script(lambda b: "HEAD-V2" in json.dumps(b), text(f"{greeting} {padding}"))


def _errors(run: ActionRun) -> list[str]:
    """The log's errors about what was not written (a failing fixture is an error too)."""
    lines = run.stdout.splitlines()
    return [line for line in lines if line.startswith("::error") and "not written" in line]


def _no_bug(run: ActionRun) -> None:
    said = run.stdout + run.stderr
    assert "Traceback" not in said and "This is a bug" not in said, said
    assert "internal error" not in said, said


def _report_html_lost(run: ActionRun) -> None:
    """results.json, junit.xml and comment.md on disk, in their order; report.html not (nor a
    part of it), and one `::error` that names it, the OS's reason and what to do."""
    _no_bug(run)
    out = run.output_dir
    assert run.results()["fixtures"], "results.json is written first, and whole"
    assert (out / "junit.xml").is_file() and (out / "comment.md").is_file()
    assert sorted(p.name for p in out.iterdir()) == ["comment.md", "junit.xml", "results.json"]
    (error,) = _errors(run)
    assert "report.html" in error and "File too large" in error and "EFBIG" in error, error
    assert "free space" in error and "rerun" in error, error


def test_a_passing_gate_whose_report_cannot_be_written_comments_checks_and_exits_3(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    launch = _gate(repo, github, env)
    _long_replies(model, head_greets_well=True)

    run = _run_limited(repo, launch)

    assert run.returncode == 3, run.stdout + run.stderr
    _report_html_lost(run)
    assert run.results()["result"] == "pass"
    assert run.outputs["result"] == "pass"
    assert "every affected Eval passes" in github.comments_on(7)[0]["body"]
    assert [check["conclusion"] for check in github.check_runs] == ["success"]


def test_a_failing_gate_whose_report_cannot_be_written_still_fails_with_exit_1(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    launch = _gate(repo, github, env)
    _long_replies(model, head_greets_well=False)

    run = _run_limited(repo, launch)

    assert run.returncode == 1, run.stdout + run.stderr
    _report_html_lost(run)
    assert run.outputs["result"] == "fail"
    assert "support-bot-eval" in github.comments_on(7)[0]["body"]
    assert [check["conclusion"] for check in github.check_runs] == ["failure"]


def _filled(path: Path, room: int = 0) -> bytes:
    """Fill `path` to `room` bytes short of the limit, as earlier runs could have: a write
    past that is cut short where the limit falls."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = b'{"event": "earlier"}\n'
    content = line * (LIMIT // len(line) + 1)
    content = content[: LIMIT - room] if room else content
    path.write_bytes(content)
    return content


def test_a_bypass_whose_audit_record_cannot_be_written_is_commented_and_exits_3(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    launch = _gate(repo, github, env, labeled_by="maintainer")
    script_model(model, head_greets_well=False)
    earlier = _filled(launch.output_dir / "audit.jsonl", room=10)

    run = _run_limited(repo, launch)

    assert run.returncode == 3, run.stdout + run.stderr
    _no_bug(run)
    assert run.outputs["result"] == "bypassed"
    assert run.results()["result"] == "bypassed"
    body = github.comments_on(7)[0]["body"]
    assert "### ⚠️ Bypass" in body and "**maintainer**" in body
    assert [check["conclusion"] for check in github.check_runs] == ["neutral"]
    (record,) = run.json_lines()  # the log still holds the record
    assert record["event"] == "eval_gate_bypass" and record["actor"] == "maintainer"
    assert (launch.output_dir / "audit.jsonl").read_bytes() == earlier, "no half a record"
    (error,) = _errors(run)
    assert "audit.jsonl" in error and "EFBIG" in error and "rerun" in error, error


def test_a_passing_gate_whose_job_summary_cannot_be_written_exits_3(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    launch = _gate(repo, github, env)
    script_model(model, head_greets_well=True)
    _filled(launch.summary_file)

    run = _run_limited(repo, launch)

    assert run.returncode == 3, run.stdout + run.stderr
    _no_bug(run)
    out = run.output_dir
    names = sorted(p.name for p in out.iterdir())
    assert names == ["comment.md", "junit.xml", "report.html", "results.json"]
    assert run.outputs["result"] == "pass"
    assert "every affected Eval passes" in github.comments_on(7)[0]["body"]
    assert [check["conclusion"] for check in github.check_runs] == ["success"]
    (error,) = _errors(run)
    assert "GITHUB_STEP_SUMMARY" in error and "EFBIG" in error, error


def test_the_runs_themselves_fit_under_the_limit(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """Without a limit the same gate passes with exit 0, report.html past the limit and
    results.json well under it: what the tests above lose is report.html alone."""
    launch = _gate(repo, github, env)
    _long_replies(model, head_greets_well=True)

    process = start_action(repo.path, launch)
    stdout, stderr = process.communicate(timeout=subprocess_limit())
    run = launch.finish(process.returncode, stdout, stderr)

    assert run.returncode == 0, run.stdout + run.stderr
    assert (run.output_dir / "report.html").stat().st_size > LIMIT * 3 // 2
    assert (run.output_dir / "results.json").stat().st_size < LIMIT // 2
    assert subprocess.run([PRLIMIT, "--version"], check=False).returncode == 0


def test_the_command_line_prints_the_decision_and_names_the_file_it_could_not_write(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """`evalward run --output-dir` under the same limit: the comment is printed, the files
    that fit are written, and the one that did not is named with its reason on standard
    error; a passing run exits 3 (run again for the files), never an internal error."""
    make_pr(repo, github)
    _long_replies(model, head_greets_well=True)
    out = repo.path.parent / "cli-out"

    done = subprocess.run(
        [PRLIMIT, f"--fsize={LIMIT}", "--", sys.executable, "-m", "evalward", "run", ".",
         "--base", "main", "--no-cache", "--no-history", "--output-dir", str(out)],
        cwd=repo.path,
        env={"PATH": os.environ["PATH"], "HOME": str(repo.path), "PYTHONPATH": SOURCE, **env},
        capture_output=True,
        text=True,
        timeout=subprocess_limit(),
        check=False,
    )  # fmt: skip

    said = done.stdout + done.stderr
    assert done.returncode == 3, said
    assert "Traceback" not in said and "This is a bug" not in said, said
    assert "every affected Eval passes" in done.stdout, done.stdout
    assert sorted(p.name for p in out.iterdir()) == ["comment.md", "junit.xml", "results.json"]
    assert "not written" in done.stderr and "report.html" in done.stderr, done.stderr
    assert "EFBIG" in done.stderr and "run again" in done.stderr, done.stderr


def test_a_shard_part_the_runner_cannot_take_is_said_and_exits_3_leaving_no_half_part(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """A part's file is all a shard job leaves: cut short, the merge would read half of it.
    It is written whole or not at all, and the job says which file and why, exit 3 (rerun)."""
    base, head = make_pr(repo, github)
    payload = pull_request_event(github.repository, 7, base, head)
    inputs = {"cache": "off", "shard": "1/1", "shard-key": SHARD_KEY}
    launch = prepare(repo.path, github, payload, env=env, inputs=inputs)
    _long_replies(model, head_greets_well=True, pairs=100_000)  # the part passes the limit

    run = _run_limited(repo, launch)

    assert run.returncode == 3, run.stdout + run.stderr
    _no_bug(run)
    assert sorted(p.name for p in run.output_dir.iterdir()) == [], "no part, nor half of one"
    (error,) = _errors(run)
    assert "shard-1-of-1.json" in error and "EFBIG" in error and "rerun" in error, error
    assert "runs are lost" in error and "decision" not in error, error


def test_a_result_cache_the_runner_cannot_take_costs_the_cache_not_the_gate(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The result cache's log is past the limit (as on a full disk, every write to it is
    refused; the job's files are well under it): the runs are made and the gate decides,
    comments, checks and writes its files with the exit code it decides, 0; one `::warning`
    says the cache's loss and what to do, never "the machine refused a write" as what
    stopped the job, nor "a bug in evalward"."""
    base, head = make_pr(repo, github)
    payload = pull_request_event(github.repository, 7, base, head)
    inputs = {"check-run": "true"}  # the result cache read and written
    launch = prepare(repo.path, github, payload, env=env, inputs=inputs)
    script_model(model, head_greets_well=True)
    cache = repo.path / ".evalward" / "cache"
    resultdb.log_past(cache, LIMIT)  # read by nothing before the run: a close would end it

    run = _run_limited(repo, launch)

    assert run.returncode == 0, run.stdout + run.stderr
    _no_bug(run)
    assert "refused a write" not in run.stdout + run.summary, run.stdout
    assert _errors(run) == []
    names = sorted(p.name for p in run.output_dir.iterdir())
    assert names == ["comment.md", "junit.xml", "report.html", "results.json"]
    assert run.outputs["result"] == "pass"
    assert "every affected Eval passes" in github.comments_on(7)[0]["body"]
    assert [check["conclusion"] for check in github.check_runs] == ["success"]
    (warning,) = [line for line in run.stdout.splitlines() if "result cache (" in line]
    assert warning.startswith("::warning"), warning
    assert "(.evalward/cache/results/results.sqlite)" in warning and "(EIO)" in warning, warning
    assert "nothing was stored for a rerun" in warning and "Free space" in warning, warning
    kept = resultdb.stored(cache)
    assert kept and all(key.startswith("unread-") for key in kept), "nothing half-written"


def test_a_reply_the_response_cache_cannot_keep_costs_the_cache_not_the_gate(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, env: dict[str, str]
) -> None:
    """The base's evalward.yaml keeps model replies, and the runner refuses every write into
    that folder (here a file stands where each entry's folder goes, as a full or read-only disk
    refuses): the replies were paid for, so the runs use them and the gate decides, comments
    and checks with its own exit code, 0; one `::warning` names the response cache, why and
    what to do, never "the machine refused a write" as what stopped the job."""
    repo.commit(
        "keep model replies",
        {
            "evalward.yaml": "cache: { mode: read-write, dir: .evalward/responses }\n",
            ".gitignore": ".evalward/\n",
        },
    )
    base, head = make_pr(repo, github)
    payload = pull_request_event(github.repository, 7, base, head)
    launch = prepare(repo.path, github, payload, env=env, inputs={"check-run": "true"})
    script_model(model, head_greets_well=True)
    responses = repo.path / ".evalward" / "responses"
    responses.mkdir(parents=True)
    for prefix in range(256):  # every entry's folder is a file: no reply can be kept
        (responses / f"{prefix:02x}").write_text("not a folder\n")

    run = _run_limited(repo, launch)

    assert run.returncode == 0, run.stdout + run.stderr
    _no_bug(run)
    assert "refused a write" not in run.stdout + run.summary, run.stdout
    assert run.outputs["result"] == "pass"
    assert "every affected Eval passes" in github.comments_on(7)[0]["body"]
    assert [check["conclusion"] for check in github.check_runs] == ["success"]
    assert model.calls, "the replies were asked for, and used"
    (warning,) = [line for line in run.stdout.splitlines() if "response cache (" in line]
    assert warning.startswith("::warning"), warning
    assert ".evalward/responses" in warning and "did not keep every reply" in warning, warning
    assert "a rerun asks the model again" in warning and "Free space" in warning, warning
    assert all(p.is_file() for p in responses.iterdir()), "nothing kept, nothing half-written"
