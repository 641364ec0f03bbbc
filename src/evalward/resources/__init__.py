"""The YAML resource kinds (Agent, EvalFixture, Eval, JudgeCalibration) and their loader."""

from evalward.resources.loader import load_resources
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
    "load_resources",
]
