"""Checks across the resources of a tree, once every file is loaded: an Eval's agent,
fixtures and calibration exist, and the files and programs an Agent names (and the files a
playground service's `environment` is built from) stay inside the repository and are there
(paths are from the repository root: files/inside.py); the agent evalward.yaml's
`defaults.targetAgent` names is one of the tree's, else a warning."""

from __future__ import annotations

import posixpath
import re
from typing import Any

from evalward.errors import NotCommitted, OutsideRepository, Problem
from evalward.files.committed import MAX_SYSTEM_BYTES, RepoFiles
from evalward.files.inside import program_path, reference_candidates
from evalward.resources.agents.agent import AgentEnvironment
from evalward.resources.agents.agent_runtime import AgentProgram
from evalward.resources.checks.assertions import JudgeAssertion
from evalward.resources.common import AGENTV_DEFAULT_TARGET
from evalward.resources.models import Eval, EvalFixture
from evalward.resources.playground import ServicePart
from evalward.resources.reading.repo_config import CONFIG_FILE, RepoConfig
from evalward.resources.reading.yamlsource import PathKey, undecodable
from evalward.resources.resource_set import Located, ProblemReporter, ResourceSet
from evalward.resources.unread_settings import check_unread_settings
from evalward.text.escaping import printable

FROM_ROOT = " (paths in a resource are from the repository root)"
SHOWN = 3
"""Fixtures named in one message at most; the rest are counted."""


def _named(fixtures: list[Located[EvalFixture]]) -> str:
    """The first SHOWN `fixtures` by name and place, and how many more there are."""
    shown = ", ".join(f"{f.resource.metadata.name!r} ({f.file}:{f.line})" for f in fixtures[:SHOWN])
    return shown + (f" and {len(fixtures) - SHOWN} more" if len(fixtures) > SHOWN else "")


def _check_paths(result: ResourceSet, report: ProblemReporter) -> None:
    """Files and programs an Agent names: inside the repository, and there. The door is
    asked about all of them at once first (one git call, not one for each)."""
    result.files.prefetch(_named_files(result))
    for located in result.agents.values():
        spec = located.resource.spec
        if spec.system_file:
            _check_system_file(located, spec.system_file, result.files, report)
        for program in spec.programs():
            _check_program(located, program, result.files, report)
        _check_environment(located, ("spec", "environment"), spec.environment, result, report)
    for located, service in _services(result):
        at: PathKey = ("spec", "playground", "service", "environment")
        _check_environment(located, at, service.environment, result, report)


def _check_environment(
    located: Located[Any],
    at: PathKey,
    environment: AgentEnvironment | None,
    result: ResourceSet,
    report: ProblemReporter,
) -> None:
    """The files an agent's or a playground service's `environment` is installed from."""
    for kind, name in (environment.named() if environment else {}).items():
        try:  # a file this side may read (files/committed.py)
            result.files.find(name)
        except NotCommitted as exc:
            report(located, (*at, kind), _refused(name, exc))


def _services(result: ResourceSet) -> list[tuple[Located[Any], ServicePart]]:
    """Each playground service an Eval or a fixture defines, with its definition."""
    found: list[tuple[Located[Any], ServicePart]] = []
    definitions: list[Located[Any]] = [*result.evals.values(), *result.fixtures.values()]
    for located in definitions:
        playground = located.resource.spec.playground
        if playground is not None and playground.service is not None:
            found.append((located, playground.service))
    return found


def _named_files(result: ResourceSet) -> list[str]:
    """Every file the Agents and the playground services name, as `_check_paths` looks
    them up."""
    named: list[str] = []
    for located in result.agents.values():
        spec = located.resource.spec
        if spec.system_file:
            named += reference_candidates(located.file, spec.system_file)
        named += [p.argv[0] for p in spec.programs() if not p.argv[0].startswith("/")]
        named += spec.environment.named().values() if spec.environment else []
    for _, service in _services(result):
        named += service.environment.named().values() if service.environment else []
    return named


def _refused(name: str, exc: NotCommitted) -> str:
    """Why the file `name` cannot be read, in the words these checks have always used."""
    if exc.reason.startswith("leads out"):
        return f"the file {name!r} leaves the repository; name a file inside it"
    missing = exc.reason.startswith(("does not exist", "is not a file of"))
    if missing and name.startswith("/"):
        return _not_in_repository(name, exc.reason)
    if exc.reason.startswith("does not exist"):
        return f"the file {name!r} does not exist{FROM_ROOT}"
    return f"the file {name!r} {exc.reason}"


def _not_in_repository(name: str, reason: str) -> str:
    """A path with a leading `/` that names nothing: it is read from the repository root
    (files/inside.py), never the machine's, which `/etc/...` reads as; say where it looked."""
    # "is not a file of commit 0123abcd4567 (untracked, ...); commit it, ...": its side only
    missing = "does not exist" if reason.startswith("does not exist") else reason.split(" (")[0]
    looked = posixpath.normpath(name.lstrip("/"))
    return (
        f"the file {name!r} {missing}: a leading `/` means the repository root, not the "
        f"machine's, so evalward looked for {looked!r} in the repository; copy the file into "
        "the repository, commit it, and name it from the root"
    )


def _check_system_file(
    located: Located[Any], name: str, files: RepoFiles, report: ProblemReporter
) -> None:
    where = ("spec", "systemFile")
    try:
        found = files.agent_reference(name, located.file)
    except NotCommitted as exc:
        report(located, where, _refused(name, exc))
        return
    if found.legacy:
        report(
            located,
            where,
            f"{name!r} is found only relative to {printable(located.file)}, a rule that is "
            f"deprecated: paths in a resource are from the repository root; write "
            f"`{found.legacy}`",
            warning=True,
        )
    elif found.shadowed:
        report(
            located,
            where,
            f"{name!r} is read from the repository root, not {found.shadowed} (relative to "
            f"{printable(located.file)}, the deprecated rule)",
            warning=True,
        )
    try:
        content = files.read(found.path, MAX_SYSTEM_BYTES)
    except NotCommitted as exc:
        report(located, where, _refused(name, exc))
        return
    if not content:
        report(located, where, f"the file {name!r} is empty")
        return
    not_text = _not_utf8(content)
    if not_text:
        report(located, where, f"the file {name!r} {not_text}")


def _not_utf8(content: bytes) -> str:
    """Why `content`, a system prompt, is no UTF-8 text (a run reads it as one: a binary or
    Latin-1 file fails every run), with where its first such byte stands; "" when it is."""
    try:
        content.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = undecodable(content, exc)
        at = f"byte 0x{bad.byte:02x} at line {bad.line}, column {bad.column}"
        if bad.wide:
            return "is UTF-16 or UTF-32 text (it starts with a byte-order mark); save it as UTF-8"
        if b"\0" in content:  # NUL bytes, and no mark of a wide encoding: not text
            return f"is binary, not UTF-8 text ({at}): a system prompt is text; name a text file"
        return f"is not UTF-8 text ({at}): a system prompt is text; save it as UTF-8"
    return ""


def _check_program(
    located: Located[Any], named: AgentProgram, files: RepoFiles, report: ProblemReporter
) -> None:
    """A program given as a relative path: inside the repository, and (when it runs) an
    executable file of the side's commit (files/committed.py: never a file another program
    left in the workspace). A bare name is looked up on PATH when it runs, and an absolute
    path is the machine's (an interpreter), as a shell would run them. Reported at its
    argv[0]: a runtime's own, a tool's or server's command."""
    at = (*named.at, 0) if named.runtime else named.at
    program = named.argv[0]
    held = next((n for n, arg in enumerate(named.argv) if "\0" in arg), None)
    if held:  # argv[0], a path, is refused below as no file of the repository
        report(
            located,
            at,
            f"argument {held} of {named.what} holds a NUL character (`\\0`), which no "
            "program can be given; remove it",
        )
        return
    try:
        path = program_path(files.root, program)
    except OutsideRepository:
        report(
            located,
            at,
            f"the program {program!r} leaves the repository; run a program inside it, "
            "or one on PATH by its name",
        )
        return
    if path is None or program.startswith("/") or not named.starts:
        return
    try:
        executable = files.is_executable(program)
    except NotCommitted as exc:
        missing = exc.reason.startswith("does not exist")
        why = f"does not exist{FROM_ROOT}" if missing else exc.reason
        report(located, at, f"the program {program!r} {why}")
        return
    if not executable:
        interpreter = _interpreter(files, program)
        example = f", e.g. `[{interpreter}, {program}]`" if interpreter else ""
        report(
            located,
            at,
            f"the program {program!r} is not executable; `chmod +x {program}` (and commit "
            f"it), or run it through its interpreter{example}",
        )


INTERPRETERS = {
    ".py": "python3",
    ".sh": "sh",
    ".bash": "bash",
    ".js": "node",
    ".mjs": "node",
    ".cjs": "node",
    ".rb": "ruby",
    ".pl": "perl",
}
"""The interpreter a script's name says it is for, when its first line names none."""
_INTERPRETER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


def _interpreter(files: RepoFiles, program: str) -> str:
    """The interpreter the script `program` names on its `#!` line (`#!/bin/sh`: `sh`;
    `#!/usr/bin/env python3`: `python3`), else the one its extension says; "" when neither
    says one, so that no example names the wrong one."""
    try:
        first = files.starts([program], 256).get(program, b"").split(b"\n", 1)[0].decode()
    except UnicodeDecodeError:
        first = ""
    if first.startswith("#!"):
        words = first[2:].split()
        if words and posixpath.basename(words[0]) == "env":
            words = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        name = posixpath.basename(words[0]) if words else ""
        return name if _INTERPRETER_NAME.fullmatch(name) else ""
    return INTERPRETERS.get(posixpath.splitext(program)[1], "")


def check_references(
    result: ResourceSet, report: ProblemReporter, *, check_files: bool = True
) -> None:
    """Every reference between resources resolves, and every file an Agent names is there.

    Nothing a run could not interpret is let through: a fixture for an agent that is not
    defined, an Eval that selects no fixture, a judge assertion under an Eval with no judge
    to score it, and a pairwise judge without its model, rubric or calibration are errors (a
    run would otherwise run the wrong agent, score nothing, or skip the check)."""
    if check_files:
        _check_paths(result, report)
    _check_fixture_targets(result, report)
    check_unread_settings(result, report)
    tables = result.tables()
    for name, located in sorted(result.evals.items()):
        spec = located.resource.spec
        named: list[tuple[PathKey, str, str, str]] = [
            (("spec", "targetAgent"), "Agent", spec.target_agent, "targets agent")
        ]
        named += [
            (("spec", "fixtures", index), "EvalFixture", fixture, "lists fixture")
            for index, fixture in enumerate(spec.fixtures)
        ]
        if spec.judge.calibration:
            at: PathKey = ("spec", "judge", "calibration")
            named.append((at, "JudgeCalibration", spec.judge.calibration, "names JudgeCalibration"))
            _scored_examples(name, located, spec.judge.calibration, result, report)
        for at, kind, wanted, said in named:
            if wanted not in tables[kind]:
                end, follows = result.unresolved(kind, wanted, tables[kind])
                report(located, at, f"Eval {name!r} {said} {wanted!r}{end}", consequence=follows)
        selected = result.fixtures_of(located.resource)
        _check_selected_targets(name, located, selected, result, report)
        if not selected and all(f in result.fixtures for f in spec.fixtures):
            _no_fixture(name, located, result, report)
        elif spec.fixture_selector is not None and spec.fixture_selector.match_labels:
            _selector_matches_nothing(name, located, result)
        if spec.judge.model is None:
            _unjudged(name, located, selected, report)
        check_pairwise_references(name, located, selected, result, report)
    _unselected(result, report)


UNSELECTED_SHOWN = 5
"""Fixtures no Eval selects warned of one by one; the rest are counted in one more."""


def _unselected(result: ResourceSet, report: ProblemReporter) -> None:
    """A warning at each fixture no Eval selects: no run ever runs it, so a fixture whose
    labels miss the selector (`agent: asistant`) checks nothing while it looks kept."""
    if not result.evals:
        return  # fixtures alone, as a page's example: no Eval to be selected by yet
    selected: set[str] = set()
    for located in result.evals.values():
        selected.update(f.resource.metadata.name for f in result.fixtures_of(located.resource))
    alone = [f for name, f in sorted(result.fixtures.items()) if name not in selected]
    for fixture in alone[:UNSELECTED_SHOWN]:
        target = fixture.resource.spec.target_agent
        theirs = [
            (name, e.resource.spec.fixture_selector)
            for name, e in sorted(result.evals.items())
            if e.resource.spec.target_agent == target
        ]
        hint = next(
            (
                f" (Eval {name!r} selects the labels {dict(selector.match_labels)})"
                for name, selector in theirs
                if selector is not None and selector.match_labels
            ),
            "",
        )
        report(
            fixture,
            ("metadata", "name"),
            f"fixture {fixture.resource.metadata.name!r} is selected by no Eval, so no run "
            f"runs it: give it the labels an Eval's `fixtureSelector.matchLabels` names"
            f"{hint}, or list it under an Eval's `spec.fixtures`",
            warning=True,
        )
    if len(alone) > UNSELECTED_SHOWN:
        rest = alone[UNSELECTED_SHOWN]
        report(
            rest,
            ("metadata", "name"),
            f"and {len(alone) - UNSELECTED_SHOWN} more fixtures are selected by no Eval",
            warning=True,
        )


def unknown_default_agent(config: RepoConfig, result: ResourceSet) -> list[Problem]:
    """A warning at `defaults.targetAgent` of evalward.yaml when it names no Agent of the tree.

    It stands only for the agent of an AgentV test that names no `execution.target` (an Eval
    names its own `targetAgent`, which is required), so a misspelt one is read by no run:
    where no selected AgentV test inherits it, nothing else says so (one that does is
    refused at its test, as any fixture for an undefined agent is). The run still gates as
    it would without it, so it is not refused."""
    target = config.defaults.target_agent
    if target is None or target in result.agents or target == AGENTV_DEFAULT_TARGET:
        return []
    end, follows = result.unresolved("Agent", target, result.agents)
    if follows:  # the Agent is invalid, or a file that did not parse may define it: said there
        return []
    line, column = config.locate(("defaults", "targetAgent"))
    message = (
        f"names agent {target!r}{end}; it is the agent of an AgentV test that names no "
        "`execution.target` (an Eval names its own `targetAgent`), so as it is no run reads "
        "it; name an Agent's metadata.name, or remove it"
    )
    return [Problem(CONFIG_FILE, line, column, "defaults.targetAgent", message)]


def _check_fixture_targets(result: ResourceSet, report: ProblemReporter) -> None:
    """A fixture's `targetAgent` names a defined agent. An AgentV test's target (its
    `execution.target`, or `defaults.targetAgent`) may name an AgentV target instead, so it
    must name an agent only once an Eval selects the test to run."""
    selected: set[str] | None = None
    for name, located in sorted(result.fixtures.items()):
        target = located.resource.spec.target_agent
        agentv = located.file in result.agentv_files
        if target in result.agents or (agentv and target == AGENTV_DEFAULT_TARGET):
            continue  # AgentV's default target: the agent of the Eval that selects it
        if agentv:
            if selected is None:
                selected = {
                    f.resource.metadata.name
                    for e in result.evals.values()
                    for f in result.fixtures_of(e.resource)
                }
            if name not in selected:
                continue
        field = "its `execution.target`" if agentv else "its targetAgent"
        end, follows = result.unresolved("Agent", target, result.agents)
        report(
            located,
            () if agentv else ("spec", "targetAgent"),
            f"EvalFixture {name!r} is for agent {target!r} ({field}){end}"
            + ("" if follows else "; name an Agent's metadata.name"),
            consequence=follows,
        )


def _check_selected_targets(
    name: str,
    located: Located[Any],
    selected: list[Located[EvalFixture]],
    result: ResourceSet,
    report: ProblemReporter,
) -> None:
    """Each fixture an Eval selects is for the Eval's agent. A run runs it with the Eval's
    `targetAgent`, while its tool names are checked against its own `targetAgent`: one
    written for another agent would run against the wrong one, its checks read for neither.
    An AgentV test of AgentV's default target is for whichever Eval's agent selects it. A
    fixture or an Eval whose agent is not defined is refused at its `targetAgent`. Reported at
    the selector, or at the list entry that names the fixture."""
    spec = located.resource.spec
    agent = spec.target_agent
    if agent not in result.agents:
        return  # refused at the Eval's targetAgent
    other = [
        f
        for f in selected
        if (target := f.resource.spec.target_agent) != agent
        and target in result.agents
        and not (f.file in result.agentv_files and target == AGENTV_DEFAULT_TARGET)
    ]
    if not other:
        return
    listed = {fixture: index for index, fixture in enumerate(spec.fixtures)}
    first = other[0].resource.metadata.name
    at: PathKey = (
        ("spec", "fixtures", listed[first])
        if first in listed
        else ("spec", "fixtureSelector", "matchLabels")
    )
    if len(other) == 1:
        target = other[0].resource.spec.target_agent
        found = (
            f"fixture {first!r} ({other[0].file}:{other[0].line}), whose targetAgent is {target}"
        )
    else:
        found = (
            f"{len(other)} fixtures whose targetAgent is another agent: "
            + ", ".join(
                f"{f.resource.metadata.name!r} ({f.resource.spec.target_agent}, {f.file}:{f.line})"
                for f in other[:SHOWN]
            )
            + (f" and {len(other) - SHOWN} more" if len(other) > SHOWN else "")
        )
    report(
        located,
        at,
        f"Eval {name!r} (agent {agent}) selects {found}: an Eval runs every fixture it "
        f"selects with its own agent; give the fixture the labels of its own agent's Eval "
        f"(or list it there), or `targetAgent: {agent}` if it is written for {agent}",
    )


def _no_fixture(
    name: str, located: Located[Any], result: ResourceSet, report: ProblemReporter
) -> None:
    spec = located.resource.spec
    selector = spec.fixture_selector
    labels = selector.match_labels if selector is not None else {}
    invalid = [
        f"{fixture!r} (see {broken.where})"
        for (kind, fixture), broken in sorted(result.not_loaded.items())
        if kind == "EvalFixture" and labels and labels.items() <= broken.labels.items()
    ]
    if invalid:
        report(
            located,
            ("spec", "fixtureSelector", "matchLabels"),
            f"Eval {name!r} selects no fixture that loads: the fixtures with the labels "
            f"{labels} are invalid: {', '.join(invalid)}",
            consequence=True,
        )
        return
    if labels and result.lost_roots:
        report(
            located,
            ("spec", "fixtureSelector", "matchLabels"),
            f"Eval {name!r} selects no fixture: no EvalFixture read has the labels {labels}; "
            f"{result.unread_roots()} may hold them",
            consequence=True,
        )
        return
    if labels:
        where: PathKey = ("spec", "fixtureSelector", "matchLabels")
        found = f"no EvalFixture has the labels {labels}"
        fix = "give its fixtures those labels (metadata.labels)"
    else:
        where = ("spec",)
        found = "it has no `fixtureSelector.matchLabels` and no `fixtures` list"
        fix = "select its fixtures by a label they have (`fixtureSelector: {matchLabels: {…}}`)"
    report(
        located,
        where,
        f"Eval {name!r} selects no fixture: {found}, so a run would score nothing; {fix}, or "
        "list them under spec.fixtures",
    )


def _selector_matches_nothing(name: str, located: Located[Any], result: ResourceSet) -> None:
    """A selector that adds nothing to the Eval's explicit list: likely a typo, not fatal."""
    spec = located.resource.spec
    selector_only = located.resource.model_copy(
        update={"spec": spec.model_copy(update={"fixtures": []})}
    )
    if not result.fixtures_of(selector_only):
        labels = spec.fixture_selector.match_labels
        result.warnings.append(
            Problem(
                located.file,
                located.line,
                1,
                "spec.fixtureSelector.matchLabels",
                f"Eval {name!r}: the selector {labels} matches no fixture; only the fixtures "
                "listed under spec.fixtures run",
            )
        )


def _unjudged(
    name: str, located: Located[Any], selected: list[Located[EvalFixture]], report: ProblemReporter
) -> None:
    """Judge assertions need the Eval's judge: without one they could only be skipped."""
    judged = [
        f
        for f in selected
        if any(isinstance(a, JudgeAssertion) for a in f.resource.spec.leaf_assertions)
    ]
    if not judged:
        return
    report(
        located,
        ("spec", "judge") if "judge" in located.resource.spec.model_fields_set else ("spec",),
        f"Eval {name!r} sets no spec.judge.model, and the fixtures it selects have judge "
        f"assertions that nothing could score: {_named(judged)}; set spec.judge.model (a "
        "`provider/model` id), or `defaults.judge.model` in evalward.yaml",
    )


# --- An Eval's pairwise judge ------------------------------------------------------------
# What an Eval's pairwise judge refers to resolves, at load: a model to judge with, a rubric
# for every fixture it judges, and a JudgeCalibration with labelled pairs.
#
# Each is a mistake a run would otherwise meet only once it had called models (no rubric, no
# model), or never (a misspelled calibration leaves the judge uncalibrated, so it would judge
# without gating), so `evalward validate` and every run refuse it at its line.


def check_pairwise_references(
    name: str,
    located: Located[Eval],
    selected: list[Located[EvalFixture]],
    result: ResourceSet,
    report: ProblemReporter,
) -> None:
    """The references of Eval `name`'s pairwise judge, over the fixtures it `selected`."""
    judge = located.resource.spec.judge
    config = judge.pairwise
    judged = [f for f in selected if config is not None or f.resource.spec.pairwise is not None]
    if not judged:
        return
    at: PathKey = ("spec", "judge", "pairwise")
    if config is None:
        _fixture_rubrics(name, located, judged, report)
    elif not config.rubric:
        _eval_rubric(name, located, judged, report)
    if (config is None or config.model is None) and judge.model is None:
        report(
            located,
            at if config is not None else ("spec",),
            f"Eval {name!r} judges fixtures pairwise, and names no model to judge them; set "
            "`judge.pairwise.model` or `judge.model` (a `provider/model` id)",
        )
    if config is not None and config.calibration is not None:
        _calibration(name, located, config.calibration, result, report)
        _calibrated_rubric(name, located, judged, result, report)


def _lacks_rubric(fixture: Located[EvalFixture]) -> bool:
    own = fixture.resource.spec.pairwise
    return own is None or not own.rubric


def _eval_rubric(
    name: str, located: Located[Eval], judged: list[Located[EvalFixture]], report: ProblemReporter
) -> None:
    """Under `judge.pairwise` without a rubric, every fixture judged gives its own."""
    lacking = [f for f in judged if _lacks_rubric(f)]
    if not lacking:
        return
    report(
        located,
        ("spec", "judge", "pairwise"),
        f"Eval {name!r} judges fixtures pairwise, and no rubric says what makes one run better "
        f"for {_named(lacking)}; set `judge.pairwise.rubric`, or the fixture's `pairwise.rubric`",
    )


def _fixture_rubrics(
    name: str, located: Located[Eval], judged: list[Located[EvalFixture]], report: ProblemReporter
) -> None:
    """Without `judge.pairwise`, a fixture that asks for the judge gives its own rubric."""
    for fixture in judged:
        if _lacks_rubric(fixture):
            report(
                fixture,
                ("spec", "pairwise"),
                f"fixture {fixture.resource.metadata.name!r} asks Eval {name!r} for its pairwise "
                "judge, and no rubric says what makes one run better; set the fixture's "
                f"`pairwise.rubric`, or `judge.pairwise.rubric` in Eval {name!r} "
                f"({located.file}:{located.line})",
            )


def _calibration(
    name: str, located: Located[Any], calibration: str, result: ResourceSet, report: ProblemReporter
) -> None:
    """The calibration is defined and has labelled pairs: without them the judge could only
    advise, which a typo must not decide."""
    at: PathKey = ("spec", "judge", "pairwise", "calibration")
    said = f"Eval {name!r} names JudgeCalibration {calibration!r} for its pairwise judge"
    found = result.calibrations.get(calibration)
    if found is None:
        end, follows = result.unresolved("JudgeCalibration", calibration, result.calibrations)
        report(located, at, f"{said}{end}", consequence=follows)
        return
    if not found.resource.spec.pairs:
        report(
            located,
            at,
            f"{said}, which has no labelled `pairs` ({found.file}:{found.line}): the pairwise "
            "judge is calibrated on pairs; add `pairs` (input, outputA, outputB, "
            "humanPreference) to it, or name a JudgeCalibration that has them",
        )


def _calibrated_rubric(
    name: str,
    located: Located[Eval],
    judged: list[Located[EvalFixture]],
    result: ResourceSet,
    report: ProblemReporter,
) -> None:
    """A warning where the pairwise judge is asked another question than the one its
    calibration measured it on (the calibration's `rubric`): its κ and consistency, which
    let it gate, then vouch for a judge of another rubric."""
    config = located.resource.spec.judge.pairwise
    assert config is not None and config.calibration is not None
    found = result.calibrations.get(config.calibration)
    if found is None:
        return  # said as a reference
    measured = " ".join(found.resource.spec.rubric.split())
    asked = [
        f
        for f in judged
        if " ".join(
            (
                (f.resource.spec.pairwise and f.resource.spec.pairwise.rubric)
                or config.rubric
                or ""
            ).split()
        )
        not in ("", measured)
    ]
    if not asked:
        return
    where = f"JudgeCalibration {config.calibration!r} ({found.file}:{found.line})"
    report(
        located,
        ("spec", "judge", "pairwise", "rubric" if config.rubric else "calibration"),
        f"Eval {name!r} asks its pairwise judge another rubric than {where} measured it on, "
        f"for {_named(asked)}: its agreement with people vouches for that question, not "
        "this one; give the calibration the same rubric (and label its pairs for it), or "
        "the Eval the calibration's",
        warning=True,
    )


def _scored_examples(
    name: str, located: Located[Any], calibration: str, result: ResourceSet, report: ProblemReporter
) -> None:
    """The absolute judge's calibration has scored `examples`: one of `pairs` alone gives
    it no κ, and every run it judges is inconclusive, with no word of why."""
    found = result.calibrations.get(calibration)
    if found is None or found.resource.spec.examples:
        return  # an undefined one is said as a reference
    report(
        located,
        ("spec", "judge", "calibration"),
        f"Eval {name!r} names JudgeCalibration {calibration!r} for its judge, which has no "
        f"scored `examples` ({found.file}:{found.line}), only the `pairs` a pairwise judge "
        "is calibrated on: its judge would have no agreement to be held to, and every run "
        "it judges would be inconclusive; add `examples` (input, candidateOutput, "
        "humanScore) to it, or name it under `judge.pairwise.calibration`",
    )
