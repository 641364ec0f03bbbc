"""No figure in docs/benchmarks.md without the command that prints it: every table sits between
the markers of a section that bench/all.py regenerates (or of a record: a comparison made once
against older trees, by a command it names), each marker names a script of bench/ and the
command all.py runs for it, and every section all.py runs has its place in the page."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "benchmarks.md"
RECORD = re.compile(r"<!-- bench record: (?P<command>python bench/.*?) -->")
RECORD_END = "<!-- end of bench record -->"


def _bench(script: str) -> ModuleType:
    name = f"bench_{script}"
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{script}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _all() -> ModuleType:
    return _bench("all")


def _sections(text: str, bench: ModuleType) -> list[tuple[str, str, int, int]]:
    """Each marked section: its name, its command, and the lines it spans."""
    lines = text.splitlines()
    found: list[tuple[str, str, int, int]] = []
    open_at: tuple[str, str, int] | None = None
    for number, line in enumerate(lines, 1):
        start = bench.START.fullmatch(line.strip()) or RECORD.fullmatch(line.strip())
        if start:
            assert open_at is None, f"line {number}: a section opens inside {open_at[0]!r}"
            name = start["name"] if "name" in start.groupdict() else "record"
            open_at = (name, start["command"], number)
        elif line.strip().startswith("<!-- end of bench"):
            assert open_at is not None, f"line {number}: an end marker with no section open"
            closes = RECORD_END if open_at[0] == "record" else bench.end_marker(open_at[0])
            assert line.strip() == closes, f"line {number}: {line!r}"
            found.append((*open_at, number))
            open_at = None
        else:
            assert not line.strip().startswith("<!-- bench"), f"line {number}: unreadable marker"
    assert open_at is None, f"section {open_at[0]!r} is never closed"
    for _, command, start_line, _ in found:
        script = re.fullmatch(r"python (bench/[\w.]+\.py)( .*)?", command)
        assert script and (ROOT / script[1]).is_file(), f"line {start_line}: {command}"
    return found


def test_every_table_is_inside_a_section_that_a_script_of_bench_regenerates() -> None:
    bench = _all()
    text = DOC.read_text(encoding="utf-8")
    sections = _sections(text, bench)
    inside = {n for _, _, start, end in sections for n in range(start, end + 1)}

    outside = [
        f"line {number}: {line[:60]}"
        for number, line in enumerate(text.splitlines(), 1)
        if re.fullmatch(r"\|.*\|", line.strip()) and number not in inside
    ]

    assert not outside, f"tables with no script that prints them: {outside}"


def test_each_section_is_the_command_all_py_runs_for_it_and_every_one_has_its_place() -> None:
    bench = _all()
    sections = _sections(DOC.read_text(encoding="utf-8"), bench)
    registry = {s.name: " ".join(s.command()) for s in bench.SECTIONS}

    names = [name for name, _, _, _ in sections if name != "record"]
    assert sorted(names) == sorted(set(names)), "a section is marked twice"
    assert set(names) == set(registry), "sections of the page and of bench/all.py differ"
    for name, command, _, _ in sections:
        assert name == "record" or command == registry[name], f"{name}: the page says {command!r}"


def test_a_script_s_output_is_written_as_it_printed_it(tmp_path: Path) -> None:
    bench = _all()
    printed = "load average before: 1.00\n| a | b |\n|---|---|\n| 1 | 2 |\npython 3.11, 2 cores\n"

    rendered = bench.render(printed)

    assert rendered == (
        "```text\nload average before: 1.00\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
        "```text\npython 3.11, 2 cores\n```"
    )


PODMAN_HISTORY = ROOT / "tests" / "data" / "podman" / "history.json"
"""`podman history --format json --no-trunc evalward:dev` as podman 4.3.1 printed it."""


def test_the_image_s_layers_are_read_from_what_podman_history_prints() -> None:
    image_size = _bench("image_size")

    rows = image_size.layer_rows(json.loads(PODMAN_HISTORY.read_text()))

    assert rows == [
        ("ADD file:… in /", 297543680),
        ("COPY file:… in /opt/evalward/git-without-perl.sh", 4096),
        ("apt-get update && cd /tmp && apt-get download git && sh /opt/evalward…", 52748800),
        ("COPY file:… in /opt/evalward/requirements.lock", 173056),
        ("pip install --require-hashes --no-deps -r /opt/evalward/requirements.…", 123732480),
        ("COPY multi:… in /opt/evalward/", 28160),
        ("COPY dir:… in /opt/evalward/src", 2417664),
        ("pip install --no-deps --no-build-isolation /opt/evalward", 6094336),
    ]


def test_a_layer_without_a_size_stops_the_image_s_figures_instead_of_an_empty_table() -> None:
    image_size = _bench("image_size")
    listed = json.loads(PODMAN_HISTORY.read_text())
    listed[2]["Size"] = listed[2].pop("size")

    with pytest.raises(SystemExit, match="no size"):
        image_size.layer_rows(listed)
