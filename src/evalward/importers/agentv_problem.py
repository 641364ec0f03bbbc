"""The mistakes found in an AgentV file, each at its path in the document."""

from __future__ import annotations

from evalward.errors import ConfigError
from evalward.resources.yamlsource import PathKey


class AgentVProblem(ConfigError):
    """A mistake at `path` (keys and indexes into the AgentV document)."""

    def __init__(self, path: PathKey, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


class AgentVProblems(ConfigError):
    """Every mistake found in one test case (each of its graders is checked)."""

    def __init__(self, problems: list[AgentVProblem]) -> None:
        super().__init__("; ".join(p.message for p in problems))
        self.problems = problems
