"""JUnit XML: one testsuite per Eval, one testcase per head fixture run.

CI dashboards read it; held-out fixtures show their result only, no message or output.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from evalward.results import EvalResult, Status


def junit_xml(evals: list[EvalResult], private: set[tuple[str, str]]) -> str:
    root = ET.Element("testsuites", name="evalward")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for result in evals:
        if result.side != "head":
            continue
        suite = ET.SubElement(root, "testsuite", name=result.eval)
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        seconds = 0.0
        for fixture in result.fixtures:
            counts["tests"] += 1
            seconds += fixture.duration_ms / 1000
            name = fixture.fixture if fixture.rep == 0 else f"{fixture.fixture} #{fixture.rep}"
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"{result.agent}.{result.eval}",
                name=name,
                time=f"{fixture.duration_ms / 1000:.3f}",
            )
            if fixture.file:
                case.set("file", fixture.file)
                case.set("line", str(fixture.line))
            held_out = (fixture.eval, fixture.fixture) in private
            message = "held out (visibility: private)" if held_out else fixture.message
            if fixture.status is Status.failed:
                counts["failures"] += 1
                node = ET.SubElement(case, "failure", message=message[:500], type="fail")
                if not held_out:
                    node.text = "\n".join(
                        f"{a.type}: {a.status.value} ({a.score:.2f}) {a.message}"
                        for a in fixture.assertions
                    )
            elif fixture.status is Status.error:
                counts["errors"] += 1
                # `unavailable` for an outage: an error of the provider, not the agent
                ET.SubElement(case, "error", message=message[:500], type=fixture.outcome)
            elif fixture.status is Status.skipped:
                counts["skipped"] += 1
                skipped = ET.SubElement(case, "skipped")
                # seed 003's Skip row, or a run in which nothing gates: say so
                if fixture.timed_out or fixture.advisory_only:
                    skipped.set("message", message[:500])
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
        suite.set("time", f"{seconds:.3f}")
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
