"""Checks across the resources of a tree, once every file is loaded: an Eval's agent,
fixtures and calibration exist, and the files and programs an Agent names stay inside the
repository (and, for `systemFile`, are there)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalward.errors import Problem
from evalward.resources.paths import OutsideRepository, program_path, repo_path
from evalward.resources.problems import did_you_mean
from evalward.resources.resource_set import Located, ResourceSet
from evalward.resources.yamlsource import PathKey

Report = Callable[[Located[Any], PathKey, str], None]
"""Records a problem at a field of a loaded resource."""


def _check_paths(result: ResourceSet, root: Path, report: Report) -> None:
    """Files and programs an Agent names: inside the repository, and there (systemFile)."""
    for located in result.agents.values():
        spec = located.resource.spec
        if spec.system_file:
            where = ("spec", "systemFile")
            try:
                path = repo_path(root, spec.system_file, Path(located.file).parent)
            except OutsideRepository:
                report(
                    located,
                    where,
                    f"the file {spec.system_file!r} leaves the repository; "
                    "reference a file inside it",
                )
            else:
                if not path.is_file():
                    report(located, where, f"the file {spec.system_file!r} does not exist")
                elif path.stat().st_size == 0:
                    report(located, where, f"the file {spec.system_file!r} is empty")
        programs: list[tuple[PathKey, str]] = []
        runtime = spec.runtime
        if runtime is not None and runtime.command is not None:
            programs.append((("spec", "runtime", "command", "run", 0), runtime.command.run[0]))
        if runtime is not None and runtime.http is not None:
            programs.append((("spec", "runtime", "http", "start", 0), runtime.http.start[0]))
        for index, tool in enumerate(spec.tools):
            if tool.command is not None:
                programs.append((("spec", "tools", index, "command"), tool.command.run[0]))
        for at, program in programs:
            try:
                program_path(root, program)
            except OutsideRepository:
                report(
                    located,
                    at,
                    f"the program {program!r} leaves the repository; run a program inside it, "
                    "or one on PATH by its name",
                )


def check_references(
    result: ResourceSet, root: Path, report: Report, *, check_files: bool = True
) -> None:
    """Every reference between resources resolves, and every file an Agent names is there;
    an Eval whose selector matches nothing is a warning."""
    if check_files:
        _check_paths(result, root, report)
    for name, located in sorted(result.evals.items()):
        spec = located.resource.spec
        if spec.target_agent not in result.agents:
            report(
                located,
                ("spec", "targetAgent"),
                f"Eval {name!r} targets agent {spec.target_agent!r}, which is not defined"
                f"{did_you_mean(spec.target_agent, result.agents)}",
            )
        for index, fixture in enumerate(spec.fixtures):
            if fixture not in result.fixtures:
                report(
                    located,
                    ("spec", "fixtures", index),
                    f"Eval {name!r} lists fixture {fixture!r}, which is not defined"
                    f"{did_you_mean(fixture, result.fixtures)}",
                )
        calibration = spec.judge.calibration
        if calibration and calibration not in result.calibrations:
            report(
                located,
                ("spec", "judge", "calibration"),
                f"Eval {name!r} names JudgeCalibration {calibration!r}, which is not defined"
                f"{did_you_mean(calibration, result.calibrations)}",
            )
        if spec.fixture_selector is not None and spec.fixture_selector.match_labels:
            labels = spec.fixture_selector.match_labels
            selector_only = located.resource.model_copy(
                update={"spec": spec.model_copy(update={"fixtures": []})}
            )
            if not result.fixtures_of(selector_only):
                result.warnings.append(
                    Problem(
                        located.file,
                        located.line,
                        1,
                        "spec.fixtureSelector.matchLabels",
                        f"Eval {name!r}: the selector {labels} matches no fixture",
                    )
                )
        no_selector = spec.fixture_selector is None or not spec.fixture_selector.match_labels
        if no_selector and not spec.fixtures:
            result.warnings.append(
                Problem(located.file, located.line, 1, "spec", f"Eval {name!r} selects no fixture")
            )
