"""The YAML resource kinds (Agent, EvalFixture, Eval, JudgeCalibration), which
`evalward.definitions.loader` loads."""

from evalward.resources.models import (
    Agent,
    Assertion,
    Eval,
    EvalFixture,
    JudgeCalibration,
    Severity,
)
from evalward.resources.resource_set import Located, ResourceSet

__all__ = [
    "Agent",
    "Assertion",
    "Eval",
    "EvalFixture",
    "JudgeCalibration",
    "Located",
    "ResourceSet",
    "Severity",
]
