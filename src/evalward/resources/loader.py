"""Discover resource documents in a tree, validate them, and cross-check their references."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from evalward.errors import Problem, ResourceError
from evalward.resources.models import (
    API_VERSIONS,
    KINDS,
    Agent,
    Eval,
    EvalFixture,
    JudgeCalibration,
)
from evalward.resources.yamlsource import Document, PathKey, YamlSyntaxError, parse_documents

DEFAULT_EXCLUDES = frozenset(
    {".git", "node_modules", ".venv", "venv", ".tox", ".evalward", "__pycache__", ".mypy_cache"}
)
MAX_FILE_BYTES = 5 * 1024 * 1024

R = TypeVar("R", bound=BaseModel)


@dataclass(frozen=True)
class Located(Generic[R]):
    """A validated resource and where it was defined (path relative to the root)."""

    resource: R
    file: str
    line: int


@dataclass
class ResourceSet:
    """Every resource found under one root, by kind and name."""

    root: Path
    agents: dict[str, Located[Agent]] = field(default_factory=dict)
    fixtures: dict[str, Located[EvalFixture]] = field(default_factory=dict)
    evals: dict[str, Located[Eval]] = field(default_factory=dict)
    calibrations: dict[str, Located[JudgeCalibration]] = field(default_factory=dict)
    warnings: list[Problem] = field(default_factory=list)

    def fixtures_of(self, evaluation: Eval) -> list[Located[EvalFixture]]:
        """The union of the Eval's label selector and explicit list, in a stable order."""
        selected: dict[str, Located[EvalFixture]] = {}
        selector = evaluation.spec.fixture_selector
        if selector is not None and selector.match_labels:
            for name, fixture in self.fixtures.items():
                labels = fixture.resource.metadata.labels
                if all(labels.get(k) == v for k, v in selector.match_labels.items()):
                    selected[name] = fixture
        for name in evaluation.spec.fixtures:
            if name in self.fixtures:
                selected[name] = self.fixtures[name]
        return [selected[name] for name in sorted(selected)]

    def evals_targeting(self, agent: str) -> list[Located[Eval]]:
        return [e for _, e in sorted(self.evals.items()) if e.resource.spec.target_agent == agent]


def load_resources(root: Path, files: Iterable[Path] | None = None) -> ResourceSet:
    """Load every resource under `root`; raise one ResourceError listing every problem."""
    problems: list[Problem] = []
    result = ResourceSet(root=root)
    paths = sorted(files) if files is not None else sorted(discover(root))
    for path in paths:
        rel = _relative(path, root)
        for located in _load_file(path, rel, problems):
            _add(result, located, problems)
    _cross_check(result, problems)
    if problems:
        raise ResourceError(problems)
    return result


def discover(root: Path) -> Iterator[Path]:
    """Every `*.yaml` / `*.yml` under root, skipping VCS, dependency and cache folders."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in DEFAULT_EXCLUDES)
        for name in filenames:
            if name.endswith((".yaml", ".yml")):
                yield Path(dirpath) / name


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def _load_file(path: Path, rel: str, problems: list[Problem]) -> list[Located[BaseModel]]:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            problems.append(
                Problem(rel, None, None, "", f"file is larger than {MAX_FILE_BYTES} bytes")
            )
            return []
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        if _mentions_resources(path.read_bytes()):
            problems.append(Problem(rel, None, None, "", "file is not valid UTF-8"))
        return []
    except OSError as exc:
        problems.append(Problem(rel, None, None, "", f"cannot read file: {exc.strerror}"))
        return []
    if not _mentions_resources(text.encode()):
        return []
    try:
        documents = parse_documents(text)
    except YamlSyntaxError as exc:
        problems.append(Problem(rel, exc.line, exc.column, "", str(exc)))
        return []
    loaded: list[Located[BaseModel]] = []
    for document in documents:
        resource = _validate(document, rel, problems)
        if resource is not None:
            loaded.append(Located(resource, rel, document.start_line))
    return loaded


def _mentions_resources(raw: bytes) -> bool:
    """Cheap pre-filter: a file that never says `apiVersion` holds none of our kinds."""
    return b"apiVersion" in raw


def _validate(document: Document, rel: str, problems: list[Problem]) -> BaseModel | None:
    data = document.data
    if not isinstance(data, dict) or data.get("apiVersion") not in API_VERSIONS:
        return None
    kind = data.get("kind")
    model = KINDS.get(kind) if isinstance(kind, str) else None
    if model is None:
        line, column = document.locate(("kind",))
        hint = _did_you_mean(str(kind), KINDS)
        problems.append(
            Problem(
                rel,
                line,
                column,
                "kind",
                f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}{hint}",
            )
        )
        return None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors():
            problems.append(_problem_from(error, document, rel, model))
        return None


def _problem_from(error: object, document: Document, rel: str, model: type[BaseModel]) -> Problem:
    assert isinstance(error, dict)
    loc: PathKey = tuple(
        part for part in error["loc"] if isinstance(part, int) or not _is_union_tag(part)
    )
    line, column = document.locate(loc)
    path = _render_path(loc)
    message = str(error["msg"])
    if error["type"] == "extra_forbidden":
        message = f"unknown field {loc[-1]!r}{_did_you_mean(str(loc[-1]), _siblings(model, loc))}"
    elif error["type"] == "missing":
        message = f"missing required field {loc[-1]!r}"
    elif error["type"] == "union_tag_invalid":
        message = message.replace("Input tag", "assertion type")
    else:
        found = error.get("input")
        if not isinstance(found, dict | list):
            message = f"{message} (found {found!r})"
    message = message.replace("Value error, ", "")
    return Problem(rel, line, column, path, message)


def _is_union_tag(part: str | int) -> bool:
    """pydantic inserts the discriminator value into `loc`; it is not a YAML key."""
    return isinstance(part, str) and part in _ASSERTION_TAGS


_ASSERTION_TAGS = frozenset(
    {
        "contains",
        "notContains",
        "regex",
        "toolCalled",
        "toolNotCalled",
        "toolSequence",
        "equals",
        "jsonSchema",
        "toolArgs",
        "trajectory",
        "maxSteps",
        "cost",
        "latency",
        "judge",
    }
)


def _render_path(loc: PathKey) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def _siblings(model: type[BaseModel], loc: PathKey) -> list[str]:
    """Valid field names at the level of `loc`'s last part, for did-you-mean."""
    current: type[BaseModel] | None = model
    for part in loc[:-1]:
        if current is None or isinstance(part, int):
            continue
        field_info = next(
            (f for n, f in current.model_fields.items() if (f.alias or n) == part), None
        )
        current = _model_in(field_info.annotation) if field_info is not None else None
    if current is None:
        return []
    return [f.alias or n for n, f in current.model_fields.items()]


def _model_in(annotation: object) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _did_you_mean(word: str, candidates: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _add(result: ResourceSet, located: Located[BaseModel], problems: list[Problem]) -> None:
    resource = located.resource
    table: dict[str, Located[BaseModel]]
    if isinstance(resource, Agent):
        table = result.agents  # type: ignore[assignment]
    elif isinstance(resource, EvalFixture):
        table = result.fixtures  # type: ignore[assignment]
    elif isinstance(resource, Eval):
        table = result.evals  # type: ignore[assignment]
    elif isinstance(resource, JudgeCalibration):
        table = result.calibrations  # type: ignore[assignment]
    else:  # pragma: no cover - KINDS holds only these
        return
    name = resource.metadata.name
    kind = resource.kind
    if name in table:
        first = table[name]
        problems.append(
            Problem(
                located.file,
                located.line,
                1,
                "metadata.name",
                f"duplicate {kind} {name!r}; first defined at {first.file}:{first.line}",
            )
        )
        return
    table[name] = located


def _cross_check(result: ResourceSet, problems: list[Problem]) -> None:
    for name, located in sorted(result.evals.items()):
        spec = located.resource.spec
        if spec.target_agent not in result.agents:
            problems.append(
                Problem(
                    located.file,
                    located.line,
                    1,
                    "spec.targetAgent",
                    f"Eval {name!r} targets agent {spec.target_agent!r}, which is not defined"
                    f"{_did_you_mean(spec.target_agent, result.agents)}",
                )
            )
        for fixture in spec.fixtures:
            if fixture not in result.fixtures:
                problems.append(
                    Problem(
                        located.file,
                        located.line,
                        1,
                        "spec.fixtures",
                        f"Eval {name!r} lists fixture {fixture!r}, which is not defined"
                        f"{_did_you_mean(fixture, result.fixtures)}",
                    )
                )
        if spec.judge.calibration and spec.judge.calibration not in result.calibrations:
            problems.append(
                Problem(
                    located.file,
                    located.line,
                    1,
                    "spec.judge.calibration",
                    f"Eval {name!r} names JudgeCalibration {spec.judge.calibration!r}, "
                    "which is not defined",
                )
            )
        if not result.fixtures_of(located.resource):
            result.warnings.append(
                Problem(located.file, located.line, 1, "spec", f"Eval {name!r} selects no fixture")
            )
