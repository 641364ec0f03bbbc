"""The action's inputs, read from `INPUT_*` environment variables and validated."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalward.errors import ConfigError


class Settings(BaseModel):
    """One field per input of action.yml; the field's alias is the input's name."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    github_token: str = Field(default="", alias="github-token")
    bypass_label: str = Field(default="force-eval-bypass", alias="bypass-label", min_length=1)
    mock_script: str = Field(default="", alias="mock-script")
    output_dir: str = Field(default=".evalward/out", alias="output-dir")
    parallel: int = Field(default=8, alias="parallel", ge=1, le=1024)

    @classmethod
    def input_names(cls) -> list[str]:
        return [f.alias or name for name, f in cls.model_fields.items()]

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """GitHub passes input `foo-bar` as INPUT_FOO-BAR; action.yml maps it to INPUT_FOO_BAR."""
        values: dict[str, Any] = {}
        for name in cls.input_names():
            upper = name.upper()
            raw = env.get(f"INPUT_{upper.replace('-', '_')}", env.get(f"INPUT_{upper}", ""))
            if raw.strip() != "":
                values[name] = raw.strip()
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            first = exc.errors()[0]
            name = str(first["loc"][0])
            raise ConfigError(
                f"action input `{name}`: {first['msg']} (got {first.get('input')!r})"
            ) from None
