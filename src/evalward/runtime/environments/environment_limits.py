"""How long an environment's install may take, and how large and how many files what it
leaves may be: bounds the gate's side sets, never the pull request.

For a pull request's head, each bound comes from the base branch's definition of the agent
(its `environment.timeoutSeconds`, `maxSizeMB`, `maxFiles`), or, where the base does not set
it (or has no such agent), from the action's inputs and their defaults. The head's own
definition may only lower a bound. A side the gate trusts (the base, a push to the default
branch) is bounded by its own definition, then the inputs. Every bound keeps where it came
from and how to allow more, and the limits where the environment is declared, for the message
of an install that goes over it: the pull request cannot raise a bound, so that message tells
its author where the base's is.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalward.errors import AgentRunError
from evalward.resources.agents.agent import AgentEnvironment

FIELDS = {
    "timeout": ("timeout_seconds", "timeoutSeconds", "environment-timeout-seconds"),
    "size_mb": ("max_size_mb", "maxSizeMB", "environment-max-size-mb"),
    "files": ("max_files", "maxFiles", "environment-max-files"),
}
"""Each bound: its field in AgentEnvironment, its YAML name, its action input."""


@dataclass(frozen=True)
class Cap:
    """One bound, where it came from ("environment.maxFiles of the base branch's ...") and
    how to allow more ("raise `environment.maxFiles` in ...")."""

    value: float
    source: str
    remedy: str = ""

    def told(self) -> str:
        """Its source, and how to allow more: the end of a message that it refuses."""
        more = f"; to allow more, {self.remedy}" if self.remedy else ""
        return f"its cap ({self.source}){more}"


@dataclass(frozen=True)
class EnvironmentLimits:
    timeout: Cap
    size_mb: Cap
    files: Cap
    declared: str = ""
    """Where the environment is declared (`agents/x.yaml:7`; "" where it has no line)."""

    @property
    def max_bytes(self) -> int:
        return int(self.size_mb.value * 1024 * 1024)


def input_limits(
    timeout: float = 600, size_mb: float = 2048, files: int = 200_000
) -> EnvironmentLimits:
    """The bounds the action's inputs set (their defaults when not given)."""
    values = {"timeout": timeout, "size_mb": size_mb, "files": float(files)}
    caps = {
        name: Cap(
            values[name], f"the action input `{input_name}`", f"set the action input `{input_name}`"
        )
        for name, (_, _, input_name) in FIELDS.items()
    }
    return EnvironmentLimits(caps["timeout"], caps["size_mb"], caps["files"])


def side_limits(
    agent: str,
    own: AgentEnvironment,
    gate: AgentEnvironment | None,
    *,
    judged: bool,
    inputs: EnvironmentLimits,
    own_at: str = "",
    gate_at: str = "",
    inputs_only: bool = False,
) -> EnvironmentLimits:
    """The bounds of `agent`'s environment `own` on one side. `judged`: the side is a pull
    request's head, bounded by `gate`, the base branch's definition (None: the base has no
    environment for the agent). Otherwise the side is the gate's own and `own` bounds it.
    `own_at` and `gate_at`: where each definition's `environment` is (`file:line`).
    `inputs_only`: no definition of the base's can raise the inputs' bounds (a code scorer's
    environment, a playground service's), so a refusal names only the inputs."""
    if judged:
        bound, whose, bound_at = gate, f"the base branch's definition of {agent}", gate_at
    else:
        bound, whose, bound_at = own, f"the definition of {agent}", own_at
    at = f" ({bound_at})" if bound_at else ""
    caps: dict[str, Cap] = {}
    for name, (field, yaml_name, input_name) in FIELDS.items():
        cap = getattr(inputs, name)
        if bound is not None and field in bound.model_fields_set:
            cap = Cap(
                float(getattr(bound, field)),
                f"environment.{yaml_name} of {whose}",
                f"raise `environment.{yaml_name}` in {whose}{at}",
            )
        elif not inputs_only:
            cap = Cap(
                cap.value,
                cap.source,
                f"set `environment.{yaml_name}` in {whose}{at}, or the action input `{input_name}`",
            )
        if judged and field in own.model_fields_set and getattr(own, field) < cap.value:
            cap = Cap(
                float(getattr(own, field)),
                f"environment.{yaml_name} of {agent}",
                f"raise `environment.{yaml_name}` of {agent}{f' ({own_at})' if own_at else ''} "
                f"(up to {cap.value:,g}, {cap.source})",
            )
        caps[name] = cap
    return EnvironmentLimits(caps["timeout"], caps["size_mb"], caps["files"], own_at)


def over(files: int, size: int, limits: EnvironmentLimits, what: str = "the environment") -> None:
    """AgentRunError when `files` entries or `size` bytes of `what` go over `limits`: where
    the environment is declared, the cap, whose it is and how to allow more."""
    at = f"{limits.declared}: " if limits.declared else ""
    if files > limits.files.value:
        raise AgentRunError(
            f"{at}{what} holds more than {limits.files.value:,.0f} files, folders and "
            f"links, {limits.files.told()}"
        )
    if size > limits.max_bytes:
        raise AgentRunError(
            f"{at}{what} takes more than {limits.size_mb.value:,g} MB "
            f"({size / 1024 / 1024:,.1f} MB so far), {limits.size_mb.told()}"
        )
