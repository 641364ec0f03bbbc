"""Whether the tools a fixture's assertions name are tools its agent has, asked of a
declarative agent whose tools its definition lists.

A check of a tool the agent does not have cannot see the agent call it. Where the check wants
a call (`toolCalled`, its `after`, `toolArgs`, `toolSequence`, a `trajectory` that is not a
`subset`, `latency`'s `tool`) the agent cannot pass it: refused. Where it passes without one
(`toolNotCalled`, its `after`, `toolCalled`'s `before`, a `subset` trajectory) it passes
whatever the agent does: refused when the name is close to one of the agent's tools (a
misspelling: `lookup_ordr`); a name close to none is a guard against a call of a tool the
agent is not offered (AgentV's `not-trajectory:tool-used`), which `validate` only warns about.
A fixture's `shadowTools` and `toolReplay` stand in for a tool by its name: one naming a tool
the agent does not have stands in for none, and the tool meant runs as it would without the
fixture (for real, if it has a `command`): refused when the name is close to one of the
agent's tools, else a warning of `validate`'s (a recording of a tool the agent since lost).
The names are matched as scoring matches them (text/tool_names.py): a tool by its name, or
by the name its qualified one ends in (`orders__lookup_order`). Every tool named in `tools`
counts, disabled ones too, except where the head is held to the base's guards: a disabled
tool is never offered, so it keeps no guard alive.

A base branch's fixture that gates (`gate-config: base`) is not refused: the pull request
cannot change it. Where its check passes without a call of a tool the base side's agent has
and the head's does not (`removed_tools`), the pull request removed or renamed the tool the
base guards, and the head's run fails that check: renaming `refund_order` does not make
`toolNotCalled: refund_order` vacuous. A name neither side's agent has stays a guard. Where
the base's fixture's `shadowTools` or `toolReplay` stands in for such a tool, the renamed
tool would answer the head's agent in place of the base's recordings (with what the pull
request wrote): the head's run is an error instead, and never starts. The head's agent is
held to the tools it names: an MCP server with no `tools.allow` might offer the base's tool
or not, and undecided is never a pass.

What a run's agent may call is not known before the run when it is a bring-your-own agent
(its program has its own tools) or when one of its MCP servers lists its tools without a
`tools.allow` naming them (a run refuses an allowed name the server does not list): such an
agent's assertions are not checked. But a bring-your-own agent's run names the tools it
offered its model (`Trace.offered_tools`, from its requests through the model proxy), and
the same rule holds a head's run by them (`unoffered_tools`): a check of the base's fixture
that passes without a call of a tool the base side offered (its run of the fixture, or its
declarative agent's definition) and that the head's run offered in none of its calls fails.
Where no base run of the fixture has said what it offered, whether the tool was renamed is
not known, and undecided is never a pass: the check fails too.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

from evalward.resources import ResourceSet
from evalward.resources.agents.agent import AgentSpec
from evalward.resources.agents.mcp import QUALIFIER
from evalward.resources.checks.assertions import Assertion, AssertSetAssertion, tool_fields
from evalward.resources.models import EvalFixtureSpec
from evalward.resources.reading.problems import did_you_mean
from evalward.resources.reading.yamlsource import PathKey
from evalward.text import tool_names

LISTED_TOOLS = 10
"""The agent's tools a message lists at most."""
STAND_INS = ("shadowTools", "toolReplay")
"""The fixture's fields that stand in for a tool by its name."""
HANDOFF = "handoffTools"
"""A conversation's field of the tools whose call hands it off: one the agent does not have
can never be called, so it wants a call as a check does."""


def _unlisted(spec: AgentSpec) -> list[str]:
    """The agent's MCP servers that list their tools with no `tools.allow`: that such a
    server offers a tool is not known, and undecided is never a pass."""
    return sorted(name for name, s in spec.mcp_servers.items() if s.tools.allow is None)


def _as_named(spec: AgentSpec) -> AgentSpec:
    """The agent held to the tools it names: without its `_unlisted` MCP servers."""
    unlisted = _unlisted(spec)
    if not unlisted:
        return spec
    listed = {name: s for name, s in spec.mcp_servers.items() if name not in unlisted}
    return spec.model_copy(update={"mcp_servers": listed})


def _offered(spec: AgentSpec) -> AgentSpec:
    """The agent with the tools a run offers its model: not a disabled one."""
    return spec.model_copy(update={"tools": [t for t in spec.tools if t.enabled]})


def named_tools(spec: AgentSpec) -> list[str]:
    """The tools a declarative agent names: `agent_tools` of it `_as_named`."""
    return agent_tools(_as_named(spec)) or []


def agent_tools(spec: AgentSpec) -> list[str] | None:
    """The names a run records the agent's tool calls by: its own tools' and its MCP
    servers' allowed ones (qualified); None when they are not known before a run."""
    if spec.runtime is not None:
        return None
    names = [tool.tool_name for tool in spec.tools]
    for server, settings in spec.mcp_servers.items():
        if settings.tools.allow is None:
            return None
        names += [
            f"{server}{QUALIFIER}{tool}"
            for tool in settings.tools.allow
            if tool not in settings.tools.deny
        ]
    return names


@dataclass(frozen=True)
class UnknownTool:
    """A field naming a tool the agent does not have, what to say there, and whether it is
    refused (else a warning); the name as written, the field or assertion type, and whether
    the check wants a call of it."""

    at: PathKey
    message: str
    refused: bool
    name: str
    kind: str
    wants_a_call: bool


@dataclass(frozen=True)
class RemovedTool:
    """A tool that a check passing without its call names, in a fixture the base gates with,
    which the base side's agent has and the head's does not: the pull request removed or
    renamed it, so the check cannot see the call the base meant, and fails (`message`)."""

    name: str
    """As the fixture writes it."""
    message: str
    stand_in: bool = False
    """Named by the fixture's `shadowTools` or `toolReplay`, not by a check: the run fails
    as a whole, before it starts."""


def unknown_tools(agent: str, spec: AgentSpec, fixture: EvalFixtureSpec) -> list[UnknownTool]:
    """Each field of the fixture's assertions (a conversation's turns' and a group's members'
    too) that names a tool `agent` does not have."""
    known = agent_tools(spec)
    if known is None:
        return []
    denied = {
        f"{server}{QUALIFIER}{tool}": server
        for server, settings in spec.mcp_servers.items()
        for tool in settings.tools.deny
    }
    bare = {tool_names.parts(name)[-1]: name for name in known if tool_names.parts(name)}
    found: list[UnknownTool] = []
    for at, kind, written, wants_a_call in _named(fixture):
        if any(tool_names.stands_for(name, written) for name in known):
            continue
        server = next((s for n, s in denied.items() if tool_names.stands_for(n, written)), None)
        close = "" if server else did_you_mean(written, [*known, *bare])
        hint = f" (its MCP server {server!r} denies it: `tools.deny`)" if server else close
        head = f"`{kind}` names the tool {written!r}, which agent {agent!r} does not have{hint}"
        shown = ", ".join(known[:LISTED_TOOLS]) + (", ..." if len(known) > LISTED_TOOLS else "")
        fix = (
            f"name one of the agent's tools ({shown})"
            if known
            else "the agent offers no tool: give it this one in its `tools`"
        )
        if kind in STAND_INS:
            message = f"{head}, so it stands in for none and the tool meant runs: {fix}"
        elif kind == HANDOFF:
            message = f"{head}, so no call of it can hand the conversation off: {fix}"
        elif wants_a_call:
            message = f"{head}, so the agent cannot pass it: {fix}"
        elif close:
            message = f"{head}, so it passes whatever the agent does: {fix}"
        else:
            message = (
                f"{head}, so it passes unless the model calls a tool it is not offered; if "
                f"it guards against that, leave it, else {fix}"
            )
        refused = wants_a_call or bool(close)
        found.append(UnknownTool(at, message, refused, written, kind, wants_a_call))
    return found


def removed_tools(
    agent: str, base: AgentSpec, head: AgentSpec, fixture: EvalFixtureSpec
) -> tuple[RemovedTool, ...]:
    """The tools named by the checks of `fixture` (one the base gates with) that pass without
    a call of them, which `agent` has on the base side (`base`) and not on the head (`head`).
    A check that wants a call fails without this; a name neither side's agent has is a guard
    against a tool never offered, left as it is; and where the base's tools, or a program's
    own (`runtime`), are not known before a run, nothing is said here (a program's are held
    to what its run offered: `unoffered_tools`). A head whose MCP servers
    list their tools unnamed (no `tools.allow`) is held to the tools it names: that such a
    server offers the base's tool is not known, and undecided is never a pass."""
    if agent_tools(base) is None or head.runtime is not None:
        return ()
    # a disabled tool is never offered: a head keeping one of the guarded name beside the
    # renamed tool it calls removed it as surely as one that dropped it; one disabled on
    # the base too was never offered there either, and its guard stays a guard
    offered = _offered(head)
    unlisted, named = _unlisted(offered), _as_named(offered)
    base_lacks = {found.at for found in unknown_tools(agent, _offered(base), fixture)}
    removed: dict[tuple[str, bool], RemovedTool] = {}
    for found in unknown_tools(agent, named, fixture):
        if found.wants_a_call or found.at in base_lacks:
            continue
        stand_in = found.kind in STAND_INS
        had = f"agent {agent!r} has the tool {found.name!r} on the base branch, and the pull "
        why = (
            f"`{found.kind}` of the base's fixture answers it, so the renamed tool would "
            "answer in place of what the base recorded, and the run fails before it starts"
            if stand_in
            else "this check of the base's fixture would pass whatever the agent does, so it fails"
        )
        gone = "request removed or renamed it"
        if unlisted:
            servers = ", ".join(repr(name) for name in unlisted)
            gone = (
                f"request's agent names it nowhere (its MCP servers {servers} list their tools "
                "with no `tools.allow`, so whether they offer it is not known)"
            )
            why += ". Name the server's tools in its `tools.allow`"
        removed.setdefault(
            (found.name, stand_in),
            RemovedTool(
                found.name,
                f"{had}{gone}: {why}. Keep the tool as the base names it; a removal on "
                "purpose is what the bypass label is for",
                stand_in,
            ),
        )
    return tuple(removed.values())


def unoffered_tools(
    agent: str,
    fixture: EvalFixtureSpec,
    base: tuple[Collection[str] | None, bool],
    head: Collection[str],
) -> tuple[RemovedTool, ...]:
    """The tools named by the checks of `fixture` (one the base gates with) that pass without
    a call of them, which the head's run of `agent` offered its model in none of its calls
    (`head`: a program's `Trace.offered_tools`, a definition's `named_tools`) and the base
    side offers, where a program is on either side: `base` is
    what it offers and whether that is its definition's list (a declarative agent), else what
    its runs of the fixture offered; None when none of them has said, which is not known
    and fails as well. A name the head offers is a guard that sees its calls."""
    offered, listed = base
    removed: dict[str, RemovedTool] = {}
    for _, kind, written, wants_a_call in _named(fixture):
        if wants_a_call or kind in STAND_INS or written in removed:
            continue
        if any(tool_names.stands_for(name, written) for name in head):
            continue
        if offered is not None and not any(
            tool_names.stands_for(name, written) for name in offered
        ):
            continue  # a guard against a tool neither side offers
        had = (
            f"agent {agent!r} has the tool {written!r} on the base branch"
            if listed
            else f"agent {agent!r} offered its model the tool {written!r} in the base branch's "
            "run of this fixture"
        )
        gone = "so the pull request removed or renamed it"
        if offered is None:
            had = (
                f"whether agent {agent!r} offers its model the tool {written!r} on the base "
                "branch is not known (no base run of this fixture said what it offered before "
                "this one was scored, or its MCP servers list their tools with no `tools.allow`)"
            )
            gone = "so whether the pull request removed or renamed it is not known"
        removed[written] = RemovedTool(
            written,
            f"{had}, and the pull request's run offered it in none of its calls, {gone}: this "
            "check of the base's fixture would pass whatever the agent does, so it fails. "
            "Keep the tool as the base names it (a program's own tools are named in the "
            "requests it sends its model); a removal on purpose is what the bypass label is for",
        )
    return tuple(removed.values())


def gate_guards(
    head: ResourceSet, base: ResourceSet, gated: Collection[str]
) -> tuple[dict[tuple[str, str], tuple[RemovedTool, ...]], frozenset[tuple[str, str]]]:
    """Of each (Eval, fixture) of the head's definitions whose fixture the base gates with
    (`gated`) and whose Eval's agent is on both sides: its `removed_tools` where it has any
    (two declarative agents); and, where the agent is a bring-your-own one on either side (or
    the base's tools are not known before a run: MCP servers with no `tools.allow`) and a
    check passes without a call of a tool it names, the pair, whose head runs are held to
    what the base side offers (`unoffered_tools`)."""
    removed: dict[tuple[str, str], tuple[RemovedTool, ...]] = {}
    offered: set[tuple[str, str]] = set()
    for eval_name, located in head.evals.items():
        target = located.resource.spec.target_agent
        head_agent, base_agent = head.agents.get(target), base.agents.get(target)
        if head_agent is None or base_agent is None:
            continue
        on_head, on_base = head_agent.resource.spec, base_agent.resource.spec
        # a program on either side, or a base whose tools are not known before a run (its
        # MCP servers list theirs with no `tools.allow`): known from what its runs offered
        program = on_head.runtime is not None or agent_tools(on_base) is None
        # the same agent on both sides has removed no tool: `removed_tools` finds none, and
        # asking it of each fixture of a suite's every agent cost more than the rest here
        changed = on_head != on_base
        for fixture in head.fixtures_of(located.resource):
            key, spec = (eval_name, fixture.resource.metadata.name), fixture.resource.spec
            if key[1] not in gated:
                continue
            if changed and (found := removed_tools(target, on_base, on_head, spec)):
                removed[key] = found
            if program and any(not wants and k not in STAND_INS for _, k, _, wants in _named(spec)):
                offered.add(key)
    return removed, frozenset(offered)


def _named(fixture: EvalFixtureSpec) -> Iterator[tuple[PathKey, str, str, bool]]:
    """Each tool name the fixture gives: where, in which field or assertion type, the name,
    and whether a check wants a call of it (else it passes without one, or stands in)."""
    for index, name in enumerate(fixture.shadow_tools or []):
        yield ("spec", "shadowTools", index), "shadowTools", name, False
    for index, entry in enumerate(fixture.tool_replay or []):
        yield ("spec", "toolReplay", index, "tool"), "toolReplay", entry.tool, False
    yield from _in(fixture.assertions, ("spec", "assertions"))
    conversation = fixture.conversation
    for index, name in enumerate(conversation.handoff_tools if conversation else []):
        yield ("spec", "conversation", "handoffTools", index), HANDOFF, name, True
    turns = fixture.conversation.turns if fixture.conversation is not None else None
    for number, turn in enumerate(turns or []):
        yield from _in(turn.assertions, ("spec", "conversation", "turns", number, "assertions"))


def _in(assertions: Sequence[Assertion], at: PathKey) -> Iterator[tuple[PathKey, str, str, bool]]:
    for index, assertion in enumerate(assertions):
        here: PathKey = (*at, index)
        if isinstance(assertion, AssertSetAssertion):
            yield from _in(assertion.assertions, (*here, "assertions"))
            continue
        for field_at, name, wants_a_call in _fields(assertion, here):
            yield field_at, assertion.type, name, wants_a_call


def _fields(assertion: Assertion, at: PathKey) -> list[tuple[PathKey, str, bool]]:
    """The assertion's fields that name a tool: where, the name, whether it wants a call."""
    return [((*at, *field), name, wants) for field, name, wants in tool_fields(assertion)]
