"""The repository config file `evalward.yaml` at the repository root: where resources live
(`roots`), what to skip (`exclude`), the defaults every Eval inherits unless it sets the field
itself, and attribution (docs/resources.md, "evalward.yaml", shows one). The file is optional;
without it evalward scans the whole repository with the built-in excludes and no defaults.

A pull request's gate reads this file from the base branch, never from the pull request.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import Field, PrivateAttr, ValidationError, field_validator

from evalward.errors import Problem, ResourceError, YamlSyntaxError
from evalward.files.inside import leads_outside
from evalward.resources.common import Model, mode_alone
from evalward.resources.reading.problems import problems_from_validation
from evalward.resources.reading.yamlsource import (
    MAX_FILE_BYTES,
    Document,
    PathKey,
    decode,
    parse_documents,
    too_large,
)
from evalward.rundata.cache_mode import CacheMode

CONFIG_FILE = "evalward.yaml"


class Defaults(Model):
    """Values an Eval (or an AgentV file) inherits when it does not set them."""

    target_agent: str | None = None
    judge: dict[str, Any] = Field(default_factory=dict)
    scoring: dict[str, Any] = Field(default_factory=dict)
    execution: dict[str, Any] = Field(default_factory=dict)


class AttributionMode(StrEnum):
    """When a pull request's gate looks for the hunk that caused a regression."""

    off = "off"
    on_block = "on-block"
    """Only when the gate blocks the pull request."""
    always = "always"
    """Whenever a fixture regressed, blocking or not."""


class AttributionSettings(Model):
    """Attribution of a regression to the hunks of the change that caused it."""

    mode: AttributionMode = Field(
        AttributionMode.on_block,
        description=(
            "off, on-block (the default: when the gate blocks) or always (whenever a fixture "
            "regressed)."
        ),
    )
    budget: float = Field(
        0.5,
        gt=0,
        le=10,
        description=(
            "The model calls attribution may spend, as a fraction of the gate's own run "
            "(0.5: half as many as the run made)."
        ),
    )
    max_minutes: float = Field(
        30,
        gt=0,
        le=360,
        description=(
            "How long attribution may take, in minutes, from its start: no variant starts "
            "after that, and one still running is stopped there."
        ),
    )


class RepoConfig(Model):
    """The parsed `evalward.yaml`."""

    roots: list[str] = Field(default_factory=lambda: ["."])
    exclude: list[str] = Field(
        default_factory=list,
        description=(
            "Globs (fnmatch, matched against paths relative to the root and against base names)."
        ),
    )
    defaults: Defaults = Field(default_factory=Defaults)
    providers: dict[str, Any] = Field(
        default_factory=dict,
        description="Model provider settings; the provider layer validates this section.",
    )
    pricing: dict[str, Any] = Field(
        default_factory=dict,
        description="Token prices per model; the provider layer validates this section.",
    )
    cache: dict[str, Any] = Field(
        default_factory=dict,
        description="Result / response cache settings; the provider layer validates this section.",
    )
    attribution: AttributionSettings = Field(default_factory=AttributionSettings)

    _document: Document | None = PrivateAttr(default=None)

    def locate(self, loc: tuple[str | int, ...]) -> tuple[int | None, int | None]:
        """The line and column of a key path of the file this was read from, when known."""
        return self._document.locate(loc) if self._document is not None else (None, None)

    def _sections(self) -> dict[str, dict[str, Any]]:
        """The sections of an Eval's `spec` that `defaults` fill in, with their values."""
        defaults = self.defaults
        return {
            "judge": defaults.judge,
            "scoring": defaults.scoring,
            "execution": defaults.execution,
        }

    def eval_with_defaults(self, data: dict[str, Any]) -> dict[str, Any]:
        """An Eval document with `defaults` filled in under the fields it leaves unset."""
        sections = self._sections()
        if not any(sections.values()) or not isinstance(data.get("spec"), dict):
            return data
        spec = dict(data["spec"])
        for key, values in sections.items():
            if values and (isinstance(spec.get(key), dict) or key not in spec):
                spec[key] = {**values, **(spec.get(key) or {})}
        return {**data, "spec": spec}

    def default_behind(self, loc: PathKey, own: dict[str, Any]) -> PathKey | None:
        """The path in this file of the default an Eval holds at `loc` (`eval_with_defaults`),
        when the Eval (`own`, as its file has it) does not set that field itself; else None.
        A problem there is this file's to fix, not the Eval's."""
        if len(loc) < 3 or loc[0] != "spec" or not isinstance(loc[2], str):
            return None
        section, key = loc[1], loc[2]
        values = self._sections().get(str(section), {})
        spec = own.get("spec")
        if key not in values or not isinstance(spec, dict):
            return None
        mine = spec.get(section)
        if section in spec and not isinstance(mine, dict):
            return None  # not merged: the Eval's own value stands
        if isinstance(mine, dict) and key in mine:
            return None
        return ("defaults", section, *loc[2:])

    def searched(self) -> str:
        """Where resources are looked for, in words: "the whole repository" or the roots,
        with the excludes ("evals/, agents/ (`roots` in evalward.yaml), less legacy/**")."""
        if "roots" in self.model_fields_set and self.roots != ["."]:
            where = ", ".join(f"{root.rstrip('/')}/" for root in self.roots)
            where += f" (`roots` in {CONFIG_FILE})"
        else:
            where = "the whole repository"
        if self.exclude:
            where += f", less {', '.join(self.exclude)} (`exclude`)"
        return where

    @field_validator("attribution", mode="before")
    @classmethod
    def _attribution_mapping(cls, value: object) -> object:
        return mode_alone("attribution", value, AttributionMode)

    @field_validator("cache", mode="before")
    @classmethod
    def _cache_mapping(cls, value: object) -> object:
        return mode_alone("cache", value, CacheMode)

    @field_validator("roots")
    @classmethod
    def _inside(cls, roots: list[str]) -> list[str]:
        if not roots:  # else nothing is searched, and the message says so without saying why
            raise ValueError(
                "`roots` lists no folder; list the folders that hold your resources, or remove "
                "`roots` to search the whole repository"
            )
        for root in roots:
            if "\0" in root:  # no path holds one: the machine refuses to look it up
                raise ValueError(f"root {root!r} holds a NUL character, which no folder's name can")
            parts = Path(root).parts
            if Path(root).is_absolute() or ".." in parts:
                raise ValueError(f"root {root!r} must be a folder inside the repository")
        return roots


def load_config(root: Path) -> RepoConfig:
    """Read `evalward.yaml` under root (defaults when absent); every mistake is located."""
    path = root / CONFIG_FILE
    if path.is_symlink() and leads_outside(root, path):
        raise _unread(
            "the file is a symbolic link to a file outside the repository; make it a file of "
            "the repository"
        )
    if not path.is_file():
        if path.exists() or path.is_symlink():  # ignored, its settings would silently be lost
            raise _unread(
                "not a file (a folder, or a symbolic link that leads to no file), so its "
                "settings cannot be read; make it a file, or remove it"
            )
        return RepoConfig()
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise _unread(too_large(path.stat().st_size))
        data = path.read_bytes()
    except OSError as exc:
        raise _unread(f"cannot read file: {exc.strerror}") from None
    return parse_config(data)


def _unread(message: str, line: int | None = None, column: int | None = None) -> ResourceError:
    """Why `evalward.yaml` as a whole cannot be read (at `line` and `column`, when known)."""
    return ResourceError([Problem(CONFIG_FILE, line, column, "", message)])


def parse_config(data: bytes | None) -> RepoConfig:
    """`evalward.yaml` from its bytes (None: no file, the defaults), e.g. as a commit has it."""
    if data is None:
        return RepoConfig()
    if len(data) > MAX_FILE_BYTES:
        raise _unread(too_large(len(data)))
    try:
        documents = parse_documents(decode(data))
    except YamlSyntaxError as exc:
        raise _unread(str(exc), exc.line, exc.column) from None
    if not documents or documents[0].data is None:
        return RepoConfig()
    if len(documents) > 1:
        raise _unread("expected one YAML document", documents[1].start_line, 1)
    document = documents[0]
    try:
        config = RepoConfig.model_validate(document.data)
    except ValidationError as exc:
        raise ResourceError(
            problems_from_validation(exc, document, CONFIG_FILE, RepoConfig)
        ) from None
    config._document = document
    return config
