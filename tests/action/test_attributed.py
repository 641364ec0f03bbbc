"""What the action takes of attribution for the review: each proven cause's hunk on the head's
lines it spans; a cause the head has no line for (a file it removed) and an unproven regression
give no line comment."""

from __future__ import annotations

import pytest

from evalward.action.attributed import SECTION, findings
from evalward.attribution.found import Finding, Regression, RunAttribution
from evalward.attribution.hunks import Hunk
from evalward.attribution.search import Attributed, NotAttributable, Trial, Tried
from evalward.rundata.spending import Spent

pytestmark = pytest.mark.unit


def _proven(*hunks: Hunk) -> Finding:
    removed = Tried("reverted", frozenset(hunks), Trial(False))
    reproduced = Tried("applied", frozenset(hunks), Trial(True))
    cause = Attributed(frozenset(hunks), removed, reproduced, (removed, reproduced))
    return Finding(Regression("e", "a", ("f",)), cause)


def test_each_proven_hunk_on_a_line_becomes_one_finding_on_its_lines() -> None:
    two = Hunk("prompts/a.md", 2, "text", 9, 11)
    one = Hunk("prompts/a.md", 1, "text", 3, 3)
    removed = Hunk("prompts/gone.md", 1, "file", 0, 0)
    # a field changed through its anchor: its own lines are not in the diff
    aliased = Hunk("agents/a.yaml", 1, "field", 14, 14, field=("spec",), shown=(0, 0))
    # a name that is not UTF-8: GitHub's API names files in UTF-8 text, and cannot place it
    undecodable = Hunk("prompts/\udcff.md", 1, "text", 2, 2)
    unproven = Finding(Regression("e2", "a", ("g",)), NotAttributable("no", ()))
    proven = _proven(two, one, removed, aliased, undecodable)
    found = RunAttribution("always", (proven, unproven), Spent(4), 8)

    lines = findings(found)

    assert [(f.path, f.first_line, f.last_line) for f in lines] == [
        ("prompts/a.md", 3, 3),
        ("prompts/a.md", 9, 11),
    ]
    assert all("with the other hunks named beside it" in f.body for f in lines)


def test_no_attribution_gives_no_findings_and_the_comment_section_is_what_marks_earlier_ones() -> (
    None
):
    assert findings(None) == []
    assert SECTION == "Where it regressed"
