"""Attribution in words: which hunk of the change made which fixtures regress, as the comment
shows it (each hunk as a `path:line` link to the head's file) and as a review comment on its
lines says it. Every text from the diff or the run is escaped as the comment's is."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote

from evalward.attribution.found import Finding, RunAttribution
from evalward.attribution.hunks import Hunk, in_diff_order
from evalward.attribution.search import Attributed, NotAttributable, Tried
from evalward.errors import printable
from evalward.rundata.pairwise_record import PAIR_POOLED_TEST
from evalward.rundata.sequential_record import POOLED_TEST
from evalward.text.counts import counted
from evalward.text.escaping import code_span, inline

HEAD_ITSELF = "this head itself, as the gate ran it"
"""Beside the scores of a trial whose variant is the head (the base with every hunk): the
gate's own runs say them, and no variant ran, which a reader counting runs would not guess."""


def scores_text(tried: Tried) -> str:
    """`refund-a 8/8, refund-b 8/8`: each fixture's passing runs on one variant; judged in
    pairs, `question-1: base preferred in 8/8 pairs`; said to be the head's own runs where
    they are (`HEAD_ITSELF`)."""
    scores = ", ".join(
        f"{s.fixture}: base preferred in {s.runs - s.passed}/{s.runs} pairs"
        if s.pairs
        else f"{s.fixture} {s.passed}/{s.runs}"
        for s in tried.trial.scores
    )
    return f"{scores} — {HEAD_ITSELF}" if tried.trial.gate_runs else scores


def needed_text(places: tuple[str, ...]) -> str:
    """Why a proof's variant holds `places` (hunks beside the cause), said after them; ""
    where there are none."""
    if not places:
        return ""
    one = len(places) == 1
    return (
        f"which alone {'changes' if one else 'change'} nothing; the variant loads only with "
        f"{'it' if one else 'them'}"
    )


def beside(attributed: Attributed, proof: Tried) -> tuple[str, ...]:
    """The hunks `proof`'s variant holds beside the cause, in the diff's order: each as
    `path:line`, with its field where it is one (`agents/clerk.yaml:8 spec.systemFile`)."""
    return tuple(
        f"{hunk_place(hunk)} {printable(hunk.field_name)}" if hunk.field_name else hunk_place(hunk)
        for hunk in in_diff_order(attributed.beside(proof))
    )


MODE = "its mode: whether it may be run"
"""What a hunk of a file's mode is, beside the file's path (GitHub's diff shows it as the
file's mode changed, on no line)."""
IN_PAIRS = "worse by the pairwise judge"
"""What a regression found in pairs is, beside its fixtures' names (as the gate says it)."""
POOLED = f"pass rate dropped over them together ({POOLED_TEST})"
"""What a pooled drop is, beside the names of the fixtures that drove it."""
POOLED_PAIRS = f"worse by the pairwise judge over them together ({PAIR_POOLED_TEST})"
"""What a drop the pooled preference test found is, beside its fixtures' names."""


def finding_text(found: Finding, evidence: Mapping[tuple[str, str], str] = {}) -> str:
    """What a review comment on the culprit hunk's lines says, in plain words (escaped where shown),
    with each regressed fixture's `evidence` as the comment gives it (the step where the head
    departs from the base, the assertion, the statistics), where it is at hand."""
    attributed = found.attributed
    assert attributed is not None, "only a proven cause is said on its lines"
    regression = found.regression
    fixtures = ", ".join(regression.fixtures)
    together = "" if len(attributed.culprit) == 1 else " (with the other hunks named beside it)"
    them, they = ("it", "it passes") if found.witnesses else ("them", "they pass")
    removed, reproduced = scores_text(attributed.removed), scores_text(attributed.reproduced)
    back_with, base_with = (
        f" {word} {', '.join(places)} ({needed_text(places)})" if places else ""
        for word, places in (
            ("with", beside(attributed, attributed.removed)),
            ("and", beside(attributed, attributed.reproduced)),
        )
    )
    taken, only = f"Taken back{back_with}", f"the base with only this change{base_with}"
    if regression.in_pairs and regression.pooled:
        said = (
            f"This change{together} makes {regression.eval} worse: its pairwise judge prefers "
            f"the base's runs of {fixtures} to this head's taken together ({PAIR_POOLED_TEST}), "
            f"though they pass and none alone is worse. {taken}, the head is no worse "
            f"({removed}); {only} is worse ({reproduced})."
        )
    elif regression.in_pairs:
        said = (
            f"This change{together} makes {regression.eval} worse: its pairwise judge prefers "
            f"the base's runs of {fixtures} to this head's, though they pass. {taken}, "
            f"the head is no worse ({removed}); {only} is worse ({reproduced})."
        )
    elif regression.pooled:
        said = (
            f"This change{together} makes {regression.eval} regress: its pass rate dropped "
            f"over {fixtures} together ({POOLED_TEST}), in none of them alone. {taken}, "
            f"that test passes ({removed}); {only} drops it again ({reproduced})."
        )
    else:
        said = (
            f"This change{together} makes {regression.eval} regress: {fixtures} pass on the "
            f"base and not on this head. {taken}, {they} ({removed}); {only} fails {them} "
            f"({reproduced})."
        )
    if found.witnesses:
        said += f" {alone_text(found.witnesses, regression.fixtures)}"
    lines = [
        f"{fixture}: {evidence[(regression.eval, fixture)]}"
        for fixture in regression.fixtures
        if evidence.get((regression.eval, fixture))
    ]
    return "\n".join([said, *lines])


def alone_text(witnesses: tuple[str, ...], fixtures: tuple[str, ...]) -> str:
    """Why the variants ran only `witnesses` of the regressed `fixtures` ("" where all), and
    that the others may regress for another cause: a pull request that breaks one fixture cheaply
    with one hunk and another with a second must not read as traced whole."""
    if not witnesses:
        return ""
    every = "both" if len(fixtures) == 2 else f"all {len(fixtures)}"
    others = [f for f in fixtures if f not in witnesses]
    return (
        f"Its variants ran {', '.join(witnesses)} alone, the regressed fixture cheapest to "
        f"run ({every} on each variant would not fit attribution's budget): "
        f"{', '.join(others)} may regress for another cause."
    )


def hunk_place(hunk: Hunk) -> str:
    """`path:line` or `path:first-last` (the path alone where the head has no line), the
    path as `printable` shows a name (it is the pull request's bytes)."""
    lines = str(hunk.first) if hunk.first == hunk.last else f"{hunk.first}-{hunk.last}"
    path = printable(hunk.path)
    return f"{path}:{lines}" if hunk.first else path


def hunk_link(hunk: Hunk, *, server: str, repository: str, head_sha: str) -> str:
    """The hunk as `path:line` (a link to those lines of the head's file where the
    repository is known), escaped; the link's path is the file name's bytes, quoted as a
    URL quotes them."""
    text = code_span(hunk_place(hunk), 120)
    if not (server and repository and head_sha) or not hunk.first:
        return text
    anchor = f"#L{hunk.first}" + (f"-L{hunk.last}" if hunk.last != hunk.first else "")
    path = quote(os.fsencode(hunk.path))
    url = f"{server}/{quote(repository)}/blob/{quote(head_sha)}/{path}{anchor}"
    return f"[{text}]({url})"


@dataclass(frozen=True)
class RegressedAt:
    """One line of "Where it regressed", as the comment and report.html say it: a proven
    cause's hunk (`hunk`) with the runs that prove it, or why none was proven (`hunk` None),
    in plain text (each surface escapes it its own way)."""

    eval: str
    fixtures: tuple[str, ...]
    hunk: Hunk | None = None
    removed: str = ""
    reproduced: str = ""
    reason: str = ""
    tried: int = 0
    witnesses: tuple[str, ...] = ()
    """The fixtures the variants ran, where not all of `fixtures` (`Finding.witnesses`)."""
    in_pairs: bool = False
    """Its fixtures pass, and the pairwise judge finds them worse (`Regression.in_pairs`)."""
    pooled: bool = False
    """Its pass rate dropped over its fixtures together (`Regression.pooled`)."""
    removed_with: tuple[str, ...] = ()
    """The places of the hunks taken back beside the cause, for its variant to load
    (`Attributed.beside`)."""
    reproduced_with: tuple[str, ...] = ()
    """The places of the hunks applied to the base beside the cause, likewise."""

    @property
    def removed_needs(self) -> str:
        """Why `removed_with` were taken back too ("" where none were)."""
        return needed_text(self.removed_with)

    @property
    def reproduced_needs(self) -> str:
        """Why `reproduced_with` were applied too ("" where none were)."""
        return needed_text(self.reproduced_with)

    @property
    def judged(self) -> str:
        """How the fixtures regressed, where not by failing: beside their names."""
        if self.in_pairs:
            return POOLED_PAIRS if self.pooled else IN_PAIRS
        return POOLED if self.pooled else ""

    @property
    def as_on_base(self) -> str:
        """What the head without the cause is: as the base, or no worse than it."""
        return "no worse than the base" if self.in_pairs else "as on the base"

    @property
    def alone(self) -> str:
        """Why the variants ran only some fixtures, a sentence ("" where they ran all)."""
        return alone_text(self.witnesses, self.fixtures)

    @property
    def where(self) -> str:
        return hunk_place(self.hunk) if self.hunk is not None else ""

    @property
    def field(self) -> str:
        return (self.hunk.field_name or "") if self.hunk is not None else ""

    @property
    def mode(self) -> str:
        """What a hunk of a file's mode is, said beside its path ("" for any other hunk): a
        file made executable or not has no line to point at, and its path alone reads as
        the file taken back whole, text and all."""
        hunk = self.hunk
        return MODE if hunk is not None and hunk.kind == "mode" else ""

    @property
    def renamed_from(self) -> str:
        """A rename's name in the base, as `printable` shows a name; "" for any other hunk."""
        hunk = self.hunk
        return printable(hunk.renamed_from) if hunk is not None and hunk.kind == "rename" else ""

    @property
    def tried_text(self) -> str:
        """ "1 variant run", "4 variants run"."""
        return f"{counted(self.tried, 'variant')} run"


def said_lines(found: RunAttribution | None) -> list[RegressedAt]:
    """Each regression's line or lines: one per hunk of a proven cause, in the diff's
    order, else one saying why none was proven and how many variants ran."""
    said = []
    for each in found.found if found is not None else ():
        regression, attributed, alone = each.regression, each.attribution, each.witnesses
        if isinstance(attributed, NotAttributable):
            said.append(
                RegressedAt(
                    regression.eval,
                    regression.fixtures,
                    reason=attributed.reason,
                    tried=sum(1 for a in attributed.attempts if not a.trial.gate_runs),
                    witnesses=alone,
                    in_pairs=regression.in_pairs,
                    pooled=regression.pooled,
                )
            )
            continue
        removed, reproduced = scores_text(attributed.removed), scores_text(attributed.reproduced)
        said += [
            RegressedAt(
                regression.eval,
                regression.fixtures,
                hunk,
                removed,
                reproduced,
                witnesses=alone,
                in_pairs=regression.in_pairs,
                pooled=regression.pooled,
                removed_with=beside(attributed, attributed.removed),
                reproduced_with=beside(attributed, attributed.reproduced),
            )
            for hunk in in_diff_order(attributed.culprit)
        ]
    return said


def unfinished_line(found: RunAttribution) -> str:
    """ "attribution did not finish: <why>; the decision stands without it", in plain text
    (each surface escapes it its own way; every one redacts it)."""
    return f"attribution did not finish: {found.unfinished}; the decision stands without it"


def spent_text(found: RunAttribution) -> str:
    """ "8 of its 10 model calls": what attribution spent of its budget."""
    return f"{found.spent_calls} of its {found.budget_calls} model calls"


def attribution_markdown(
    found: RunAttribution | None,
    *,
    server: str = "",
    repository: str = "",
    head_sha: str = "",
    on_the_lines: str = "",
) -> str:
    """The comment's section on where the change regressed ("" where attribution did not
    run): each proven cause as links to its lines, else why none was proven; what it spent.
    `on_the_lines` says where else the same lines are (the review), or why not. Where it
    stopped on an error, a line says so and why (`unfinished_line`), after what it found."""
    if found is None or not (found.found or found.untraced or found.unfinished):
        return ""
    out = ["### 🧭 Where it regressed", ""]
    out += [
        f"- **{inline(name)}**: not traced — {inline(why, 600)}, and in no one fixture alone, "
        "so no variant could run it."
        for name, why in found.untraced
    ]
    unfinished = [f"- {inline(unfinished_line(found), 400)}"] if found.unfinished else []
    if not found.found:
        return "\n".join([*out, *unfinished, ""])
    for line in said_lines(found):
        name = f"**{inline(line.eval)}**"
        fixtures = ", ".join(code_span(f) for f in line.fixtures)
        fixtures += f", {line.judged}" if line.judged else ""
        alone = f" {inline(line.alone)}" if line.alone else ""
        if line.hunk is None:
            out.append(
                f"- {name} ({fixtures}): not attributable — "
                f"{inline(line.reason, 600)} ({line.tried_text}).{alone}"
            )
            continue
        where = hunk_link(line.hunk, server=server, repository=repository, head_sha=head_sha)
        field = f" ({code_span(line.field)})" if line.field else ""
        if line.renamed_from:
            field = f" (renamed from {code_span(line.renamed_from, 120)})"
        if line.mode:
            field = f" ({line.mode})"
        taken_back, applied = (
            f" {word} {', '.join(code_span(p, 120) for p in places)} ({needs})" if places else ""
            for word, places, needs in (
                ("with", line.removed_with, line.removed_needs),
                ("and", line.reproduced_with, line.reproduced_needs),
            )
        )
        out.append(
            f"- {name} ({fixtures}): {where}{field} — taken back{taken_back}, "
            f"{inline(line.removed)}, {line.as_on_base}; the base with "
            f"only it{applied}: {inline(line.reproduced)}.{alone}"
        )
    out += [
        *unfinished,
        "",
        f"Attribution ran after the decision and does not change it; it spent "
        f"{spent_text(found)}, apart from the gate's own."
        + (f" {on_the_lines}" if on_the_lines else ""),
        "",
    ]
    return "\n".join(out)
