"""Refusals that depend only on the definitions, made before any model is called.

`evalward validate` asks them of every resource of a tree (`tree_problems`); a run asks them
of what it plans, before it asks for keys or calls a model (`refuse_plan`). Both go through
`_Checks`, so `validate` passes exactly what a run would not refuse for its definitions; what
depends on the machine (keys, the sandbox) is checked by the run alone.

- Every model a definition names — an agent's `models` (fallbacks too), an Eval's
  `judge.model`, `crossCheck.models` and `pairwise.model`, a JudgeCalibration's
  `judgeModels` — is served by a
  provider evalward has, the mock provider only with a mock script (`unservable`).
- A fixture run against an agent shadows or replays each of the agent's side-effecting
  command tools and MCP tools (a server's `sideEffects`), which would otherwise change the
  world during an eval.
- A fixture's state criteria have a playground to read (the fixture's or its Eval's), and a
  run's playground has its seeds in the tree it is made from (playgrounds.py), and, for the
  head's runs, its service's programs there (program_checks.py), where each run started the
  service only to find it exit.
- The tools a fixture's assertions name are tools its declarative agent has (tool_refs.py),
  for the fixtures the head defines: a base branch's fixture that gates may name a tool the
  pull request removes, and is not refused for it (the pull request cannot change it); a
  check of it fails, on its own when it wants a call, else as it is scored
  (`tool_refs.removed_tools`). A check that passes without a call of a tool
  named close to none of the agent's may be a guard: `validate` warns, a run says nothing.
- What the repository shows beside the definitions (static_checks.py), and every program
  the head's agents run and what their `watch` globs match (program_checks.py). The base's
  programs are not asked: the pull request cannot change the base, so a program only the
  base lacks must not refuse its gate; such a base run fails on its own, as the base's error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalward.errors import NotCommitted, Problem, ResourceError
from evalward.files.committed import RepoFiles
from evalward.plan.plan import Checkout, Plan, PlannedRun
from evalward.plan.playgrounds import defined_playground, missing_seeds, state_without_playground
from evalward.plan.preflight.program_checks import (
    absent_service_programs,
    missing_programs,
    unmatched_watches,
)
from evalward.plan.preflight.static_checks import PlaygroundKey, StaticChecks
from evalward.plan.preflight.tool_refs import unknown_tools
from evalward.providers.config import BUILT_IN, unservable
from evalward.providers.registry import Providers
from evalward.resources import ResourceSet
from evalward.resources.agents.agent import AgentSpec, Tool
from evalward.resources.agents.mcp import QUALIFIER
from evalward.resources.conversation import simulator_model
from evalward.resources.gate_policy import RegressionPolicy
from evalward.resources.models import EvalFixture, EvalFixtureSpec, EvalSpec
from evalward.resources.playground import Playground
from evalward.resources.reading.locate import Locator
from evalward.resources.reading.yamlsource import PathKey
from evalward.resources.resource_set import Located
from evalward.rundata.sides import Side
from evalward.text import tool_names

if TYPE_CHECKING:
    from evalward.providers.mock import Defined, MockScript

NOTED_WARNINGS = 20
"""Warnings a run lists among its notes at most."""


@dataclass
class Scope:
    """What a run uses of a ResourceSet: agents, Evals (their judges and calibrations) and
    (Eval, fixture) pairs."""

    agents: set[str] = field(default_factory=set)
    evals: set[str] = field(default_factory=set)
    pairs: set[tuple[str, str]] = field(default_factory=set)
    tool_checked: set[tuple[str, str]] = field(default_factory=set)
    """The pairs whose assertions' tool names are checked against the Eval's agent: the
    fixtures the tree being run or validated defines (see `refuse_plan`)."""


@dataclass(frozen=True)
class TreeCheck:
    """What `tree_problems` is asked beside the tree: whether a mock script serves the
    `mock/...` models, the provider names evalward.yaml gives the run, the environment
    (its PATH finds Node), and the states playgrounds served (`validate --playgrounds`)."""

    mock_script: bool = False
    providers: tuple[str, ...] = BUILT_IN
    env: Mapping[str, str] = field(default_factory=dict)
    served: Mapping[PlaygroundKey, Mapping[str, Any]] = field(default_factory=dict)
    script: MockScript | None = None
    """The mock script, loaded: its entries' names are checked against the tree's."""


def tree_problems(resources: ResourceSet, asked: TreeCheck) -> list[Problem]:
    """Every refusal the definitions of a tree would meet in a run of all of them; what is
    only a warning joins `resources.warnings`."""
    scope = Scope(agents=set(resources.agents), evals=set(resources.evals))
    for name, located in resources.evals.items():
        scope.pairs.update(
            (name, fixture.resource.metadata.name)
            for fixture in resources.fixtures_of(located.resource)
        )
    scope.tool_checked = set(scope.pairs)
    checks = _Checks(resources, asked.mock_script, asked.providers, asked.env, asked.served)
    checks.scope(scope)
    tree = Checkout(Side.head, resources.root, resources)
    for eval_name, fixture_name in sorted(scope.pairs):
        checks.seeds(tree, PlannedRun(Side.head, eval_name, fixture_name))
    for calibration in resources.calibrations.values():
        spec = calibration.resource.spec
        checks.models(calibration, ("spec", "judgeModels"), spec.judge_models)
    programs = missing_programs(resources, asked.env, services=True)
    programs.warnings += unmatched_watches(resources, services=True)
    found = [*checks.found(), *programs.problems]
    if asked.script is not None:
        from evalward.providers.mock import undefined_names  # lazy: as the provider loads it

        misnamed, stale = undefined_names(asked.script, defined_names([resources]))
        found += misnamed
        resources.warnings += stale
    problems = sorted(found, key=Problem.order)
    resources.warnings += checks.static.warnings + programs.warnings + list(checks.guards)
    resources.warnings += list(checks.warnings)
    return problems


def refuse_plan(
    plan: Plan, checkouts: Mapping[Side, Checkout], providers: Providers, env: Mapping[str, str]
) -> list[Problem]:
    """Raise one ResourceError with every refusal of the runs `plan` may make on each side
    (`Plan.may_run`: a later round's too): the head's first, then (when the head has none)
    the base's, said to be the base's. `env` is the run's (its PATH finds Node). Returns the
    head's warnings (a state path its seeds do not have, a mock script's entry for what no
    definition names): the run goes on, and says them."""
    mock_script = providers.override is not None
    warnings: list[Problem] = []
    script: list[Problem] = []  # told with the head's problems: every side's names count
    stale: list[Problem] = []
    if providers.script is not None:
        from evalward.providers.mock import undefined_names  # lazy: as the provider loads it

        trees = [checkout.resources for checkout in checkouts.values()]
        script, stale = undefined_names(providers.script, defined_names(trees))
    for side in (Side.head, Side.base):
        if side not in checkouts:
            continue
        tree = checkouts[side].resources
        scope = Scope()
        runs = [
            r for r in plan.may_run(side) if r.eval in tree.evals and r.fixture in tree.fixtures
        ]
        for run in runs:
            scope.evals.add(run.eval)
            scope.agents.add(tree.evals[run.eval].resource.spec.target_agent)
            scope.pairs.add((run.eval, run.fixture))
            if side is Side.head and run.fixture not in checkouts[side].gate_fixtures:
                scope.tool_checked.add((run.eval, run.fixture))
        checks = _Checks(tree, mock_script, providers.names, env)
        checks.scope(scope)
        for run in runs:  # the base's service programs: see the module's docstring
            checks.seeds(checkouts[side], run, programs=side is Side.head)
        problems = checks.found()
        absent: list[Problem] = []
        if side is Side.head:  # the base's programs: see the module's docstring
            programs = missing_programs(tree, env, scope.agents)
            problems += programs.problems + script
            listed = checkouts[side].index
            absent = programs.warnings + unmatched_watches(tree, scope.agents, index=listed)
            problems.sort(key=Problem.order)
        if problems:
            raise ResourceError(problems, source="" if side is Side.head else "the base branch")
        if side is Side.head:
            found = checks.static.warnings + absent + stale + _unknown_models(tree, providers)
            found += list(checks.warnings)
            warnings = sorted(dict.fromkeys(found), key=Problem.order)
    return warnings


def _placed(door: RepoFiles, seed: str) -> bool:
    """Whether `seed` is a file or folder `door`'s side may read."""
    try:
        door.place(seed)
    except NotCommitted:
        return False
    return True


def _only_this_branch_s(base: str) -> str:
    """Why a seed the pull request commits is missing all the same: the playground is the
    base branch's, and what to do (committing it again on the branch would change nothing)."""
    return (
        f"is committed on this branch but not on the base branch ({base}), and under "
        "`gate-config: base` the playground is made from the base branch's tree, so that a "
        "pull request cannot change the world its agents are judged in: commit the seed to "
        "the base branch first"
    )


def _unknown_models(tree: ResourceSet, providers: Providers) -> list[Problem]:
    """A warning at each model id of the head's definitions no provider knows, as `validate`
    says it: a mock script answers any name, and a misspelt one passes a dry run."""
    if providers.settings is None:
        return []
    from evalward.providers.known_models import unknown_models  # lazy: validate's reading

    return unknown_models(tree, providers.settings)


def defined_names(trees: Iterable[ResourceSet]) -> Defined:
    """The names of the trees' definitions a mock script's `match` may give."""
    from evalward.providers.mock import Defined  # lazy: as the provider loads it

    agents: set[str] = set()
    fixtures: set[str] = set()
    evals: set[str] = set()
    invalid: set[tuple[str, str]] = set()
    tools: dict[str, dict[str, frozenset[str] | None] | None] = {}
    for tree in trees:
        agents.update(tree.agents)
        fixtures.update(tree.fixtures)
        evals.update([*tree.evals, *tree.calibrations])
        invalid.update(tree.not_loaded)
        for name, located in tree.agents.items():
            tools[name] = _offered(located.resource.spec, tools.get(name, {}))
    return Defined(
        frozenset(agents), frozenset(fixtures), frozenset(evals), frozenset(invalid), tools
    )


def _offered(
    spec: AgentSpec, known: dict[str, frozenset[str] | None] | None
) -> dict[str, frozenset[str] | None] | None:
    """The tools an agent's model is offered, each with the names its arguments may have,
    added to what another side's tree offers (`known`); None where they are known only in a
    run: a bring-your-own agent offers its own, an MCP server lists them when it starts."""
    if known is None or spec.runtime is not None or spec.mcp_servers:
        return None
    offered = dict(known)
    for tool in spec.tools:
        if tool.enabled:
            names, before = tool.argument_names, offered.get(tool.tool_name, frozenset())
            offered[tool.tool_name] = None if names is None or before is None else names | before
    return offered


def warning_notes(warnings: list[Problem]) -> list[str]:
    """A run's notes of the warnings `refuse_plan` found: the first NOTED_WARNINGS, then how
    many more (a pull request's many paths do not crowd the rest of its comment out)."""
    notes = [f"warning: {w.render()}" for w in warnings[:NOTED_WARNINGS]]
    if len(warnings) > NOTED_WARNINGS:
        more = len(warnings) - NOTED_WARNINGS
        notes.append(f"warning: {more} more such warnings (`evalward validate` lists them all)")
    return notes


def side_effect_refusal(
    agent: str, tools: Iterable[Tool], fixture: str, spec: EvalFixtureSpec
) -> str | None:
    """Why `fixture` may not run against `agent`: a side-effecting command tool it neither
    shadows nor replays would run for real."""
    covered = set(spec.shadow_tools or []) | {entry.tool for entry in spec.tool_replay or []}
    for tool in tools:
        live = tool.enabled and tool.side_effects and tool.command is not None
        if live and tool.tool_name not in covered:
            return (
                f"fixture {fixture!r} would run the side-effecting tool {tool.tool_name!r} of "
                f"agent {agent!r} for real; add it to the fixture's "
                f"`shadowTools: [{tool.tool_name}]` or record its output in `toolReplay`"
            )
    return None


def mcp_side_effect_refusal(
    agent: str, agent_spec: AgentSpec, fixture: str, spec: EvalFixtureSpec
) -> str | None:
    """Why `fixture` may not run against `agent`: an MCP server's side-effecting tool it
    neither shadows nor replays, by either of its names (`create_ticket`,
    `jira.create_ticket`) would run for real."""
    covered = [*(spec.shadow_tools or []), *(entry.tool for entry in spec.tool_replay or [])]
    for server_name, server in agent_spec.mcp_servers.items():
        for tool in server.side_effects:
            qualified = f"{server_name}{QUALIFIER}{tool}"
            if not any(tool_names.stands_for(qualified, written) for written in covered):
                return (
                    f"fixture {fixture!r} would run the side-effecting tool {tool!r} of agent "
                    f"{agent!r}'s MCP server {server_name!r} for real; add it to the fixture's "
                    f"`shadowTools: [{tool}]` or record its output in `toolReplay`"
                )
    return None


def zero_threshold(name: str, spec: EvalSpec) -> str | None:
    """Why the Eval's `passThreshold: 0` is told: every score reaches it, so the Eval passes
    with every fixture failing. Not beside `failOnRegression` (`any`, `significant`), where
    the threshold is left to regressions on purpose (docs/github.md, "Noise"), nor beside
    `minPassHatK`, which gates on its own, nor under adaptive reps, which do not read it
    (`validate` says so: resources/unread_settings.py). A warning, as `validate` and every
    run say it: the setting is valid, but decides nothing."""
    if spec.execution.reps is not None or spec.scoring.pass_threshold != 0:
        return None
    if spec.scoring.gate.fail_on_regression is not RegressionPolicy.none:
        return None
    if spec.scoring.min_pass_hat_k is not None:
        return None
    return (
        f"Eval {name!r} has passThreshold 0, which every score reaches: it passes whatever "
        "its fixtures score, every one of them failing too; set the score it must reach (the "
        "weighted share of its fixtures that pass: 1.0, the default, is all of them), or, to "
        "gate on regressions alone, set `scoring.gate.failOnRegression: significant` (or "
        "`any`), or on every rep passing, `scoring.minPassHatK`"
    )


def zero_fixture_threshold(name: str, spec: EvalFixtureSpec) -> str | None:
    """Why a fixture's `passThreshold: 0` is told: every run's score reaches it, so each run
    passes whatever its assertions find (an error still fails), and neither side of a pull
    request can fail it or regress. Not beside a `scoringFunction`, which is given the
    threshold and decides the run itself. A warning, as `zero_threshold` is."""
    if spec.pass_threshold != 0 or spec.scoring_function is not None:
        return None
    return (
        f"fixture {name!r} has passThreshold 0, which every run's score reaches: its runs "
        "pass whatever its assertions find, every one of them failing too; set the weighted "
        "score a run must reach, or leave it out, and every assertion that gates must pass"
    )


def unanswered_tool(tools: Iterable[Tool], spec: EvalFixtureSpec) -> tuple[int, Tool] | None:
    """The first enabled tool (its index in `tools`) with neither `mock` nor `command` that
    the fixture neither shadows nor replays: nothing answers its call but an error, which
    the model reads as the tool's result. Such a tool is fine where every fixture run
    against it stands in for it (`shadowTools`, `toolReplay`), so this is asked per fixture."""
    covered = [*(spec.shadow_tools or []), *(entry.tool for entry in spec.tool_replay or [])]
    for index, tool in enumerate(tools):
        if not tool.enabled or tool.mock is not None or tool.command is not None:
            continue
        if not any(tool_names.stands_for(tool.tool_name, written) for written in covered):
            return index, tool
    return None


class _Checks:
    """The checks over one ResourceSet; problems are located, each reported once."""

    def __init__(
        self,
        resources: ResourceSet,
        mock_script: bool,
        providers: tuple[str, ...],
        env: Mapping[str, str],
        served: Mapping[PlaygroundKey, Mapping[str, Any]] | None = None,
    ) -> None:
        self.resources = resources
        self.mock_script = mock_script
        self.providers = providers
        self.locator = Locator(resources)
        self.problems: dict[Problem, None] = {}
        self.guards: dict[Problem, None] = {}
        """What `tools` finds that may be meant: a check a tool the agent is not offered is
        never called (tool_refs.py), which `validate` warns about."""
        self.env = env
        self.static = StaticChecks(self.locator, env, served)
        self.unanswered: set[tuple[str, int]] = set()
        """Each agent's tool (by index) already told as `unanswered_tool`: once, at the
        tool, for the first fixture that would call it unanswered."""
        self.warnings: dict[Problem, None] = {}
        """What `validate` and a run both say and neither refuses: an Eval's
        `passThreshold: 0` or a fixture's (`zero_threshold`, `zero_fixture_threshold`), and a
        tool nothing answers (`unanswered_tool`), a warning, not a refusal, since a run may
        never call it, and an imported promptfoo suite's tools have no implementation by
        design (promptfoo stops at the call: the model is told the error and its final
        answer is checked)."""
        self.missing: dict[tuple[Path, int], tuple[Playground, list[tuple[str, str, str]]]] = {}
        """Each playground's missing seeds, by tree and definition (kept here, so the
        runs of an Eval that share one look in the tree once)."""

    def scope(self, scope: Scope) -> None:
        resources = self.resources
        for name in sorted(scope.agents & set(resources.agents)):
            located = resources.agents[name]
            self.models(located, ("spec", "models"), located.resource.spec.models)
        for name in sorted(scope.evals & set(resources.evals)):
            located_eval = resources.evals[name]
            judge = located_eval.resource.spec.judge
            zero = zero_threshold(name, located_eval.resource.spec)
            if zero is not None:
                self.warn(located_eval, ("spec", "scoring", "passThreshold"), zero)
            if judge.model is not None:
                self.models(located_eval, ("spec", "judge"), [judge.model], key="model")
            user_model = located_eval.resource.spec.simulated_user.model
            if user_model is not None:
                self.models(located_eval, ("spec", "simulatedUser"), [user_model], key="model")
            if judge.cross_check is not None:
                where = ("spec", "judge", "crossCheck", "models")
                self.models(located_eval, where, judge.cross_check.models)
            if judge.pairwise is not None and judge.pairwise.model is not None:
                pairwise: PathKey = ("spec", "judge", "pairwise")
                self.models(located_eval, pairwise, [judge.pairwise.model], key="model")
            if judge.calibration in resources.calibrations:
                calibration = resources.calibrations[judge.calibration]
                spec = calibration.resource.spec
                self.models(calibration, ("spec", "judgeModels"), spec.judge_models)
        for eval_name, fixture_name in sorted(scope.pairs):
            fixture = resources.fixtures.get(fixture_name)
            zero = zero_fixture_threshold(fixture_name, fixture.resource.spec) if fixture else None
            if fixture is not None and zero is not None:
                self.warn(fixture, ("spec", "passThreshold"), zero)
            self.side_effects(eval_name, fixture_name)
            self.playground(eval_name, fixture_name)
        for eval_name, fixture_name in sorted(scope.tool_checked & scope.pairs):
            self.tools(eval_name, fixture_name)

    def models(self, located: Located[Any], at: PathKey, models: list[str], key: str = "") -> None:
        for index, model in enumerate(models):
            refused = unservable(model, mock_script=self.mock_script, providers=self.providers)
            if refused is not None:
                self.add(located, (*at, key) if key else (*at, index), refused)

    def side_effects(self, eval_name: str, fixture_name: str) -> None:
        resources = self.resources
        target = resources.evals[eval_name].resource.spec.target_agent
        agent = resources.agents.get(target)
        fixture = resources.fixtures.get(fixture_name)
        if agent is None or fixture is None:
            return  # reported by the load
        spec = fixture.resource.spec
        user = spec.conversation.user if spec.conversation is not None else None
        if user is not None and user.model is not None:
            self.models(fixture, ("spec", "conversation", "user"), [user.model], key="model")
        eval_spec = resources.evals[eval_name].resource.spec
        if user is not None and not simulator_model(
            spec.conversation, eval_spec.simulated_user.model, eval_spec.judge.model
        ):
            self.add(
                fixture,
                ("spec", "conversation", "user"),
                f"no model plays the simulated user of fixture {fixture_name!r} in Eval "
                f"{eval_name!r}: set `model` here, or the Eval's `simulatedUser.model` or "
                "`judge.model`",
            )
        agent_spec = agent.resource.spec
        refusal = agent_spec.system_refusal()
        if spec.conversation and spec.conversation.system and refusal:
            self.add(fixture, ("spec", "conversation", "system"), f"agent {target!r} {refusal}")
        refused = side_effect_refusal(target, agent_spec.tools, fixture_name, spec)
        refused = refused or mcp_side_effect_refusal(target, agent_spec, fixture_name, spec)
        if refused is not None:
            at = ("spec", "shadowTools") if spec.shadow_tools is not None else ("spec",)
            self.add(fixture, at, refused)
        unanswered = unanswered_tool(agent_spec.tools, spec)
        if unanswered is not None and (target, unanswered[0]) not in self.unanswered:
            index, tool = unanswered
            self.unanswered.add((target, index))
            self.warn(
                agent,
                ("spec", "tools", index),
                f"tool {tool.tool_name!r} has neither `mock` nor `command`, and fixture "
                f"{fixture_name!r} (Eval {eval_name!r}) neither shadows nor replays it: each "
                "call of it is answered with an error, which the model reads as its result; "
                "give the tool a `mock` (its reply) or a `command` (a program that answers "
                "it), list it in the fixture's `shadowTools`, or record its output in "
                "`toolReplay`",
            )

    def tools(self, eval_name: str, fixture_name: str) -> None:
        target = self.resources.evals[eval_name].resource.spec.target_agent
        agent = self.resources.agents.get(target)
        fixture = self.resources.fixtures.get(fixture_name)
        if agent is None or fixture is None:
            return  # reported by the load
        for found in unknown_tools(target, agent.resource.spec, fixture.resource.spec):
            if found.refused:
                self.add(fixture, found.at, found.message)
            else:  # a guard, maybe: `validate` says so, a run does not
                self.guards[self.locator.problem(fixture, found.at, found.message)] = None

    def playground(self, eval_name: str, fixture_name: str) -> None:
        fixture = self.resources.fixtures.get(fixture_name)
        if fixture is None or eval_name not in self.resources.evals:
            return
        for index in state_without_playground(self.resources, eval_name, fixture_name):
            kind = fixture.resource.spec.assertions[index].type
            self.add(
                fixture,
                ("spec", "assertions", index),
                f"a `{kind}` assertion reads the state of a playground, and neither fixture "
                f"{fixture_name!r} nor Eval {eval_name!r} names one; give either `playground` "
                "(docs/playgrounds.md)",
            )
        self._served_mcp(eval_name, fixture)
        self._data_on_its_command_line(eval_name, fixture)

    def _data_on_its_command_line(self, eval_name: str, fixture: Located[EvalFixture]) -> None:
        """A service whose `start` or `dump` names `{data}`: a command line is every user's
        to read, so the agent, which runs as the service's user, finds the service's own
        folder there and can write into it what the service then reports. A warning: the
        service works, and whether its state is kept there is its own."""
        found = defined_playground(self.resources, eval_name, fixture.resource.metadata.name)
        service = found[1].service if found is not None else None
        if found is None or service is None:
            return
        name, _, kind = found
        located: Located[Any] = fixture
        if kind != "EvalFixture":
            located = self.resources.evals[eval_name]
        for command, arguments in (("start", service.start), ("dump", service.dump or [])):
            for index, argument in enumerate(arguments):
                where = ("spec", "playground", "service", command, index)
                if "{data}" in argument:  # said once however many fixtures: `warnings`
                    self.warn(
                        located,
                        where,
                        f"playground {name!r}'s service is given its `{{data}}` folder on "
                        "its command line, which every program of the machine may read: the "
                        "agent, which runs as the same user, finds the folder there and can "
                        "write into it the state the service then reports; read it from "
                        "$EVALWARD_SERVICE_DATA instead",
                    )

    def _served_mcp(self, eval_name: str, fixture: Located[EvalFixture]) -> None:
        """An MCP server the agent reaches on the playground's service (`service: /mcp`)
        where the fixture's playground has none: each of its runs would fail as it starts."""
        located_eval = self.resources.evals[eval_name]
        target = located_eval.resource.spec.target_agent
        agent = self.resources.agents.get(target)
        servers = agent.resource.spec.mcp_servers.items() if agent is not None else []
        served = [(name, s.service) for name, s in servers if s.service is not None]
        found = defined_playground(self.resources, eval_name, fixture.resource.metadata.name)
        if not served or (found is not None and found[1].service is not None):
            return
        name, path = served[0]
        reaches = (
            f"agent {target!r} reaches its MCP server {name!r} on the playground's service "
            f"(`service: {path}`)"
        )
        fix = (
            "give it a `service` that serves MCP (docs/playgrounds.md), or the server a "
            "`command` or `url` (docs/mcp.md)"
        )
        if found is None:
            self.add(
                located_eval,
                ("spec",),
                f"Eval {eval_name!r} names no playground, and {reaches}: give the Eval (or "
                f"each of its fixtures) a playground with a `service`, or the server a "
                "`command` or `url` (docs/mcp.md)",
            )
            return
        what, _, kind = found
        owner = fixture if kind == "EvalFixture" else located_eval
        self.add(
            owner,
            ("spec", "playground"),
            f"playground {what!r} has no `service`, and {reaches} in Eval {eval_name!r}: {fix}",
        )

    def seeds(self, checkout: Checkout, run: PlannedRun, *, programs: bool = False) -> None:
        """The run's playground's seeds, and with `programs` its service's programs, in the
        tree the playground is made from."""
        found = self.static.add(checkout, run)
        if found is None:
            return
        source, owner = found
        at = (source.world, id(source.spec))
        known = self.missing.get(at)
        if known is None or known[0] is not source.spec:
            known = self.missing[at] = (source.spec, missing_seeds(source))
        for kind, seed, why in known[1]:
            self.add(
                owner,
                ("spec", "playground", kind, "seed"),
                f"playground {source.name!r}: the seed {seed!r} "
                + (
                    _only_this_branch_s(source.door.describe())
                    if source.door is not checkout.files and _placed(checkout.files, seed)
                    else f"{why} (seeds are read from the tree the playground is made from: "
                    "the base branch's, under `gate-config: base`)"
                ),
            )
        service = source.spec.service
        if programs and service is not None:
            for where, why in absent_service_programs(service, source.door, self.env):
                self.add(
                    owner,
                    ("spec", "playground", "service", *where),
                    f"playground {source.name!r}: {why}",
                )

    def add(self, located: Located[Any], at: PathKey, message: str) -> None:
        self.problems[self.locator.problem(located, at, message)] = None

    def warn(self, located: Located[Any], at: PathKey, message: str) -> None:
        self.warnings[self.locator.problem(located, at, message)] = None

    def found(self) -> list[Problem]:
        """Every problem, once each, in file order: the definitions' and what the static
        checks find of the repository's files they name."""
        self.static.check()
        self.problems.update(dict.fromkeys(self.static.problems))
        return sorted(self.problems, key=Problem.order)


def planned_models(plan: Plan, checkouts: Mapping[Side, Checkout]) -> list[str]:
    """Every model the plan may call on the sides in `checkouts`, in any round: the agents'
    first choices and the Evals' judges (the pairwise judge's too)."""
    models: set[str] = set()
    for run in [r for side in checkouts for r in plan.may_run(side)]:
        resources = checkouts[run.side].resources
        if run.eval not in resources.evals or run.fixture not in resources.fixtures:
            continue
        eval_def = resources.evals[run.eval].resource
        models.update(resources.agents[eval_def.spec.target_agent].resource.spec.models[:1])
        models.update(eval_def.spec.judge.models)
        pairwise = eval_def.spec.judge.pairwise
        models.update([pairwise.model] if pairwise is not None and pairwise.model else [])
        fixture = resources.fixtures[run.fixture].resource.spec
        user = simulator_model(
            fixture.conversation, eval_def.spec.simulated_user.model, eval_def.spec.judge.model
        )
        models.update([user] if user else [])
    return sorted(models)
