"""Attribution in the comment's words: each proven cause as `path:line` links to the head's
lines, else why none was proven; and hostile text from the diff or the definitions (a path, a
fixture's name) comes out inert, as everything else in the comment."""

from __future__ import annotations

import dataclasses
import re

import pytest

from evalward.attribution.found import Finding, Regression, RunAttribution
from evalward.attribution.hunks import Hunk
from evalward.attribution.search import Attributed, FixtureScore, NotAttributable, Trial, Tried
from evalward.report.attribution_text import attribution_markdown, finding_text, hunk_link
from evalward.report.html import Page, html_chunks
from evalward.rundata.spending import Spent

pytestmark = pytest.mark.unit

HUNK = Hunk("prompts/clerk.md", 2, "text", 5, 7, (), ("NEVER REFUND\n",), at=4)


def _found(hunk: Hunk, fixtures: tuple[str, ...] = ("refund-a", "refund-b")) -> Finding:
    fixed = Trial(False, tuple(FixtureScore(f, 8, 8) for f in fixtures))
    broken = Trial(True, tuple(FixtureScore(f, 0, 8) for f in fixtures))
    removed = Tried("reverted", frozenset({hunk}), fixed)
    reproduced = Tried("applied", frozenset({hunk}), broken)
    proven = Attributed(frozenset({hunk}), removed, reproduced, (removed, reproduced))
    return Finding(Regression("clerk-eval", "clerk", fixtures), proven)


def test_a_proven_cause_is_a_link_to_its_lines_with_the_runs_that_prove_it() -> None:
    text = attribution_markdown(
        RunAttribution("on-block", (_found(HUNK),), Spent(12), 20),
        server="https://github.com",
        repository="acme/agents",
        head_sha="abc123",
    )

    assert "### 🧭 Where it regressed" in text
    link = "(https://github.com/acme/agents/blob/abc123/prompts/clerk.md" + "#L5-L7)"
    assert "[`prompts/clerk.md:5-7`]" + link in text
    assert "refund-a 8/8, refund-b 8/8" in text and "refund-a 0/8, refund-b 0/8" in text
    assert "12 of its 20 model calls" in text and "does not change it" in text


def test_a_proof_the_gate_s_own_runs_give_says_it_is_the_head_on_every_surface() -> None:
    """A one-hunk change: the base with only it is the head, whose runs the gate made. The
    comment, the review and report.html say so beside those scores, and of no variant's."""
    found = _found(HUNK)
    proven = found.attributed
    assert proven is not None
    head = dataclasses.replace(proven.reproduced.trial, gate_runs=True)
    reproduced = dataclasses.replace(proven.reproduced, trial=head)
    own = Finding(found.regression, dataclasses.replace(proven, reproduced=reproduced))
    said = "refund-a 0/8, refund-b 0/8 — this head itself, as the gate ran it"

    run = RunAttribution("on-block", (own,), Spent(0), 20)
    text = attribution_markdown(run)
    assert f"the base with only it: {said}." in text, text
    assert "refund-a 8/8, refund-b 8/8, as on the base" in text, text
    assert f"the base with only this change fails them ({said})." in finding_text(own)
    page = "".join(html_chunks(Page("fail", "r", [], [], set(), attribution=run)))
    assert said in page, page
    variant = attribution_markdown(RunAttribution("on-block", (found,), Spent(4), 20))
    assert "this head itself" not in variant and "refund-a 0/8, refund-b 0/8." in variant


def test_without_a_repository_the_lines_are_plain_code_and_a_fork_says_why() -> None:
    text = attribution_markdown(
        RunAttribution("always", (_found(HUNK),), Spent(1), 2), on_the_lines="No review: a fork."
    )

    assert "`prompts/clerk.md:5-7`" in text and "](" not in text
    assert text.rstrip().endswith("No review: a fork.")


def test_a_rename_proven_the_cause_says_the_name_it_had() -> None:
    rename = Hunk("prompts/desk.md", 1, "rename", 0, 0, renamed_from="prompts/clerk.md")

    found = RunAttribution("always", (_found(rename),), Spent(1), 2)
    text = attribution_markdown(
        found,
        server="https://github.com",
        repository="acme/agents",
        head_sha="abc123",
    )

    assert "`prompts/desk.md` (renamed from `prompts/clerk.md`) — taken back" in text
    page = Page("fail", "r", [], [], set(), attribution=found)
    shown = "".join(html_chunks(page))
    assert "<code>prompts/desk.md</code> (renamed from <code>prompts/clerk.md</code>)" in shown


def test_not_attributable_says_why_and_how_many_variants_ran() -> None:
    tried = Tried("reverted", frozenset({HUNK}), Trial(True))
    unproven = NotAttributable("it is not in these hunks", (tried,))
    finding = Finding(Regression("clerk-eval", "clerk", ("refund-a",)), unproven)

    text = attribution_markdown(RunAttribution("always", (finding,), Spent(2), 5))

    assert "not attributable — it is not in these hunks (1 variant run)" in text


def test_hostile_names_come_out_inert() -> None:
    hostile = Hunk("p/@admin <img src=x onerror=alert(1)>.md", 1, "text", 3, 3)
    finding = _found(hostile, fixtures=("@everyone", "<script>x</script>"))

    text = attribution_markdown(
        RunAttribution("always", (finding,), Spent(1), 2),
        server="https://github.com",
        repository="acme/agents",
        head_sha="abc",
    )

    outside_code = re.sub(r"`[^`]*`", "", text)  # GitHub renders a code span as it is
    for live in ("<img", "<script", "@everyone", "@admin"):
        assert live not in outside_code, live
    assert "%3Cimg%20src%3Dx" in text  # the link's path is quoted


def test_a_hunk_the_head_has_no_line_for_is_named_without_a_link() -> None:
    gone = Hunk("prompts/old.md", 1, "file", 0, 0)

    assert hunk_link(gone, server="https://github.com", repository="a/b", head_sha="c") == (
        "`prompts/old.md`"
    )


def test_the_review_comment_says_what_taking_it_back_showed() -> None:
    text = finding_text(_found(HUNK))

    assert text.startswith("This change makes clerk-eval regress: refund-a, refund-b pass")
    assert "Taken back, they pass (refund-a 8/8, refund-b 8/8)" in text


def test_a_cause_proven_on_one_fixture_says_its_variants_ran_it_alone() -> None:
    """Every variant running both regressed fixtures would not fit the budget, so they ran
    refund-a alone: the line, the review comment and report.html say so, naming the fixture
    as every other fixture's name is shown (escaped)."""
    witness = "<b>refund-a</b>"
    shown = _found(HUNK, fixtures=(witness,))
    found = Finding(Regression("clerk-eval", "clerk", (witness, "refund-b")), shown.attribution)
    alone = Finding(found.regression, found.attribution, witnesses=(witness,))
    both = RunAttribution("always", (found,), Spent(1), 2)
    one = RunAttribution("always", (alone,), Spent(1), 2)

    assert "alone" not in attribution_markdown(both) and "alone" not in finding_text(found)
    text = attribution_markdown(one)
    said = "Its variants ran &lt;b&gt;refund-a&lt;/b&gt; alone, the regressed fixture cheapest"
    assert said in text and "run (both on each variant would not fit attribution's budget)" in text
    assert "budget): refund-b may regress for another cause." in text
    review = finding_text(alone)
    assert "Taken back, it passes (<b>refund-a</b> 8/8)" in review  # escaped where posted
    assert "fails it (<b>refund-a</b> 0/8). Its variants ran <b>refund-a</b> alone" in review
    page = "".join(html_chunks(Page("fail", "r", [], [], set(), attribution=one)))
    assert "Its variants ran &lt;b&gt;refund-a&lt;/b&gt; alone" in page
    unproven = NotAttributable("it is not in these hunks", ())
    text = attribution_markdown(
        RunAttribution("always", (Finding(found.regression, unproven, (witness,)),), Spent(0), 2)
    )
    assert "(0 variants run). Its variants ran" in text


def test_a_long_reason_is_said_whole_with_where_to_raise_the_budget() -> None:
    reason = (
        "attribution stopped at its budget of 25 model calls: a variant's runs need about 9 "
        "(what the gate's runs of its fixtures made), more than the 4 left, its variants "
        "counted for 21 though they made 15 (each counts for at least what a run of each of "
        "its fixtures made on the base) (0.5 × the run's own: attribution.budget in the base "
        "branch's evalward.yaml raises it)"
    )
    finding = Finding(Regression("clerk-eval", "clerk", ("refund-a",)), NotAttributable(reason, ()))

    text = attribution_markdown(RunAttribution("always", (finding,), Spent(15), 25))

    assert "evalward.yaml raises it) (0 variants run)." in text, text


def test_a_fixture_found_worse_in_pairs_says_so_with_its_pairs_on_every_surface() -> None:
    """The comment, the review and report.html name the fixture worse by the pairwise judge
    and give each variant's pairs the base won, the name escaped where shown."""
    fixture = "<b>question-1</b>"
    fixed = Trial(False, (FixtureScore(fixture, 1, 1, pairs=True),))
    worse = Trial(True, (FixtureScore(fixture, 0, 8, pairs=True),))
    removed = Tried("reverted", frozenset({HUNK}), fixed)
    reproduced = Tried("applied", frozenset({HUNK}), worse)
    proven = Attributed(frozenset({HUNK}), removed, reproduced, (reproduced, removed))
    regression = Regression("helper-eval", "helper", (fixture,), in_pairs=True)
    found = RunAttribution("on-block", (Finding(regression, proven),), Spent(26), 33)

    text = attribution_markdown(found)
    assert "(`<b>question-1</b>`, worse by the pairwise judge): `prompts/clerk.md:5-7`" in text
    assert (
        "taken back, &lt;b&gt;question-1&lt;/b&gt;: base preferred in 0/1 pairs, no worse" in text
    )
    assert (
        "the base with only it: &lt;b&gt;question-1&lt;/b&gt;: base preferred in 8/8 pairs" in text
    )
    review = finding_text(Finding(regression, proven))
    assert review.startswith("This change makes helper-eval worse: its pairwise judge prefers")
    assert "Taken back, the head is no worse (<b>question-1</b>: base preferred in 0/1" in review
    page = "".join(html_chunks(Page("fail", "r", [], [], set(), attribution=found)))
    assert "(&lt;b&gt;question-1&lt;/b&gt;, worse by the pairwise judge)" in page
    assert "base preferred in 0/1 pairs, no worse than the base" in page


def test_the_hunks_a_proof_held_beside_the_cause_are_named_on_every_surface() -> None:
    """A prompt moved into the agent's YAML: the `system:` field is the cause, taken back
    with the deleted file (hostile in name) and applied with the base's `systemFile:` line
    gone. The comment, the review and report.html name them and why they are there."""
    system = Hunk("agents/clerk.yaml", 2, "field", 6, 15, field=("spec", "system"))
    line = Hunk("agents/clerk.yaml", 1, "field", 6, 6, field=("spec", "systemFile"))
    gone = Hunk("prompts/<b>clerk</b>.md", 1, "file", 0, 0)
    fixed = Trial(False, (FixtureScore("refund-a", 1, 1),))
    broken = Trial(True, (FixtureScore("refund-a", 0, 3),))
    removed = Tried("reverted", frozenset({system, gone}), fixed)
    reproduced = Tried("applied", frozenset({system, line}), broken)
    proven = Attributed(frozenset({system}), removed, reproduced, (removed, reproduced))
    run = RunAttribution(
        "always", (Finding(Regression("ev", "clerk", ("refund-a",)), proven),), Spent(2), 5
    )
    why = "which alone changes nothing; the variant loads only with it"

    text = attribution_markdown(run)
    assert (
        f"`agents/clerk.yaml:6-15` (`spec.system`) — taken back with `prompts/<b>clerk</b>.md` "
        f"({why}), refund-a 1/1, as on the base; the base with only it and "
        f"`agents/clerk.yaml:6 spec.systemFile` ({why}): refund-a 0/3." in text
    ), text
    review = finding_text(run.found[0])
    assert f"Taken back with prompts/<b>clerk</b>.md ({why}), they pass (refund-a 1/1)" in review
    assert (
        f"the base with only this change and agents/clerk.yaml:6 spec.systemFile ({why})" in review
    )
    page = "".join(html_chunks(Page("fail", "r", [], [], set(), attribution=run)))
    assert "<code>prompts/&lt;b&gt;clerk&lt;/b&gt;.md</code>" in page, page
    assert "<b>clerk" not in page
    assert f"<code>agents/clerk.yaml:6 spec.systemFile</code> ({why})" in page
