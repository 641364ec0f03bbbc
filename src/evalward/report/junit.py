"""JUnit XML: one testsuite per Eval, one testcase per head fixture run.

CI dashboards read it; held-out fixtures show their result only, no message or output. It is
written one testsuite at a time, as ElementTree would write the whole document indented: the
whole tree held about 2 KB per testcase at its peak (bench/p5_report.py: 14 MB of peak RSS).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator

from evalward.rundata.results import EvalResult, FixtureResult, Status

INDENT = "  "
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
"""What XML 1.0 holds no character for: a document with one is not well-formed, and a
dashboard refuses all of it."""


def _xml(text: str) -> str:
    """`text` with each character XML 1.0 cannot hold named (`<U+001B>`), as the comment does."""
    return _NOT_XML.sub(lambda m: f"<U+{ord(m[0]):04X}>", text)


def junit_chunks(evals: list[EvalResult], private: set[tuple[str, str]]) -> Iterator[str]:
    """The document in pieces: its head, then each head Eval's testsuite, then its end."""
    heads = [result for result in evals if result.side == "head"]
    root = ET.Element("testsuites", _attributes("evalward", [f for r in heads for f in r.fixtures]))
    yield '<?xml version="1.0" encoding="UTF-8"?>\n'
    if not heads:
        yield ET.tostring(root, encoding="unicode") + "\n"
        return
    start = ET.tostring(root, encoding="unicode", short_empty_elements=False)
    yield start.removesuffix("</testsuites>") + "\n" + INDENT
    for number, result in enumerate(heads, start=1):
        suite = _testsuite(result, private)
        # the indentation ElementTree gives a child of the root: its own, and its tail's
        holder = ET.Element("testsuites")
        holder.append(suite)
        ET.indent(holder, INDENT)
        suite.tail = "\n" if number == len(heads) else "\n" + INDENT
        yield ET.tostring(suite, encoding="unicode")
    yield "</testsuites>\n"


def _attributes(name: str, fixtures: list[FixtureResult]) -> dict[str, str]:
    """A testsuite's (or the root's) name, then how many of its testcases end each way."""
    return {
        "name": name,
        "tests": str(len(fixtures)),
        "failures": str(sum(f.status is Status.failed for f in fixtures)),
        "errors": str(sum(f.status is Status.error for f in fixtures)),
        "skipped": str(sum(f.status is Status.skipped for f in fixtures)),
    }


def _testsuite(result: EvalResult, private: set[tuple[str, str]]) -> ET.Element:
    suite = ET.Element("testsuite", _attributes(result.eval, result.fixtures))
    suite.set("time", f"{sum(f.duration_ms / 1000 for f in result.fixtures):.3f}")
    for fixture in result.fixtures:
        name = fixture.fixture if fixture.rep == 0 else f"{fixture.fixture} #{fixture.rep}"
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"{result.agent}.{result.eval}",
            name=name,
            time=f"{fixture.duration_ms / 1000:.3f}",
        )
        if fixture.file:
            case.set("file", _xml(fixture.file))
            case.set("line", str(fixture.line))
        held_out = (fixture.eval, fixture.fixture) in private
        message = _xml(("held out (visibility: private)" if held_out else fixture.message)[:500])
        if fixture.status is Status.failed:
            node = ET.SubElement(case, "failure", message=message, type="fail")
            if not held_out:
                node.text = _xml(
                    "\n".join(
                        f"{a.type}: {a.status.value} ({a.score:.2f}) {a.message}"
                        for a in fixture.assertions
                    )
                )
        elif fixture.status is Status.error:
            # `unavailable` for an outage: an error of the provider, not the agent
            ET.SubElement(case, "error", message=message, type=fixture.outcome)
        elif fixture.status is Status.skipped:
            skipped = ET.SubElement(case, "skipped")
            # seed 003's Skip row, or a run in which nothing gates: say so
            if fixture.timed_out or fixture.advisory_only:
                skipped.set("message", message)
    return suite
