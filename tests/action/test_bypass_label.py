"""`action.bypass` on its own: the bypass label's facts read from the fake GitHub (who applied
it, their permission, which head it covers), weighed only where the gate cannot pass alone,
and the audit trail of a bypass used or refused."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from evalward.action.bypass import audit, check_bypass, needs_bypass
from evalward.action.context import WorkflowContext
from evalward.action.github import GitHubClient, PullInfo
from evalward.action.job import Console, Site
from evalward.action.settings import Settings
from evalward.action.workflow import Outputs
from evalward.errors import ConfigError
from evalward.flows.session import Outcome, RunVerdict
from evalward.plan.changes import ChangeSet
from evalward.plan.plan import Plan
from evalward.plan.progress import RunProgress
from evalward.record.evaluation import Evaluation
from evalward.security import Redactor
from evalward.verdict.gate import Bypass, BypassRecord, GateDecision, GateResult
from fakes.github_api import FakeGitHub, FakePull
from support.actionrun import parse_github_output

pytestmark = pytest.mark.integration

LABEL = "force-eval-bypass"
HEAD, OLD, BASE = "a" * 40, "c" * 40, "b" * 40
AT = "2026-11-21T09:00:00Z"


def site(
    tmp_path: Path,
    github: FakeGitHub,
    action: str = "",
    event_label: str = "",
    head_sha: str = "",
    *,
    sender: str = "",
    updated_at: str = AT,
) -> Site:
    """A pull_request job's site; a `labeled` event names its label, the head it saw, who
    applied the label and when (`labelled` applies it at AT)."""
    context = WorkflowContext(
        event_name="pull_request",
        repository=github.repository,
        workspace=tmp_path,
        api_url=github.url,
        server_url="https://github.example",
        run_id="42",
        pr_number=7,
        head_sha=head_sha,
        action=action,
        event_label=event_label,
        event_sender=sender,
        event_updated_at=updated_at,
        event_base_ref="main",
    )
    return Site({}, context, Settings())


def labelled(github: FakeGitHub, actor: str, permission: str) -> tuple[GitHubClient, PullInfo]:
    github.add_pull(FakePull(number=7, head_sha=HEAD, base_sha=BASE, author="octocat"))
    github.add_label(7, LABEL, actor, at=AT)
    github.permissions[actor] = permission
    client = GitHubClient(github.url, github.token, github.repository)
    return client, client.pull_request(7)


def test_a_label_applied_on_this_head_by_a_writer_bypasses(
    tmp_path: Path, github: FakeGitHub
) -> None:
    client, pull = labelled(github, "maintainer", "write")
    here = site(tmp_path, github, "labeled", LABEL, HEAD, sender="maintainer")

    weighed = check_bypass(here, client, pull, HEAD, None, needed=True)

    assert isinstance(weighed.bypass, Bypass) and weighed.refusal is None
    assert (weighed.bypass.applied_by, weighed.bypass.permission) == ("maintainer", "write")
    assert not weighed.bypass.by_author
    assert weighed.record == BypassRecord(LABEL, "2026-11-21T09:00:00+00:00", HEAD, "main")


def test_the_author_s_own_label_bypasses_and_says_so(tmp_path: Path, github: FakeGitHub) -> None:
    client, pull = labelled(github, "octocat", "admin")
    here = site(tmp_path, github, "labeled", LABEL, HEAD, sender="octocat")

    weighed = check_bypass(here, client, pull, HEAD, None, needed=True)

    assert weighed.bypass is not None and weighed.bypass.by_author


def test_a_reader_s_label_is_refused(tmp_path: Path, github: FakeGitHub) -> None:
    client, pull = labelled(github, "drive-by", "read")
    here = site(tmp_path, github, "labeled", LABEL, HEAD, sender="drive-by")

    weighed = check_bypass(here, client, pull, HEAD, None, needed=True)

    assert weighed.bypass is None and weighed.refusal is not None
    assert "drive-by has read permission" in weighed.refusal.reason


@pytest.mark.parametrize(
    ("sender", "updated_at", "why"),
    [
        ("triager", AT, "it is the label triager applied, and the label that stands was applied"),
        ("maintainer", "2026-11-21T08:59:54Z", "it was made at 2026-11-21T08:59:54Z, before"),
        ("maintainer", "", "its time (none) cannot be weighed"),
    ],
    ids=["another sender", "made before the label", "no time"],
)
def test_a_labeled_payload_shows_its_head_only_as_the_event_of_the_label_that_stands(
    tmp_path: Path, github: FakeGitHub, sender: str, updated_at: str, why: str
) -> None:
    client, pull = labelled(github, "maintainer", "write")
    stale = site(tmp_path, github, "labeled", LABEL, HEAD, sender=sender, updated_at=updated_at)
    # GitHub writes the payload's time and the event's apart, to the second
    close = site(
        tmp_path,
        github,
        "labeled",
        LABEL,
        HEAD,
        sender="maintainer",
        updated_at="2026-11-21T08:59:56Z",
    )

    refused = check_bypass(stale, client, pull, HEAD, None, needed=True)
    honoured = check_bypass(close, client, pull, HEAD, None, needed=True)

    assert refused.bypass is None and refused.record is None and refused.refusal is not None
    assert "an earlier head" in refused.refusal.reason and why in refused.refusal.reason
    assert honoured.bypass is not None and honoured.record is not None


def test_a_push_after_the_label_re_arms_the_gate_and_the_earlier_record_names_its_head(
    tmp_path: Path, github: FakeGitHub
) -> None:
    client, pull = labelled(github, "maintainer", "maintain")
    previous = BypassRecord(LABEL, "2026-11-21T09:00:00+00:00", OLD, "main")

    weighed = check_bypass(site(tmp_path, github), client, pull, HEAD, previous, needed=True)

    assert weighed.refusal is not None and f"commit {OLD[:12]}" in weighed.refusal.reason
    assert weighed.record == previous


def test_the_label_is_not_weighed_where_the_gate_passes_alone_or_is_absent(
    tmp_path: Path, github: FakeGitHub
) -> None:
    client, pull = labelled(github, "maintainer", "write")
    here = site(tmp_path, github, "labeled", LABEL, HEAD, sender="maintainer")

    kept = check_bypass(here, client, pull, HEAD, None, needed=False)
    unlabelled = PullInfo(number=7, labels=[], head_sha=HEAD, base_sha=BASE)
    requests = len(github.requests)
    absent = check_bypass(here, client, unlabelled, HEAD, None, needed=True)

    assert kept.bypass is None and kept.refusal is None and kept.record is not None
    assert absent.bypass is None and absent.refusal is None and absent.record is None
    assert len(github.requests) == requests  # nothing asked of GitHub without the label


def evaluation(not_run: dict[str, str] | None = None) -> Evaluation:
    return Evaluation(ChangeSet(), Plan(not_run=not_run or {}), [], [], [])


def test_a_bypass_is_needed_when_stopped_or_an_eval_could_not_run() -> None:
    assert not needs_bypass(Outcome(evaluation(), RunProgress()))
    stopped = Outcome(evaluation(), RunProgress(), failure=ConfigError("a wrong input"))
    assert needs_bypass(stopped)
    not_run = evaluation(not_run={"support": "its agent is gone"})
    assert needs_bypass(Outcome(not_run, RunProgress()))


def test_a_bypass_used_is_audited_in_the_log_the_outputs_and_audit_jsonl(
    tmp_path: Path, github: FakeGitHub
) -> None:
    out, outputs = io.StringIO(), tmp_path / "github_output"
    console = Console(out, Redactor([]), Outputs(str(outputs)))
    bypass = Bypass(LABEL, "octocat", AT, "write", "sha", HEAD, by_author=True)
    decision = GateDecision(GateResult.bypassed, failing_evals=["support"], bypass=bypass)
    verdict = RunVerdict(Outcome(evaluation(), RunProgress()), decision)
    here = site(tmp_path, github)

    audit(console, here, verdict, 7, HEAD, "main")

    record = json.loads((here.output_dir / "audit.jsonl").read_text())
    assert (record["outcome"], record["actor"], record["pull_request"], record["base_ref"]) == (
        "honoured",
        "octocat",
        7,
        "main",
    )
    log = out.getvalue()
    assert "::warning::evalward gate bypassed by octocat (the pull request's own author)" in log
    assert "failing: support" in log
    assert json.loads(parse_github_output(outputs.read_text())["audit"]) == record


def test_nothing_is_audited_without_a_bypass_or_a_refusal(
    tmp_path: Path, github: FakeGitHub
) -> None:
    out = io.StringIO()
    verdict = RunVerdict(
        Outcome(evaluation(), RunProgress()), GateDecision(GateResult.failed, ["support"])
    )
    here = site(tmp_path, github)

    audit(Console(out, Redactor([])), here, verdict, 7, HEAD, "main")

    assert out.getvalue() == "" and not (here.output_dir / "audit.jsonl").exists()
