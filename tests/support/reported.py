"""A `ProblemReporter` (resources/resource_set.py) that keeps what a check across resources
reports, for the tests of those checks to read: each report's resource, field and message."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evalward.resources.reading.yamlsource import PathKey
from evalward.resources.resource_set import Located


@dataclass(frozen=True)
class Report:
    located: Located[Any]
    loc: PathKey
    message: str
    warning: bool
    consequence: bool

    @property
    def name(self) -> str:
        """The reported resource's metadata.name."""
        name: str = self.located.resource.metadata.name
        return name


@dataclass
class Reported:
    """Every report, in order; `problems` and `warnings` apart."""

    reports: list[Report] = field(default_factory=list)

    def __call__(
        self,
        located: Located[Any],
        loc: PathKey,
        message: str,
        *,
        warning: bool = False,
        consequence: bool = False,
    ) -> None:
        self.reports.append(Report(located, loc, message, warning, consequence))

    @property
    def problems(self) -> list[Report]:
        return [r for r in self.reports if not r.warning]

    @property
    def warnings(self) -> list[Report]:
        return [r for r in self.reports if r.warning]
