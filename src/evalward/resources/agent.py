"""The Agent kind: a declarative agent run by evalward's tool loop."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from evalward.resources.common import Metadata, Model


class ToolMock(Model):
    """A canned tool result: the tool is never executed."""

    output: str | dict[str, Any] | list[Any]


class Tool(Model):
    """A tool offered to a declarative agent's model.

    `type` is seed 003's short form (`{ type: bash, enabled: false }`); `name` wins when both
    are given.
    """

    name: str | None = Field(default=None, pattern=r"^[a-zA-Z0-9_-]{1,64}$")
    type: str | None = None
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    enabled: bool = True
    mock: ToolMock | None = None

    @model_validator(mode="after")
    def _has_a_name(self) -> Tool:
        if not self.name and not self.type:
            raise ValueError("a tool needs a `name` (or seed 003's short form `type`)")
        return self

    @property
    def tool_name(self) -> str:
        return self.name or self.type or ""


class AgentSpec(Model):
    models: list[str] = Field(default_factory=list)
    system: str | None = None
    system_file: str | None = None
    tools: list[Tool] = Field(default_factory=list)
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_turns: int = Field(default=10, ge=1, le=200)
    max_tokens: int | None = Field(default=None, ge=1)
    watch: list[str] = Field(default_factory=list)

    @field_validator("models")
    @classmethod
    def _model_ids(cls, models: list[str]) -> list[str]:
        for model in models:
            if "/" not in model:
                raise ValueError(
                    f"model id {model!r} must be `provider/model`, e.g. `openai/gpt-4.1-mini`"
                )
        return models

    @model_validator(mode="after")
    def _declarative(self) -> AgentSpec:
        if not self.models:
            raise ValueError("a declarative agent needs `models: [provider/model, ...]`")
        if self.system is not None and self.system_file is not None:
            raise ValueError("set either `system` or `systemFile`, not both")
        names = [t.tool_name for t in self.tools]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate tool names: {', '.join(dupes)}")
        return self


class Agent(Model):
    api_version: str
    kind: Literal["Agent"]
    metadata: Metadata
    spec: AgentSpec
