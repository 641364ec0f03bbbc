"""What an agent changed in its playground, as the report shows it (`state_changes`): the
lines of a unified diff of each changed object, found in bounded time whatever the agent
wrote (the state is the pull request's program's output)."""

from __future__ import annotations

import difflib
import random
import re
from typing import Any

import pytest

from evalward.rundata.playground_state import canonical, state_changes

pytestmark = pytest.mark.unit


def _unified(before: dict[str, Any], after: dict[str, Any]) -> list[list[str]]:
    """The lines difflib's unified diff gives for one changed object, as state_changes says
    them: `…` between its hunks, no headers."""
    lines = [["@", "@@ (the whole state)"]]
    old, new = canonical(before).splitlines()[1:-1], canonical(after).splitlines()[1:-1]
    for line in difflib.unified_diff(old, new, lineterm="", n=2):
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            lines += [["@", "…"]] if len(lines) > 1 else []
            continue
        lines.append([line[:1], line[1:]])
    return lines


def test_a_changed_list_is_said_as_a_unified_diff_says_it() -> None:
    before = {"orders": [f"A-{n}" for n in range(60)], "status": "open"}
    after = {"orders": [f"A-{n}" for n in range(60) if n not in (7, 40)], "status": "closed"}
    assert state_changes(before, after) == _unified(before, after)


def test_a_state_of_many_repeated_values_is_compared_in_bounded_time() -> None:
    """An agent that rewrites a list of 50,000 values drawn from a hundred, each repeated too
    seldom for difflib to set it aside as junk: matched line by line, every value walks its
    every repeat (15 s here; the 4 MiB a state's diff may take, most of an hour, after the
    run). What lies between the lines both sides keep at its ends is one block, removed then
    added."""
    draw = random.Random(7)
    before = {"log": [f"v{draw.randrange(100)}" for _ in range(50_000)]}
    after = {"log": [f"v{draw.randrange(100)}" for _ in range(50_000)]}
    lines = state_changes(before, after)
    ops = "".join(op for op, _ in lines)
    assert re.fullmatch(r"@ +-+\++ *", ops), ops[:20]
    assert ops.count("-") > 49_900 and ops.count("+") > 49_900
