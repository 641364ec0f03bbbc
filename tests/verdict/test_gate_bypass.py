from __future__ import annotations

import json

import pytest

from evalward.verdict.gate import (
    Bypass,
    BypassRecord,
    BypassRefusal,
    GateDecision,
    GateResult,
    audit_record,
    judge_bypass,
)

pytestmark = pytest.mark.unit

HEAD = "b" * 40


def verdict(**overrides: object) -> Bypass | BypassRefusal:
    args: dict[str, object] = dict(
        label="skip",
        scope="sha",
        head_sha=HEAD,
        applied_by="alice",
        applied_at="t",
        permission="write",
        covered_sha=HEAD,
        base_ref="main",
        covered_base="main",
    )
    args.update(overrides)
    return judge_bypass(**args)  # type: ignore[arg-type]


def test_write_maintain_admin_may_bypass_their_own_head() -> None:
    for permission in ("write", "maintain", "admin"):
        assert isinstance(verdict(permission=permission), Bypass)


def test_refusals() -> None:
    for permission in ("triage", "read", "none", None):
        refusal = verdict(permission=permission)
        assert isinstance(refusal, BypassRefusal) and "write, maintain or admin" in refusal.reason
    stale = verdict(covered_sha="a" * 40)
    assert isinstance(stale, BypassRefusal) and "re-arms the gate" in stale.reason
    assert isinstance(verdict(covered_sha=None), BypassRefusal)
    assert isinstance(verdict(covered_sha=None, scope="pr"), Bypass)
    assert isinstance(verdict(applied_by=None), BypassRefusal)
    # the pull request retargeted since the label, or a record that does not name its branch
    for covered_base in ("stage", None):
        moved = verdict(covered_base=covered_base)
        assert isinstance(moved, BypassRefusal) and "now into `main`" in moved.reason, moved
    assert isinstance(verdict(covered_base="stage", scope="pr"), Bypass)


def test_record_round_trips_and_cannot_break_out_of_its_comment() -> None:
    record = BypassRecord("x --> <b>", "t", HEAD, "main")
    text = record.render()
    assert text.count("-->") == 1 and "<b>" not in text
    assert BypassRecord.parse(f"hello\n{text}\n") == record
    # an earlier record names no branch: read, the branch unknown (None), never ""
    older = '<!-- evalward-bypass-record {"label": "x", "labeled_at": "t", "sha": "%s"} -->'
    assert BypassRecord.parse(older % HEAD) == BypassRecord("x", "t", HEAD, None)
    assert BypassRecord.parse("<!-- evalward-bypass-record {not json} -->") is None
    deep = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"  # past the parser: no record, no crash
    assert BypassRecord.parse(f"<!-- evalward-bypass-record {deep} -->") is None


def test_audit_line_has_a_stable_prefix() -> None:
    refusal = verdict(permission="read")
    assert isinstance(refusal, BypassRefusal)
    decision = GateDecision(GateResult.failed, ["e"], {"e": ["f"]}, refusal=refusal)
    line = json.dumps(
        audit_record(
            decision, repository="a/b", pr_number=1, head_sha=HEAD, base_ref="main", run_url=""
        )
    )
    assert line.startswith('{"event": "eval_gate_bypass"')
    assert json.loads(line)["outcome"] == "refused"
