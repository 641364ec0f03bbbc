"""AgentV eval files (seed 004 and the `agentv` npm package) read as EvalFixtures: the older
shape (`evalcases`, `expected_outcome`, `execution.evaluators`, `rubrics`, `sidecar`) and the
current one (`tests`, `criteria`, `assertions`, `metadata`), mapped field by field as
docs/resources.md ("AgentV files") tables it. Each grader becomes evalward assertions in
`graders.py`; every problem of a test case is reported, not just the first.

A multi-turn test (`mode: conversation`, `turns`) becomes a scripted conversation. AgentV
scores one by its turns' scores (`aggregation`) and may stop at a failing turn
(`on_turn_failure: stop`); evalward requires every assertion of every turn to pass, as it
requires every AgentV grader, so both keys are read and neither loosens that.
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evalward.errors import AgentVProblem, AgentVProblems, NotCommitted, YamlSyntaxError
from evalward.files.committed import RepoFiles
from evalward.files.inside import looked_up
from evalward.importers.agentv.csv_cases import csv_cases
from evalward.importers.agentv.graders import GraderContext, grader_assertions, listed, rubric_item
from evalward.importers.agentv.suite import (
    CURRENT_KEYS,
    SuiteShape,
    check_case_keys,
    current_case,
    each_target,
    expand_tests,
    is_current,
    suite_shape,
    unread,
)
from evalward.resources.common import AGENTV_DEFAULT_TARGET as DEFAULT_TARGET
from evalward.resources.common import API_VERSION, is_number
from evalward.resources.reading.yamlsource import PathKey, load_documents
from evalward.text import jsontext

CASE_KEYS = ("evalcases", "eval_cases", "tests")
_GRADER_KEYS = ("assert", "assertions", "evaluators")
"""Where a test lists its own graders."""
_TURN_KEYS = ("input", "assert", "expected_output")
_CONVERSATION_CHOICES = {"mode": ("conversation",), "aggregation": ("mean", "min", "max"),
                         "on_turn_failure": ("continue", "stop")}  # fmt: skip
MAX_REFERENCED_BYTES = 64 * 1024 * 1024
"""The largest file an AgentV eval file references (an input, a dataset, a grader's prompt)."""
_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
SUITE_KEYS = (
    *CASE_KEYS, *CURRENT_KEYS, "name", "description", "execution", "target", "input",
    "assert", "assertions",
)  # fmt: skip
"""What evalward reads of a suite (beside its tests)."""
SUITE_LABELS = ("version", "author", "tags", "license", "category", "$schema")
"""What a suite may say of itself that decides nothing of its tests' verdicts."""
_SUITE_HINTS = {
    "default_test": "AgentV runs its `assert` on every test: put those assertions in the "
    "suite's `assert` (and its `vars` in each test's)",
    "metadata": "AgentV gives it to every test, whose graders read it: put it in each test's "
    "`metadata`",
}


@dataclass
class AgentVConversion:
    """The fixture documents made from one AgentV document, and the problems found."""

    fixtures: list[tuple[dict[str, Any], PathKey]] = field(default_factory=list)
    problems: list[AgentVProblem] = field(default_factory=list)
    reads: set[str] = field(default_factory=set)
    """Every repository path the document's file references depend on (`paths.looked_up`),
    found or not: what it loads changes when one of them does."""


def is_agentv(data: Any, file: str) -> bool:
    """An AgentV document: a list of cases under `evalcases` / `tests` (or a `tests` path)."""
    if not isinstance(data, dict) or _promptfoo_config(file):
        return False
    name = file.rsplit("/", 1)[-1].lower()
    named = name.endswith((".eval.yaml", ".eval.yml")) or name in ("eval.yaml", "eval.yml")
    for key in CASE_KEYS:
        cases = data.get(key)
        if key != "tests" and isinstance(cases, list) and any(isinstance(c, dict) for c in cases):
            return True  # AgentV's own key: an item that is no case is told at its path
        if isinstance(cases, list) and cases and all(_is_case(c, key) for c in cases):
            return named or any(isinstance(c, dict) for c in cases)
        if key == "tests" and isinstance(cases, str):
            # AgentV's suite.yaml names a JSONL dataset; promptfoo's globs and CSVs are not it
            dataset = cases.removeprefix("file://")
            return named or (
                any(k in data for k in CURRENT_KEYS)
                and dataset.endswith(".jsonl")
                and not any(c in dataset for c in "*?[{")
            )
    return False


def _promptfoo_config(file: str) -> bool:
    """A file promptfoo names its own (`promptfooconfig.yaml`): its `tests`, `prompts` and
    `providers` are promptfoo's, never AgentV's."""
    return file.rsplit("/", 1)[-1].lower().startswith("promptfooconfig")


def unnamed_suite(data: Any, file: str) -> bool:
    """Of a document `is_agentv` did not read, whether AgentV's current suite would be it (its
    suite keys, a `tests` that only names datasets), its file's name not saying AgentV:
    promptfoo's configs name their datasets so too, so it is read as neither, and is said."""
    if not isinstance(data, dict) or not any(k in data for k in CURRENT_KEYS):
        return False
    if _promptfoo_config(file):
        return False
    tests = data.get("tests")
    if isinstance(tests, str):
        return bool(tests.strip())
    return bool(tests) and isinstance(tests, list) and all(_is_case(t, "tests") for t in tests)


def _is_case(case: Any, key: str) -> bool:
    """A test case, or (in `tests`) a `file://` dataset of them."""
    if key == "tests" and isinstance(case, str):
        return case.startswith("file://")
    return isinstance(case, dict) and (key != "tests" or "id" in case)


def convert(
    data: dict[str, Any],
    file: str,
    root: Path,
    default_target: str | None,
    door: RepoFiles,
) -> AgentVConversion:
    """Every case of one AgentV document as EvalFixture data; the files it references are
    read through `door` (files/committed.py)."""
    files = _Files(root, file, door)
    out = AgentVConversion(reads=files.reads)
    out.problems += _unread_suite_keys(data)
    key = next(k for k in CASE_KEYS if k in data)
    cases: Any = data[key]
    if isinstance(cases, str):
        try:
            cases = files.cases(cases.removeprefix("file://"), (key,))
        except AgentVProblem as problem:
            out.problems.append(problem)
            return out
    shape = suite_shape(data, out.problems) if is_current(data) else None
    pairs, problems = expand_tests(cases, key, files.cases)
    out.problems += problems
    execution: dict[str, Any] = _mapping(data.get("execution"))
    graders_key = "assertions" if data.get("assertions") else "assert"
    try:
        graders = listed(data.get(graders_key), (graders_key,), "graders")
    except AgentVProblem as problem:  # every test would carry it: said once
        out.problems.append(problem)
        return out
    suite = _Suite(
        name=str(data.get("name") or Path(file).name.split(".")[0]),
        target=execution.get("target") or data.get("target") or default_target,
        input=data.get("input"),
        assertions=graders,
    )
    for case, path in pairs:
        if not isinstance(case, dict):
            out.problems.append(AgentVProblem(path, f"expected a test case; found {case!r}"))
            continue
        try:
            out.fixtures += _fixtures(case, path, suite, files, shape)
        except (AgentVProblem, AgentVProblems) as found:
            out.problems += found.problems if isinstance(found, AgentVProblems) else [found]
    return out


def _unread_suite_keys(data: dict[str, Any]) -> list[AgentVProblem]:
    """A problem at each key of the suite evalward would otherwise leave unread: AgentV reads
    it (`default_test`'s assertions run on every test, `scenarios` are more tests, an
    `execution` setting decides how tests run), so skipping it would pass what AgentV
    fails."""
    problems = []
    for key in data:
        if key in SUITE_KEYS or key in SUITE_LABELS:
            continue
        hint = _SUITE_HINTS.get(str(key))
        said = f"`{key}` is not read by evalward; {hint}" if hint else None
        problems.append(AgentVProblem((key,), said or unread(str(key), "a suite", SUITE_KEYS)))
    execution = data.get("execution")
    if execution is not None and not isinstance(execution, dict):
        problems.append(
            AgentVProblem(("execution",), f"expected a mapping; found {execution!r:.80}")
        )
    for key in execution if isinstance(execution, dict) else {}:
        if key != "target":
            problems.append(
                AgentVProblem(
                    ("execution", key),
                    f"`execution.{key}` of a suite is not read by evalward: it reads its "
                    "`target` (a test's own graders go in its `assert`)",
                )
            )
    if data.get("assert") is not None and data.get("assertions") is not None:
        problems.append(
            AgentVProblem(
                ("assertions",),
                "a suite gives its graders once: `assert` or `assertions`, not both (one "
                "list would not be read)",
            )
        )
    return problems


def _fixtures(
    case: dict[str, Any],
    path: PathKey,
    suite: _Suite,
    files: _Files,
    shape: SuiteShape | None,
) -> list[tuple[dict[str, Any], PathKey]]:
    """A test's fixtures: one, or (in the current format) one per provider."""
    check_case_keys(case, path)
    if shape is None:
        return [(_fixture(case, path, suite, files), path)]
    conversation = case.get("conversation_id")
    case, variables = current_case(case, path, shape)
    made = []
    for one in each_target(case, shape):
        fixture = _fixture(one, path, suite, files)
        if variables:
            fixture["spec"]["vars"] = variables
        if isinstance(conversation, str | int) and str(conversation).strip():
            fixture["metadata"]["labels"]["agentv-conversation"] = _name(str(conversation))
        made.append((fixture, path))
    return made


@dataclass
class _Suite:
    name: str
    target: Any
    input: Any
    assertions: list[Any]


class _Files:
    """File references of one eval file: relative to it, `/x` from the root, never outside,
    each read through the side's door (files/committed.py): a committed file, as data."""

    def __init__(self, root: Path, file: str, door: RepoFiles) -> None:
        self.root = root.resolve()
        self.file = file
        self.door = door
        self.reads: set[str] = set()

    def locate(self, reference: str, path: PathKey) -> str:
        """The repository path of the file `reference` names (links followed in the
        repository), or the problem at `path` that says why there is none."""
        if _URL.match(reference):
            raise AgentVProblem(
                path,
                f"remote file reference {reference!r} is not fetched; copy the file into the "
                "repository and reference it by path",
            )
        folder = "" if reference.startswith("/") else posixpath.dirname(self.file)
        joined = posixpath.join(folder, reference.lstrip("/"))
        normal = posixpath.normpath(joined)
        outside = f"file reference {reference!r} leaves the repository; use a path inside it"
        if normal == ".." or normal.startswith("../"):
            raise AgentVProblem(path, outside)
        for candidate in _search_paths(folder, reference.lstrip("/")):
            self.reads |= looked_up(self.root, candidate)
            try:
                return self.door.find(candidate)
            except NotCommitted as exc:
                if exc.reason.startswith("does not exist"):
                    continue
                if exc.reason.startswith("leads out"):
                    raise AgentVProblem(path, outside) from None
                raise AgentVProblem(path, f"file reference {reference!r} {exc.reason}") from None
        above = " nor from a folder above it" if "/" in folder else ""
        raise AgentVProblem(
            path, f"file reference {reference!r} not found (no file {normal}{above})"
        )

    def read(self, reference: str, path: PathKey, *, exact: bool = False) -> str:
        """The file's text; `exact`: its line ends as written (a CSV cell keeps its CRLF)."""
        found = self.locate(reference, path)
        try:
            text = self.door.text(found, MAX_REFERENCED_BYTES)
        except NotCommitted as exc:
            raise AgentVProblem(
                path, f"cannot read file reference {reference!r}: {exc.reason}"
            ) from None
        return text if exact else text.replace("\r\n", "\n").replace("\r", "\n")

    def cases(self, reference: str, path: PathKey) -> list[Any]:
        if reference.endswith(".csv"):
            return csv_cases(self.read(reference, path, exact=True), reference, path)
        text = self.read(reference, path)
        if reference.endswith(".jsonl"):
            try:
                return [jsontext.loads(line) for line in text.splitlines() if line.strip()]
            except ValueError as exc:  # not JSON, or nested too deeply to read
                raise AgentVProblem(path, f"{reference}: invalid JSON line: {exc}") from None
        try:
            documents = load_documents(text)
        except YamlSyntaxError as exc:
            raise AgentVProblem(path, f"{reference}:{exc.line}: {exc}") from None
        data = documents[0].data if documents else None
        if not isinstance(data, list):
            raise AgentVProblem(path, f"{reference}: expected a list of test cases")
        return data


def _search_paths(folder: str, reference: str) -> list[str]:
    """Where AgentV looks for a file reference: from the eval file's folder, then from each
    folder above it up to the repository root (the first that holds the file wins). A
    candidate that would leave the repository is not one."""
    found = []
    while True:
        joined = posixpath.join(folder, reference)
        normal = posixpath.normpath(joined)
        if normal != ".." and not normal.startswith("../") and joined not in found:
            found.append(joined)
        if not folder:
            return found
        folder = posixpath.dirname(folder)


def _fixture(case: dict[str, Any], path: PathKey, suite: _Suite, files: _Files) -> dict[str, Any]:
    case_id = case.get("id")
    if not isinstance(case_id, str) or not case_id.strip():
        raise AgentVProblem((*path, "id"), "missing required field 'id' (a non-empty string)")
    name = _name(case_id)
    criteria_key = "criteria" if "criteria" in case else "expected_outcome"
    criteria = case.get(criteria_key)
    if criteria is not None and not isinstance(criteria, str):
        raise AgentVProblem((*path, criteria_key), f"expected a string; found {criteria!r}")
    execution = _case_execution(case, path)
    target = execution.get("target") or suite.target or DEFAULT_TARGET
    if not isinstance(target, str):
        raise AgentVProblem(
            (*path, "execution", "target"), f"expected a target's name; found {target!r}"
        )
    talk = case.get("mode") == "conversation" or "turns" in case
    given = not talk or "input" in case or "input_messages" in case
    messages = _input(case, path, suite, files) if given else {"type": "messages", "messages": []}
    reference = _reference(case, path, files)
    sidecar = _sidecar(case, path)
    context = GraderContext(criteria, reference, files.read, files.locate)
    threshold = _pass_threshold(case, path, suite.assertions)
    assertions = _assertions(case, path, execution, suite, context)
    held = _conversation(case, path, messages, files, context) if talk else None
    if held is not None and held[1]:
        reference = "\n\n".join(filter(None, [reference, held[1]]))
    for index, item in enumerate(listed(case.get("rubrics"), (*path, "rubrics"), "rubric items")):
        assertions.append(rubric_item(item, (*path, "rubrics", index), 1.0))
    if criteria and not context.criteria_used:
        assertions.insert(0, {"type": "judge", "kind": "rubric", "rubric": criteria})
    if not assertions and not (held and any(t["assertions"] for t in held[0]["turns"])):
        raise AgentVProblem(
            path, f"test {case_id!r} has no criteria, expected_outcome, rubrics or assertions"
        )
    labels = {"agent": target, "agentv-suite": _name(suite.name)}
    spec: dict[str, Any] = {
        "targetAgent": target,
        "description": criteria or "",
        **({"conversation": held[0]} if held is not None else {"input": messages}),
        "assertions": assertions,
        "sidecar": sidecar,
    }
    if reference is not None:
        spec["reference"] = reference
    if threshold is not None:
        spec["passThreshold"] = threshold
    return {
        "apiVersion": API_VERSION,
        "kind": "EvalFixture",
        "metadata": {"name": name, "labels": labels, "annotations": {"agentv/id": case_id}},
        "spec": spec,
    }


_CASE_EXECUTION_KEYS = ("target", "evaluators")
"""What evalward reads of a test's `execution`."""


def _case_execution(case: dict[str, Any], path: PathKey) -> dict[str, Any]:
    """A test's `execution`, refused at a key evalward does not read: AgentV grades a test by
    its `execution.assert` when it has no `assert`, so skipping it would pass the replies it
    fails, and `skip_defaults` or a threshold there change the verdict too."""
    execution = case.get("execution")
    if execution is None:
        return {}
    if not isinstance(execution, dict):
        raise AgentVProblem((*path, "execution"), f"expected a mapping; found {execution!r:.80}")
    for key in execution:
        if key not in _CASE_EXECUTION_KEYS:
            hint = (
                "put its graders in the test's `assert`"
                if key == "assert"
                else ("a test's `execution` holds " + " and ".join(_CASE_EXECUTION_KEYS))
            )
            raise AgentVProblem(
                (*path, "execution", key), f"`execution.{key}` is not read by evalward; {hint}"
            )
    return execution


def _pass_threshold(case: dict[str, Any], path: PathKey, suite_graders: list[Any]) -> float | None:
    """The test's `threshold` as its fixture's `passThreshold`, if it sets one.

    AgentV passes a test when its weighted score reaches the test's `threshold`; evalward
    passes a fixture when every assertion passes, unless the fixture sets `passThreshold`
    (scoring/run_verdict.py). AgentV's `required` graders block a test whatever its score,
    which a fixture's `passThreshold` does not: a threshold beside a required grader is
    refused at its line rather than loosened.
    """
    threshold = case.get("threshold")
    if threshold is None:
        return None
    at: PathKey = (*path, "threshold")
    if not is_number(threshold) or not 0 <= threshold <= 1:
        raise AgentVProblem(at, f"a threshold is a number from 0 to 1; found {threshold!r}")
    graders = [g for key in _GRADER_KEYS for g in _listed_graders(case, key, path)] + suite_graders
    if any(_required(g) for g in graders):
        raise AgentVProblem(
            at,
            "a test threshold beside a `required` grader: AgentV fails the test when the "
            "required grader fails, whatever the score, and evalward's `passThreshold` would "
            "pass it on the score; drop `required` (the threshold decides) or the threshold "
            "(every grader must pass)",
        )
    return float(threshold)


def _required(grader: Any) -> bool:
    if not isinstance(grader, dict):
        return False
    if grader.get("required") is True:
        return True
    members = grader.get("assert", grader.get("assertions"))
    return isinstance(members, list) and any(_required(m) for m in members)


def _sidecar(case: dict[str, Any], path: PathKey) -> dict[str, Any]:
    """`metadata` and `sidecar`, for the judges."""
    sidecar: dict[str, Any] = {}
    for key in ("metadata", "sidecar"):
        value = case.get(key)
        if value is not None and not isinstance(value, dict):
            raise AgentVProblem((*path, key), f"expected a mapping; found {value!r}")
        sidecar.update(value or {})
    return sidecar


def _conversation(
    case: dict[str, Any],
    path: PathKey,
    given: dict[str, Any],
    files: _Files,
    context: GraderContext,
) -> tuple[dict[str, Any], str | None]:
    """A multi-turn test's `conversation`, its opening the test's input (system messages),
    and the reference its turns' expected outputs make."""
    listed = given.get("messages")
    opening: list[dict[str, str]] = (
        [dict(m) for m in listed]
        if isinstance(listed, list)
        else [{"role": "user", "content": "(a prompt)"}]
    )
    for key, allowed in _CONVERSATION_CHOICES.items():
        if key in case and case[key] not in allowed:
            raise AgentVProblem(
                (*path, key), f"expected {' or '.join(allowed)}; found {case[key]!r}"
            )
    spoken = [m for m in opening if m["role"] != "system"]
    if spoken:
        raise AgentVProblem(
            (*path, "input"),
            "a conversation's user messages are its `turns`; its `input` may hold system "
            f"messages only (found a {spoken[0]['role']} message)",
        )
    turns = case.get("turns")
    if not isinstance(turns, list) or not turns:
        raise AgentVProblem((*path, "turns"), "a conversation needs its `turns`: a list")
    made: dict[str, Any] = {"turns": [], "maxTurns": len(turns)}
    system = "\n\n".join(m["content"] for m in opening if m["content"].strip())
    if system:
        made["system"] = system
    expected: list[str] = []
    problems: list[AgentVProblem] = []
    for index, turn in enumerate(turns):
        at: PathKey = (*path, "turns", index)
        try:
            made["turns"].append(_turn(turn, at, files, context))
        except (AgentVProblem, AgentVProblems) as found:
            problems += found.problems if isinstance(found, AgentVProblems) else [found]
            continue
        if turn.get("expected_output") is not None:
            said = _messages(turn["expected_output"], (*at, "expected_output"), "assistant", files)
            expected.append(f"Turn {index + 1}: " + "\n".join(m["content"] for m in said))
    if problems:
        raise AgentVProblems(problems)
    return made, "\n\n".join(expected) or None


def _turn(turn: Any, path: PathKey, files: _Files, context: GraderContext) -> dict[str, Any]:
    if not isinstance(turn, dict) or "input" not in turn:
        raise AgentVProblem(path, "expected a turn: `{input, assert}`")
    for key in turn:
        if key not in _TURN_KEYS:
            raise AgentVProblem((*path, key), unread(str(key), "a turn", _TURN_KEYS))
    said = _messages(turn["input"], (*path, "input"), "user", files)
    if any(m["role"] != "user" for m in said):
        raise AgentVProblem((*path, "input"), "a turn's input is what the user says")
    checks = turn.get("assert") or []
    if not isinstance(checks, list):
        raise AgentVProblem((*path, "assert"), "expected a list of assertions")
    graders = [(item, (*path, "assert", index)) for index, item in enumerate(checks)]
    # AgentV grades a turn against the turn's own expected output, never the test's
    expected = turn.get("expected_output")
    own = None
    if expected is not None:
        replies = _messages(expected, (*path, "expected_output"), "assistant", files)
        own = "\n\n".join(m["content"] for m in replies)
    turn_context = replace(context, reference=own)
    assertions = _graded(graders, turn_context)
    context.criteria_used |= turn_context.criteria_used
    return {"user": "\n\n".join(m["content"] for m in said), "assertions": assertions}


def _assertions(
    case: dict[str, Any],
    path: PathKey,
    execution: dict[str, Any],
    suite: _Suite,
    context: GraderContext,
) -> list[dict[str, Any]]:
    """Every grader of a test (its own, its execution's and the file's) as evalward assertions;
    all the graders' problems are reported together."""
    graders: list[tuple[Any, PathKey]] = []
    for key in _GRADER_KEYS:
        for index, item in enumerate(_listed_graders(case, key, path)):
            graders.append((item, (*path, key, index)))
    evaluators = listed(execution.get("evaluators"), (*path, "execution", "evaluators"), "graders")
    for index, item in enumerate(evaluators):
        graders.append((item, (*path, "execution", "evaluators", index)))
    for index, item in enumerate(suite.assertions):
        graders.append((item, ("assertions", index)))
    return _graded(graders, context)


def _graded(graders: list[tuple[Any, PathKey]], context: GraderContext) -> list[dict[str, Any]]:
    """Each grader (with where it is) as evalward assertions, in order; the problems of all
    of them reported together."""
    assertions: list[dict[str, Any]] = []
    problems: list[AgentVProblem] = []
    for item, item_path in graders:
        try:
            assertions.extend(grader_assertions(item, item_path, context))
        except AgentVProblem as problem:
            problems.append(problem)
    if problems:
        raise AgentVProblems(problems)
    return assertions


def _listed_graders(case: dict[str, Any], key: str, path: PathKey) -> list[Any]:
    return listed(case.get(key), (*path, key), "graders")


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _name(text: str) -> str:
    name = re.sub(r"[^a-z0-9._-]+", "-", text.strip().lower()).strip("-._")
    return name or "unnamed"


def _input(case: dict[str, Any], path: PathKey, suite: _Suite, files: _Files) -> dict[str, Any]:
    key = "input" if "input" in case else "input_messages"
    if key not in case:
        raise AgentVProblem(path, "missing required field 'input' (or 'input_messages')")
    messages = _messages(case[key], (*path, key), "user", files)
    if suite.input is not None:
        messages = _messages(suite.input, ("input",), "user", files) + messages
    if len(messages) == 1 and messages[0]["role"] == "user":
        return {"type": "prompt", "payload": {"prompt": messages[0]["content"]}}
    return {"type": "messages", "messages": messages}


def _messages(value: Any, path: PathKey, role: str, files: _Files) -> list[dict[str, str]]:
    """A string, an object or a message array, as `{role, content}` messages."""
    if isinstance(value, str) or (isinstance(value, dict) and "role" not in value):
        return [{"role": role, "content": _content(value, path, files)}]
    items = [value] if isinstance(value, dict) else value
    if not isinstance(items, list):
        raise AgentVProblem(path, f"expected a string or a list of messages; found {value!r}")
    out = []
    for index, message in enumerate(items):
        where = (*path, index) if isinstance(value, list) else path
        if not isinstance(message, dict) or "role" not in message:
            raise AgentVProblem(where, "expected a message `{role, content}`")
        if message["role"] not in ("system", "user", "assistant"):
            raise AgentVProblem(
                (*where, "role"),
                f"expected role system, user or assistant; found {message['role']!r}",
            )
        calls = message.get("tool_calls")
        content = message.get("content")
        text = "" if content is None and calls else _content(content, where, files)
        if calls:
            text = "\n".join(filter(None, [text, _tool_calls(calls, (*where, "tool_calls"))]))
        out.append({"role": message["role"], "content": text})
    return out


def _tool_calls(calls: Any, path: PathKey) -> str:
    """An expected message's `tool_calls`, as the text a judge reads: each call's tool, its
    input and (when given) its output."""
    if not isinstance(calls, list):
        raise AgentVProblem(path, f"expected a list of tool calls; found {calls!r}")
    lines = []
    for index, call in enumerate(calls):
        name = call.get("tool", call.get("name")) if isinstance(call, dict) else None
        if not isinstance(name, str) or not name:
            raise AgentVProblem((*path, index), "expected a tool call `{tool, input, output}`")
        given = call.get("input", call.get("args", call.get("arguments", {})))
        line = f"tool call: {name}({json.dumps(given, ensure_ascii=False, sort_keys=True)})"
        if "output" in call:
            line += f" -> {json.dumps(call['output'], ensure_ascii=False, sort_keys=True)}"
        lines.append(line)
    return "\n".join(lines)


def _content(content: Any, path: PathKey, files: _Files) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, dict) and "role" not in content:
        return json.dumps(content, ensure_ascii=False, sort_keys=True)
    if not isinstance(content, list):
        raise AgentVProblem((*path, "content"), f"expected text or parts; found {content!r}")
    parts = []
    for index, part in enumerate(content):
        where = (*path, "content", index)
        if not isinstance(part, dict) or not isinstance(part.get("value"), str):
            raise AgentVProblem(where, "expected a content part `{type: text|file, value: ...}`")
        kind = part.get("type")
        if kind == "text":
            parts.append(part["value"])
        elif kind == "file":
            text = files.read(part["value"], (*where, "value"))
            parts.append(f'<file path="{part["value"]}">\n{text.rstrip()}\n</file>')
        else:
            raise AgentVProblem(
                (*where, "type"), f"expected content part type text or file; found {kind!r}"
            )
    return "\n".join(parts)


def _reference(case: dict[str, Any], path: PathKey, files: _Files) -> str | None:
    key = "expected_output" if "expected_output" in case else "expected_messages"
    if case.get(key) is None:
        return None
    messages = _messages(case[key], (*path, key), "assistant", files)
    return "\n\n".join(m["content"] for m in messages)
