"""`evalward validate --playgrounds`: each playground the definitions name, provisioned once
as a run provisions it (runtime/playground/), without an agent or a model: its seeds
applied, its service started and its `ready` answered, its state read, then torn down.

What fails is the run's own error, located at the playground's YAML line (a service's last
words on stderr included, as a run's error gives them); the states read tell the static
checks the shape of what a service serves (static_checks.py). Runs of the command line's
kind: as the developer, with the environment a run's programs draw from (no secret).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalward.errors import PlaygroundError, Problem
from evalward.plan.plan import Checkout, PlannedRun
from evalward.plan.playgrounds import missing_seeds, source_of
from evalward.plan.preflight.static_checks import PlaygroundKey, playground_key
from evalward.resources import ResourceSet
from evalward.resources.reading.locate import Locator
from evalward.resources.resource_set import Located
from evalward.rundata.sides import Side
from evalward.runtime.playground.base import PlaygroundSource
from evalward.runtime.playground.provision import PlaygroundSetting, provision
from evalward.runtime.playground.state import capture


@dataclass
class Trials:
    """What provisioning each playground found: its failures, located, and the state each
    one that was made served."""

    problems: list[Problem] = field(default_factory=list)
    served: dict[PlaygroundKey, Mapping[str, Any]] = field(default_factory=dict)
    tried: int = 0


async def try_playgrounds(resources: ResourceSet, env: Mapping[str, str]) -> Trials:
    """Provision, read and tear down each playground of the tree's (Eval, fixture) pairs
    once; one that shares another's definition and tree is the same playground."""
    tree = Checkout(Side.head, resources.root, resources)
    found: dict[PlaygroundKey, tuple[PlaygroundSource, Located[Any]]] = {}
    for eval_name, located in sorted(resources.evals.items()):
        for fixture in resources.fixtures_of(located.resource):
            run = PlannedRun(Side.head, eval_name, fixture.resource.metadata.name)
            source = source_of(tree, run)
            if source is None or missing_seeds(source):  # no playground, or refused already
                continue
            owner = fixture if fixture.resource.spec.playground is not None else located
            found.setdefault(playground_key(source), (source, owner))
    trials = Trials(tried=len(found))
    locator = Locator(resources)
    for key, (source, owner) in found.items():
        try:
            trials.served[key] = await _tried(source, env)
        except PlaygroundError as exc:
            trials.problems.append(locator.problem(owner, ("spec", "playground"), str(exc)))
    return trials


async def _tried(source: PlaygroundSource, env: Mapping[str, str]) -> Mapping[str, Any]:
    """The state the playground is in once made; PlaygroundError when it cannot be made,
    read or torn down."""
    live = await provision(source, PlaygroundSetting(env))
    try:
        state = await capture(live)
    finally:
        await live.close()
    return state.document
