"""JUnit XML: one testsuite per Eval, one testcase per head fixture, with the comment's verdict.

CI dashboards read it, so a fixture's testcase says what the gate says of it: failed when it
does not pass by its Eval's rule (or its sequential test settled it broken), passed when it
does, skipped when nothing in it gates or its test did not settle. Its other runs that did not
pass are told as surefire tells reruns (`rerunFailure` beside a failure, `flakyFailure` where
it passed all the same): a noisy rep never reads as a failing test while the gate passes, and
a fixture is one test however many reps its test asked for. Held-out fixtures show their
result only, no message or output.

It is written one testsuite at a time, as ElementTree would write the whole document indented:
the whole tree held about 2 KB per testcase at its peak (bench/p5_report.py: 14 MB of peak
RSS).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass

from evalward.report.story import shown_run
from evalward.rundata.results import EvalResult, FixtureResult, Status
from evalward.text.cuts import cap_chars
from evalward.text.escaping import reveal_controls

INDENT = "  "
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
"""What XML 1.0 holds no character for: a document with one is not well-formed, and a
dashboard refuses all of it."""


def _xml(text: str) -> str:
    """`text` with each control (`reveal_controls`: a bidirectional override would show a
    dashboard's reader text in another order) and each character XML 1.0 cannot hold named
    (`<U+001B>`), as the comment does."""
    return _NOT_XML.sub(lambda m: f"<U+{ord(m[0]):04X}>", reveal_controls(text))


def junit_chunks(evals: list[EvalResult], private: set[tuple[str, str]]) -> Iterator[str]:
    """The document in pieces: its head, then each head Eval's testsuite, then its end."""
    heads = [result for result in evals if result.side == "head"]
    cases = [_cases(result) for result in heads]
    root = ET.Element("testsuites", _attributes("evalward", [c for each in cases for c in each]))
    yield '<?xml version="1.0" encoding="UTF-8"?>\n'
    if not heads:
        yield ET.tostring(root, encoding="unicode") + "\n"
        return
    start = ET.tostring(root, encoding="unicode", short_empty_elements=False)
    yield start.removesuffix("</testsuites>") + "\n" + INDENT
    for number, (result, ours) in enumerate(zip(heads, cases, strict=True), start=1):
        suite = _testsuite(result, ours, private)
        # the indentation ElementTree gives a child of the root: its own, and its tail's
        holder = ET.Element("testsuites")
        holder.append(suite)
        ET.indent(holder, INDENT)
        suite.tail = "\n" if number == len(heads) else "\n" + INDENT
        yield ET.tostring(suite, encoding="unicode")
    yield "</testsuites>\n"


@dataclass(frozen=True)
class _Case:
    """One fixture's testcase: its head runs, the one it is shown by, and its verdict over
    them (the comment's: by the Eval's rule, or settled by its sequential test)."""

    runs: list[FixtureResult]
    shown: FixtureResult
    status: Status
    verdict: str = ""


def _cases(result: EvalResult) -> list[_Case]:
    """The Eval's fixtures in the order they first ran, each with its runs in rep order."""
    runs: dict[str, list[FixtureResult]] = {}
    for fixture in result.fixtures:
        runs.setdefault(fixture.fixture, []).append(fixture)
    outcomes = {o.name: o for o in result.fixture_results}
    cases = []
    for name, each in runs.items():
        each.sort(key=lambda f: f.rep)
        outcome = outcomes.get(name)
        shown = shown_run(each, outcome)  # with no outcome, its first run that did not pass
        if outcome is None:
            cases.append(_Case(each, shown, shown.status))
        else:
            cases.append(_Case(each, shown, outcome.result, outcome.verdict or ""))
    return cases


def _attributes(name: str, cases: list[_Case]) -> dict[str, str]:
    """A testsuite's (or the root's) name, then how many of its testcases end each way."""
    return {
        "name": name,
        "tests": str(len(cases)),
        "failures": str(sum(c.status is Status.failed for c in cases)),
        "errors": str(sum(c.status is Status.error for c in cases)),
        "skipped": str(sum(c.status is Status.skipped for c in cases)),
    }


def _testsuite(result: EvalResult, cases: list[_Case], private: set[tuple[str, str]]) -> ET.Element:
    suite = ET.Element("testsuite", _attributes(result.eval, cases))
    suite.set("time", f"{sum(f.duration_ms / 1000 for f in result.fixtures):.3f}")
    for case in cases:
        _testcase(suite, result, case, (result.eval, case.shown.fixture) in private)
    return suite


def _testcase(suite: ET.Element, result: EvalResult, case: _Case, held_out: bool) -> None:
    """The fixture's testcase: its verdict, told by the run it is shown by, and each other
    run that did not pass as surefire tells a rerun: `rerunFailure` beside a failure,
    `flakyFailure` (or `…Error`) where the fixture passes all the same."""
    shown = case.shown
    node = ET.SubElement(
        suite,
        "testcase",
        classname=f"{result.agent}.{result.eval}",
        name=shown.fixture,
        time=f"{sum(f.duration_ms for f in case.runs) / 1000:.3f}",
    )
    if shown.file:
        node.set("file", _xml(shown.file))
        node.set("line", str(shown.line))
    message = _said(shown, held_out)
    if case.status is Status.failed:
        failure = ET.SubElement(node, "failure", message=message, type="fail")
        if not held_out:
            failure.text = _xml(
                "\n".join(
                    f"{a.type}: {a.status.value} ({a.score:.2f}) {a.message}"
                    for a in shown.assertions
                )
            )
    elif case.status is Status.error:
        # `unavailable` for an outage: an error of the provider, not the agent
        ET.SubElement(node, "error", message=message, type=shown.outcome)
    elif case.status is Status.skipped:
        skipped = ET.SubElement(node, "skipped")
        # seed 003's Skip row, a run in which nothing gates, or a test that did not settle
        if shown.timed_out or shown.advisory_only:
            skipped.set("message", message)
        elif case.verdict:
            skipped.set("message", f"not settled: {case.verdict}")
    told = case.status in (Status.failed, Status.error)  # by the run it is shown by
    kind = "rerun" if told else "flaky"
    for run in case.runs:
        if (told and run is shown) or run.status not in (Status.failed, Status.error):
            continue
        which = "Failure" if run.status is Status.failed else "Error"
        said = _said(run, held_out)
        rep = f"rep {run.rep}: {said}" if said else f"rep {run.rep}"
        ET.SubElement(node, f"{kind}{which}", message=rep, type=run.outcome)


def _said(run: FixtureResult, held_out: bool) -> str:
    """The run's message, cut at 500 characters with a mark (`cap_chars`)."""
    return _xml(cap_chars("held out (visibility: private)" if held_out else run.message, 500))
