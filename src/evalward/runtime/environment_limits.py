"""How long an environment's install may take, and how large and how many files what it
leaves may be: bounds the gate's side sets, never the pull request.

For a pull request's head, each bound comes from the base branch's definition of the agent
(its `environment.timeoutSeconds`, `maxSizeMB`, `maxFiles`), or, where the base does not set
it (or has no such agent), from the action's inputs and their defaults. The head's own
definition may only lower a bound. A side the gate trusts (the base, a push to the default
branch) is bounded by its own definition, then the inputs. Every bound keeps where it came
from, for the message of an install that goes over it.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalward.errors import AgentRunError
from evalward.resources.agent import AgentEnvironment

FIELDS = {
    "timeout": ("timeout_seconds", "timeoutSeconds", "environment-timeout-seconds"),
    "size_mb": ("max_size_mb", "maxSizeMB", "environment-max-size-mb"),
    "files": ("max_files", "maxFiles", "environment-max-files"),
}
"""Each bound: its field in AgentEnvironment, its YAML name, its action input."""


@dataclass(frozen=True)
class Cap:
    """One bound and where it came from ("environment.maxFiles of the base branch's ...")."""

    value: float
    source: str


@dataclass(frozen=True)
class EnvironmentLimits:
    timeout: Cap
    size_mb: Cap
    files: Cap

    @property
    def max_bytes(self) -> int:
        return int(self.size_mb.value * 1024 * 1024)


def input_limits(
    timeout: float = 600, size_mb: float = 4096, files: int = 200_000
) -> EnvironmentLimits:
    """The bounds the action's inputs set (their defaults when not given)."""
    values = {"timeout": timeout, "size_mb": size_mb, "files": float(files)}
    return EnvironmentLimits(
        **{name: Cap(values[name], f"the action input `{FIELDS[name][2]}`") for name in FIELDS}
    )


def side_limits(
    agent: str,
    own: AgentEnvironment,
    gate: AgentEnvironment | None,
    *,
    judged: bool,
    inputs: EnvironmentLimits,
) -> EnvironmentLimits:
    """The bounds of `agent`'s environment `own` on one side. `judged`: the side is a pull
    request's head, bounded by `gate`, the base branch's definition (None: the base has no
    environment for the agent). Otherwise the side is the gate's own and `own` bounds it."""
    bound, whose = (gate, f"the base branch's definition of {agent}") if judged else (own, agent)
    caps: dict[str, Cap] = {}
    for name, (field, yaml_name, _) in FIELDS.items():
        cap = getattr(inputs, name)
        if bound is not None and field in bound.model_fields_set:
            cap = Cap(float(getattr(bound, field)), f"environment.{yaml_name} of {whose}")
        if judged and field in own.model_fields_set and getattr(own, field) < cap.value:
            cap = Cap(float(getattr(own, field)), f"environment.{yaml_name} of {agent}")
        caps[name] = cap
    return EnvironmentLimits(**caps)


def over(files: int, size: int, limits: EnvironmentLimits) -> None:
    """AgentRunError when `files` entries or `size` bytes go over `limits`."""
    if files > limits.files.value:
        raise AgentRunError(
            f"the environment holds more than {limits.files.value:,.0f} files, folders and "
            f"links, its cap ({limits.files.source})"
        )
    if size > limits.max_bytes:
        raise AgentRunError(
            f"the environment takes more than {limits.size_mb.value:,g} MB "
            f"({size / 1024 / 1024:,.1f} MB so far), its cap ({limits.size_mb.source})"
        )
