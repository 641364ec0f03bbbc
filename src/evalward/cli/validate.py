"""`evalward validate`: check every resource file; exit 0, or 2 with every problem located.

It refuses everything a run would refuse for the definitions alone, in the run's words: what
does not load, the provider settings of `evalward.yaml`, and the checks a run makes before
its first model call (`preflight`, with what the repository shows of seeds, `sql` criteria
and code scorers, the tools assertions name, and the names a `--mock-script` matches).
What depends on the machine (keys, the sandbox) is not checked, unless `--ask-providers`
asks each provider the definitions use for its model list (with the environment's keys): a
model it does not list is then a warning with the nearest name it does; and `--playgrounds`
provisions each playground once, as a run would, without an agent or a model, and runs each
code scorer once on a sample run (authoring/scorer_trials.py).
Problems lead the output; the warnings and what was provisioned follow them.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

from evalward.cli._args import add_root

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from evalward.errors import Problem
    from evalward.host import Host
    from evalward.plan.preflight.static_checks import PlaygroundKey
    from evalward.providers.config import ProvidersConfig
    from evalward.resources import ResourceSet


def register(commands: Any) -> None:
    parser = commands.add_parser("validate", help="check every resource file and exit 0 or 2")
    add_root(parser)
    parser.add_argument(
        "--mock-script",
        metavar="FILE",
        help="also check this mock script, which then serves the `mock/...` models",
    )
    parser.add_argument(
        "--ask-providers",
        action="store_true",
        help="ask each provider the definitions use for its models (GET /models, with the "
        "keys of the environment) and warn about a model it does not serve",
    )
    parser.add_argument(
        "--playgrounds",
        action="store_true",
        help="provision each playground once, as a run does but without an agent or a model "
        "(seeds applied, service started and ready, state read, torn down), check the state "
        "criteria's paths against the state it was made in, and run each code scorer once on "
        "a sample run",
    )


def main(args: argparse.Namespace, out: TextIO, host: Host) -> int:
    from pathlib import Path

    from evalward.cli._local import repository
    from evalward.definitions.loader import load_what_loads
    from evalward.errors import EXIT_OK, ConfigError, ResourceError
    from evalward.plan.preflight.preflight import TreeCheck, tree_problems
    from evalward.providers.known_models import unknown_models, unused_prices
    from evalward.providers.mock import load_script
    from evalward.providers.registry import repo_providers
    from evalward.resources.reading.repo_config import load_config

    host.started()  # no run follows: nothing here lives long enough to be worth the pause
    root = repository(args.path)
    resources, problems = load_what_loads(root)
    try:
        settings = repo_providers(root)
    except ResourceError as exc:
        problems += exc.problems
        names = _declared(root)
    else:
        names = settings.names
        listed = _ask(resources, settings, host, out) if args.ask_providers else None
        resources.warnings += unknown_models(resources, settings, listed)
        resources.warnings += unused_prices(resources, settings, load_config(root).locate)
    script = None
    if args.mock_script:
        try:
            script = load_script(Path(args.mock_script))
        except ResourceError as exc:
            problems += exc.problems
    made: list[Problem] = []
    summary: list[str] = []
    served = _provisioned(resources, host, made, summary) if args.playgrounds else {}
    asked = TreeCheck(bool(args.mock_script), names, host.env, served, script)
    found = tree_problems(resources, asked)
    problems += found + [p for p in made if not _told(p, found)]
    told = [f"warning: {warning.render()}" for warning in resources.warnings] + summary
    if problems:  # the problems lead; what was checked follows them
        raise ResourceError(
            sorted(problems, key=lambda problem: problem.order()), after=tuple(told)
        )
    for line in told:
        print(line, file=out)
    if not (resources.agents or resources.fixtures or resources.evals or resources.calibrations):
        raise ConfigError(
            f"{root}: no evalward resource found in {load_config(root).searched()}: "
            "no YAML document has `apiVersion: evalward.dev/v1` and no file is an AgentV eval "
            "file; give the repository root, or fix `roots` in evalward.yaml"
        )
    print(
        f"{len(resources.agents)} agents, {len(resources.fixtures)} fixtures, "
        f"{len(resources.evals)} evals OK",
        file=out,
    )
    return EXIT_OK


def _ask(
    resources: ResourceSet, settings: ProvidersConfig, host: Host, out: TextIO
) -> dict[str, frozenset[str]]:
    """The model lists of the providers the definitions use; a note for each that gave none."""
    import asyncio

    from evalward.providers.known_models import model_references
    from evalward.providers.model_lists import ask_providers
    from evalward.providers.registry import build_providers, check_variables

    model_ids = [model_id for _, _, model_id in model_references(resources)]
    used = {model_id.partition("/")[0] for model_id in model_ids}
    providers = build_providers(host.env, config=settings)
    host.note_key_envs(providers.key_envs)
    asked = sorted(used & set(providers.by_name) - {"mock"})

    async def ask() -> dict[str, frozenset[str]]:
        try:
            check_variables(model_ids, providers)  # refused as a run refuses it, unasked
            lists = await ask_providers(providers, asked)
        finally:
            await providers.aclose()
        for name, why in sorted(lists.unanswered.items()):
            print(
                f"note: {name} did not list its models ({host.redactor()(why)}); its models are "
                "checked against evalward's price list only",
                file=out,
            )
        return lists.listed

    return asyncio.run(ask())


def _provisioned(
    resources: ResourceSet, host: Host, problems: list[Problem], summary: list[str]
) -> dict[PlaygroundKey, Mapping[str, Any]]:
    """Each playground provisioned once and each code scorer run once on a sample
    (`--playgrounds`): their failures join `problems` (a scorer's warnings, the resources'
    warnings), what was tried `summary`; the states served, for the checks of the state
    criteria's paths."""
    import asyncio

    from evalward.authoring.playground_trials import try_playgrounds
    from evalward.authoring.scorer_trials import try_scorers

    trials = asyncio.run(try_playgrounds(resources, host.env))
    problems += trials.problems
    made = trials.tried - len(trials.problems)
    summary.append(f"{made} of {trials.tried} playgrounds provisioned and torn down")
    scored = asyncio.run(try_scorers(resources, host.env))
    problems += scored.problems
    resources.warnings += scored.warnings
    return trials.served


def _told(problem: Problem, found: list[Problem]) -> bool:
    """Whether a playground's failure is told already, in the same words or more (a seed
    that does not load: the static checks and the provisioning both name its statement)."""
    return any(p.file == problem.file and p.message.startswith(problem.message) for p in found)


def _declared(root: Path) -> tuple[str, ...]:
    """The provider names evalward.yaml declares, when its settings are wrong: their models
    are not also unknown."""
    from evalward.errors import ConfigError
    from evalward.providers.config import BUILT_IN
    from evalward.resources.reading.repo_config import load_config

    try:
        declared = load_config(root).providers
    except ConfigError:
        return BUILT_IN
    return (*BUILT_IN, *sorted(str(n) for n in declared if n not in BUILT_IN))
