"""The action's inputs, read from `INPUT_*` environment variables and validated."""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from pydantic_core import ErrorDetails

from evalward.errors import ConfigError, printable
from evalward.files.inside import NAME_MAX, overlong_name
from evalward.resources.gate_policy import RegressionPolicy
from evalward.rundata.cache_mode import CacheMode
from evalward.rundata.sides import GateConfig
from evalward.rundata.spending import Budget


class CommentMode(StrEnum):
    """When the pull request gets the comment (input `comment`)."""

    always = "always"
    on_failure = "on-failure"
    never = "never"


class Isolation(StrEnum):
    """How programs from the pull request run (input `agent-isolation`)."""

    user = "user"
    off = "off"


class BypassScope(StrEnum):
    """What one application of the bypass label covers (input `bypass-scope`)."""

    sha = "sha"
    pr = "pr"


class OnMissingSecrets(StrEnum):
    """What a gate does when a provider key is missing (input `on-missing-secrets`)."""

    fail = "fail"
    skip = "skip"


_PATTERN_WORDS = {
    "shard": "i/n, the part of the matrix this job runs (e.g. 2/4, `${{ matrix.shard }}/4`)",
    "agent-user": "auto, a user's name from /etc/passwd (up to 32 letters, digits, `.`, `_` or "
    "`-`) or a uid of 1000 or more",
    "base-cache": "the name of an artifact, without any of the characters GitHub refuses "
    'in one (`"`, `:`, `<`, `>`, `|`, `*`, `?`, `\\`, `/`, a line break)',
    "agent-env": "names of environment variables (letters, digits and `_`) with commas or "
    "spaces between them",
}
"""What an input's pattern means, said in words where a mistake would otherwise be answered
with the regular expression it failed."""


class Settings(BaseModel):
    """One field per input of action.yml; the field's alias is the input's name. A number
    input is finite: `inf` (or `1e400`) would pass every lower bound and mean no bound."""

    model_config = ConfigDict(
        extra="forbid", populate_by_name=True, frozen=True, allow_inf_nan=False
    )

    github_token: SecretStr = Field(default=SecretStr(""), alias="github-token")
    """Shown as `**********` wherever the settings are printed."""
    bypass_label: str = Field(default="force-eval-bypass", alias="bypass-label", min_length=1)
    bypass_scope: BypassScope = Field(default=BypassScope.sha, alias="bypass-scope")
    mock_script: str = Field(default="", alias="mock-script")
    output_dir: str = Field(default=".evalward/out", alias="output-dir")
    parallel: int = Field(default=8, alias="parallel", ge=1, le=1024)
    comment: CommentMode = Field(default=CommentMode.always, alias="comment")
    comment_template: str = Field(default="", alias="comment-template")
    check_run: bool = Field(default=False, alias="check-run")
    allow_untrusted_head: bool = Field(default=False, alias="allow-untrusted-head")
    agent_isolation: Isolation = Field(default=Isolation.user, alias="agent-isolation")
    agent_user: str = Field(
        default="auto",
        alias="agent-user",
        pattern=r"^([A-Za-z_][A-Za-z0-9_.-]{0,31}|[1-9][0-9]{3,8})$",
    )
    agent_env: str = Field(default="", alias="agent-env", pattern=r"^[\sA-Za-z0-9_,]*$")
    environment_timeout_seconds: float = Field(
        default=600, alias="environment-timeout-seconds", gt=0
    )
    environment_max_size_mb: float = Field(default=2048, alias="environment-max-size-mb", gt=0)
    environment_max_files: int = Field(default=200_000, alias="environment-max-files", ge=1)
    on_missing_secrets: OnMissingSecrets = Field(
        default=OnMissingSecrets.fail, alias="on-missing-secrets"
    )
    pr: int | None = Field(default=None, alias="pr", ge=1)
    gate_config: GateConfig = Field(default=GateConfig.base, alias="gate-config")
    run_all: bool = Field(default=False, alias="run-all")
    fail_on_regression: RegressionPolicy = Field(
        default=RegressionPolicy.none, alias="fail-on-regression"
    )
    max_model_calls: int | None = Field(default=None, alias="max-model-calls", ge=1)
    max_cost_usd: float | None = Field(default=None, alias="max-cost-usd", gt=0)
    allow_incomplete: bool = Field(default=False, alias="allow-incomplete")
    cache: CacheMode = Field(default=CacheMode.read_write, alias="cache")
    cache_dir: str = Field(default=".evalward/cache", alias="cache-dir")
    base_cache: str = Field(default="", alias="base-cache", pattern=r'^[^"\\/:<>|*?\r\n]*$')
    shard: str = Field(default="", alias="shard", pattern=r"^\s*(\d+\s*/\s*\d+)?\s*$")
    merge: str = Field(default="", alias="merge")
    shard_key: str = Field(default="", alias="shard-key")

    @field_validator(
        "check_run", "allow_untrusted_head", "run_all", "allow_incomplete", mode="before"
    )
    @classmethod
    def _yaml_boolean(cls, value: object) -> object:
        """Inputs arrive as strings; accept what a workflow author writes for a boolean."""
        if isinstance(value, str):
            lowered = value.strip().lower()
            if lowered in ("true", "yes", "on", "1"):
                return True
            if lowered in ("false", "no", "off", "0"):
                return False
            raise ValueError("expected true or false")
        return value

    @field_validator("mock_script", "output_dir", "comment_template", "cache_dir")
    @classmethod
    def _nameable(cls, value: str) -> str:
        """A path input whose every name a file system can hold: the machine refuses to look
        a longer one up (ENAMETOOLONG), where a missing file is merely not there."""
        name = overlong_name(value)
        if name is not None:
            raise ValueError(
                f"a name of {len(os.fsencode(name))} bytes ({name[:40]}…), longer than a file "
                f"or folder's name can be ({NAME_MAX})"
            )
        return value

    def unread(self, event_name: str) -> list[str]:
        """An input given that the others (or the job's event, `event_name`) leave without
        effect, each said as a warning with what it needs and what to do: the gate decides as
        it would without it, so it is not refused, but a job that goes on as if it mattered
        is told."""
        said = []
        if self.pr is not None and event_name != "workflow_dispatch":
            said.append(
                f"action input `pr: {self.pr}` is read on `workflow_dispatch` alone, and this "
                f"job's event is `{event_name or 'none'}`, which names what it gates itself, "
                "so it changes nothing; give it from a `workflow_dispatch`'s inputs, or remove it"
            )
        if self.shard_key and not (self.shard or self.merge):
            said.append(
                "action input `shard-key` is given without `shard` or `merge`, so this job "
                "seals and checks nothing with it and runs every Eval itself; give it beside "
                "`shard: i/n` in each shard's job and `merge:` in the job that merges their "
                "parts (see docs/github.md), or remove it"
            )
        if self.allow_incomplete and not Budget(self.max_model_calls, self.max_cost_usd).limited:
            said.append(
                "action input `allow-incomplete: true` is given without `max-model-calls` or "
                "`max-cost-usd`: it lets the gate pass without the runs a budget leaves out, "
                "and with no budget none is left out, so it changes nothing; give the budget "
                "it is for, or remove it"
            )
        if self.base_cache and not self.cache.reads:
            said.append(
                f"action input `base-cache` is given with `cache: {self.cache.value}`, which "
                "reads no result cache, so no artifact is fetched and every run is made; "
                "give `cache: read-write` (or `read-only`) beside it, or remove it"
            )
        return said

    @property
    def agent_env_names(self) -> list[str]:
        """`agent-env` as names: commas or whitespace between them."""
        return self.agent_env.replace(",", " ").split()

    @classmethod
    def input_names(cls) -> list[str]:
        return [f.alias or name for name, f in cls.model_fields.items()]

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """GitHub passes input `foo-bar` as INPUT_FOO-BAR; action.yml maps it to INPUT_FOO_BAR.
        Every input that is wrong is said at once: one CI round each would be slow to fix."""
        wrong = cls._unknown_inputs(env)
        values: dict[str, Any] = {}
        for name in cls.input_names():
            upper = name.upper()
            raw = env.get(f"INPUT_{upper.replace('-', '_')}", env.get(f"INPUT_{upper}", ""))
            if raw.strip() != "":
                values[name] = raw.strip()
        if "shard" in values and "merge" in values:
            wrong.append(
                "action inputs `shard` and `merge` are both given, and a job either runs one "
                "part of the plan (`shard: i/n`) or merges the parts the shard jobs wrote "
                "(`merge: <glob>`), never both: `merge` would run and `shard` be ignored. Give "
                "each matrix job `shard` alone and the job after them `merge` alone (see "
                "examples/workflows/sharded.yml)"
            )
        try:
            settings = cls.model_validate(values)
        except ValidationError as exc:
            said: dict[str, str] = {}
            for error in exc.errors():
                said.setdefault(str(error["loc"][0]), _input_problem(error))
            wrong += list(said.values())
        if len(wrong) == 1:
            raise ConfigError(wrong[0])
        if wrong:
            listed = "\n".join(f"  {line}" for line in wrong)
            raise ConfigError(f"{len(wrong)} action inputs are wrong:\n{listed}")
        return settings

    @classmethod
    def _unknown_inputs(cls, env: Mapping[str, str]) -> list[str]:
        """Each input action.yml does not have: GitHub passes a name under `with:` it does
        not know on to the container (`INPUT_MAX-COST-USDD`) with no more than a warning, so
        a misspelt `max-cost-usd` or `mock-script` ran with no budget or with real models."""
        known = cls.input_names()
        found: list[str] = []
        for variable in sorted(env):
            if not variable.startswith("INPUT_"):
                continue
            name = variable.removeprefix("INPUT_").lower().replace("_", "-")
            if name not in known:
                close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
                hint = f"did you mean `{close[0]}`? " if close else ""
                found.append(
                    f"action input `{printable(name)}`: evalward has no such input, so its "
                    f"value would be ignored; {hint}Write one of the inputs action.yml lists "
                    "(docs/github.md) under the step's `with:`, or remove it"
                )
        return found


def _input_problem(error: ErrorDetails) -> str:
    """What is wrong with one input's value, in the words of its own check."""
    name = str(error["loc"][0])
    said = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "string_pattern_mismatch" and name in _PATTERN_WORDS:
        said = f"expected {_PATTERN_WORDS[name]}"
    return f"action input `{name}`: {said} (got {error.get('input')!r})"
