"""Settings an Eval sets that the policy in force does not read: said by `evalward validate`
as a warning at the field, never ignored in silence.

An Eval is decided one of two ways (docs/github.md, "Noise"): with fixed reps
(`execution.repsPerFixture`) by its score against `passThreshold`, each fixture by
`minRepPassRate`, its pass^k floor and `failOnRegression`; with adaptive reps
(`execution.reps`) by its sequential tests, at `scoring.gate`'s error and pass rates. A
setting of the other way changes nothing, so it is named with what decides instead.
"""

from __future__ import annotations

from pydantic import BaseModel

from evalward.resources.reading.yamlsource import PathKey
from evalward.resources.resource_set import ProblemReporter, ResourceSet
from evalward.text.escaping import printable

FIXED_ONLY: dict[PathKey, str] = {
    ("scoring", "passThreshold"): "its sequential tests decide, not a score threshold",
    ("scoring", "minRepPassRate"): (
        "a fixture's verdict is its sequential test's, not a share of its reps"
    ),
    ("scoring", "minPassHatK"): "pass^k gates nothing; its sequential tests decide",
    ("scoring", "gate", "failOnRegression"): (
        "a regression its per-fixture sequential test settles always blocks, and one it does "
        "not settle never does: `any` and `significant` are rules for fixed reps"
    ),
    ("scoring", "gate", "baseRuns"): "its sequential tests choose which base runs they read",
    ("execution", "repsPerFixture"): "`reps: {min, max}` replaces it",
}
"""What only fixed reps read, and what decides instead with adaptive reps."""

ADAPTIVE_ONLY: tuple[PathKey, ...] = (
    ("scoring", "gate", "falseBlockRate"),
    ("scoring", "gate", "missRate"),
    ("scoring", "gate", "goodPassRate"),
    ("scoring", "gate", "brokenPassRate"),
    ("scoring", "gate", "drop"),
    ("scoring", "gate", "flakyOnMain"),
)
"""What only adaptive reps' sequential tests read."""


def check_unread_settings(result: ResourceSet, report: ProblemReporter) -> None:
    """A warning for each setting an Eval (or evalward.yaml's defaults, which it inherits)
    sets that its way of deciding does not read."""
    for name, located in sorted(result.evals.items()):
        spec = located.resource.spec
        adaptive = spec.execution.reps is not None
        for path in FIXED_ONLY if adaptive else ADAPTIVE_ONLY:
            if not _is_set(spec, path):
                continue
            where = ".".join(str(p) for p in path)
            if adaptive:
                message = (
                    f"Eval {printable(name)!r} has adaptive reps (execution.reps), which do "
                    f"not read {where}: {FIXED_ONLY[path]}; remove it (from the Eval, or from "
                    "evalward.yaml's defaults), or use repsPerFixture"
                )
            else:
                message = (
                    f"Eval {printable(name)!r} has fixed reps (no execution.reps), which do not "
                    f"read {where}: only adaptive reps' sequential tests do; remove it (from the "
                    "Eval, or from evalward.yaml's defaults), or set execution.reps"
                )
            report(located, ("spec", *path), message, warning=True)


def _is_set(spec: BaseModel, path: PathKey) -> bool:
    """Whether the Eval's document (with the defaults it inherits) gives this field."""
    model: BaseModel = spec
    for key in path:
        fields = type(model).model_fields.items()
        field = next((name for name, info in fields if key in (info.alias or name, name)), None)
        if field is None or field not in model.model_fields_set:
            return False
        value = getattr(model, field)
        if not isinstance(value, BaseModel):
            return True
        model = value
    return True
