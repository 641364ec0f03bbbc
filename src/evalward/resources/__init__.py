"""The YAML resource kinds (Agent, EvalFixture, Eval, JudgeCalibration), which
`evalward.definitions.loader` loads."""

from evalward.resources.models import Agent, Eval, EvalFixture, JudgeCalibration
from evalward.resources.resource_set import Located, ResourceSet

__all__ = ["Agent", "Eval", "EvalFixture", "JudgeCalibration", "Located", "ResourceSet"]
