"""`evalward plan`: what would run and why, with the model calls and cost it would take.

Nothing runs and no key is needed: the change is detected and planned exactly as `run`
would, then estimated with budget.estimate_run (the same estimate the budget trims by).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

from evalward.cli._args import add_mock, add_root, add_selection

if TYPE_CHECKING:
    from collections.abc import Mapping

    from evalward.git import Git
    from evalward.host import Host
    from evalward.plan.changes import ChangeSet
    from evalward.plan.plan import Plan, PlannedRun
    from evalward.providers.pricing import PriceTable
    from evalward.resources import ResourceSet
    from evalward.rundata.sides import Side


def register(commands: Any) -> None:
    parser = commands.add_parser("plan", help="show what would run and why, and its cost")
    add_root(parser)
    add_selection(parser)
    add_mock(parser)
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")


def _eval_row(
    name: str,
    plan: Plan,
    resources: Mapping[Side, ResourceSet],
    prices: PriceTable,
    changes: ChangeSet,
    base: str | None,
) -> tuple[dict[str, Any], float, bool]:
    """One Eval of the plan: why it runs, its runs per side, their estimated calls and cost;
    the cost unrounded, and whether a model of it has no price (the cost is a lower bound)."""
    from evalward.plan.estimate import adaptive_ceiling, estimate_run
    from evalward.rundata.sides import Side

    runs = [r for r in plan.runs if r.eval == name]
    estimates = [estimate_run(run, resources[run.side], prices) for run in runs]
    definition = resources[Side.head].evals[name].resource
    cost = sum(e.cost_usd or 0.0 for e in estimates)
    row = {
        "name": name,
        "agent": definition.spec.target_agent,
        "why": changes.affected_evals.get(name, []) if base else ["every Eval runs without --base"],
        "fixtures": len({r.fixture for r in runs if r.side is Side.head}),
        "headRuns": sum(1 for r in runs if r.side is Side.head),
        "baseRuns": sum(1 for r in runs if r.side is Side.base),
        "modelCalls": sum(e.calls for e in estimates),
        "costUsd": round(cost, 6),
    }
    if name in plan.adaptive:  # the plan holds the minimum reps: the range goes up to this
        head_runs, base_runs, most = adaptive_ceiling(plan, dict(resources), prices, name)
        row["atMost"] = {"headRuns": head_runs, "baseRuns": base_runs, "modelCalls": most.calls}
        paired = _paired_base_runs(name, runs, plan, resources[Side.head])
        if paired:  # asked for whatever the head's runs say: in the estimate, as the run's
            also = [estimate_run(run, resources[Side.base], prices) for run in paired]
            also_cost = sum(e.cost_usd or 0.0 for e in also)
            estimates += also
            cost += also_cost
            row["pairedBaseRuns"] = len(paired)
            row["pairedModelCalls"] = sum(e.calls for e in also)
            row["pairedCostUsd"] = round(also_cost, 6)
    held = plan.base_when_failing.get(name, [])
    if held:  # base runs only where read: at most all of them, when the head fails everything
        calls = sum(estimate_run(run, resources[run.side], prices).calls for run in held)
        row["atMost"] = {
            "headRuns": row["headRuns"],
            "baseRuns": len(held),
            "modelCalls": sum(e.calls for e in estimates) + calls,
            "whereRead": True,
        }
    return row, cost, any(e.cost_usd is None for e in estimates)


def _paired_base_runs(
    name: str, runs: list[PlannedRun], plan: Plan, head: ResourceSet
) -> list[PlannedRun]:
    """The base runs an adaptive Eval's pairwise judge asks for before its tests can say
    anything: one paired with each head run of a fixture it judges that the base has."""
    from evalward.execute.pairs import judged_fixtures
    from evalward.plan.plan import PlannedRun
    from evalward.rundata.sides import Side

    judged, on_base = judged_fixtures(plan, head, name), set(plan.adaptive.get(name, ()))
    return [
        PlannedRun(Side.base, name, run.fixture, run.rep)
        for run in runs
        if run.side is Side.head and run.fixture in on_base and run.fixture in judged
    ]


def main(args: argparse.Namespace, out: TextIO, host: Host) -> int:
    import json

    from evalward.cli._local import WITHOUT_BASE, Selection, check_base, repository
    from evalward.errors import EXIT_OK
    from evalward.git import Git
    from evalward.plan.prepare import prepare_change
    from evalward.plan.run_setup import Revisions, RunSetup
    from evalward.providers.registry import build_providers, repo_providers

    env = host.env
    root = repository(args.path)
    providers = build_providers(
        env, mock_script=args.mock_script, config=repo_providers(root), cache_root=root
    )
    git = Git(root)
    check_base(git, args.base)
    setup = RunSetup(
        git,
        Revisions(base=args.base),
        providers,
        env,
        shape=Selection.of(args).apply,
        started=host.started,
        unloadable_base=WITHOUT_BASE,
    )
    with prepare_change(setup) as prepared:
        plan, changes = prepared.plan, prepared.changes
        resources = {side: c.resources for side, c in prepared.checkouts.items()}
        rows = [
            _eval_row(name, plan, resources, providers.prices, changes, args.base)
            for name in plan.evals
        ]
    evals = [row for row, _, _ in rows]
    unpriced = any(lacks for _, _, lacks in rows)
    total_calls = sum(int(row["modelCalls"]) + row.get("pairedModelCalls", 0) for row in evals)
    # the calls at their most: each Eval's `atMost` where its rounds may go further
    most = sum(int(row.get("atMost", row)["modelCalls"]) for row in evals)
    total_cost = sum(cost for _, cost, _ in rows)
    document = {
        "base": args.base,
        "changedFiles": [
            {"status": c.status, "path": c.path, "oldPath": c.old_path}
            for c in changes.changed_files
        ],
        "changedAgents": changes.changed_agents,
        "cosmeticAgents": changes.cosmetic_agents,
        "evals": evals,
        "notRun": plan.not_run,
        "skippedBase": plan.skipped_base,
        "notes": prepared.notes,
        "modelCalls": total_calls,
        "costUsd": None if unpriced else round(total_cost, 6),
        "costComplete": not unpriced,
        "attribution": _attribution(git, args.base, most),
    }
    if args.json:
        print(json.dumps(document, indent=2), file=out)
    else:
        print(_render(document, unpriced, total_cost, most), file=out)
    return EXIT_OK


def _attribution(git: Git, base: str | None, most: int) -> dict[str, Any]:
    """What attribution may spend after the decision, as the base branch's `evalward.yaml`
    sets it (`attribution`): at most its budget's fraction of the run's calls at their most.
    Without a base nothing can regress, so it never runs."""
    from evalward.plan.prepare import config_at
    from evalward.resources.reading.repo_config import AttributionMode

    if base is None:
        return {
            "mode": AttributionMode.off.value,
            "budget": 0.0,
            "atMostModelCalls": 0,
            "maxMinutes": 0.0,
        }
    settings = config_at(git, git.resolve(base)).attribution
    off = settings.mode is AttributionMode.off
    return {
        "mode": settings.mode.value,
        "budget": settings.budget,
        "atMostModelCalls": 0 if off else int(settings.budget * most),
        "maxMinutes": 0.0 if off else settings.max_minutes,
    }


def _attribution_line(entry: dict[str, Any]) -> str:
    """The plan's attribution line: when it would run and what it may spend, apart."""
    if entry["mode"] == "off":
        return "Attribution: off (the base branch's evalward.yaml, `attribution.mode`)"
    when = "if the gate blocks" if entry["mode"] == "on-block" else "if a fixture regresses"
    return (
        f"Attribution ({entry['mode']}): {when}, at most ~{entry['atMostModelCalls']} more "
        f"model calls after the decision ({entry['budget']:g} × the run's) and "
        f"{entry['maxMinutes']:g} minutes, apart from the estimate above"
    )


def _eval_lines(entry: dict[str, Any]) -> list[str]:
    """One Eval of the plan: why it runs, its runs and their estimate, and how far adaptive
    reps, held-back base runs or a pairwise judge may take it."""
    base = f", {entry['baseRuns']} base runs" if entry["baseRuns"] else ""
    lines = [
        f"  {entry['name']} (agent {entry['agent']}): {'; '.join(entry['why'])}\n"
        f"    {entry['fixtures']} fixtures, {entry['headRuns']} head runs{base}; "
        f"~{entry['modelCalls']} model calls, ~${entry['costUsd']:.4f}"
    ]
    most = entry.get("atMost")
    if most is not None and most.get("whereRead"):
        lines.append(
            f"    base runs where read: at most {most['baseRuns']} (those of the fixtures "
            f"the head does not pass), ~{most['modelCalls']} model calls in all"
        )
    elif most is not None:
        lines.append(
            f"    adaptive reps: the runs above at least, at most {most['headRuns']} head "
            f"and {most['baseRuns']} base runs, ~{most['modelCalls']} model calls, "
            "where outcomes stay open"
        )
    if entry.get("pairedBaseRuns"):
        lines.append(
            f"    pairwise judge: {entry['pairedBaseRuns']} base runs too, one paired with "
            f"each head run above, ~{entry['pairedModelCalls']} model calls"
        )
    return lines


def _render(document: dict[str, Any], unpriced: bool, priced_cost: float, most: int) -> str:
    """The plan in words for a terminal: a changed file's name quoted where it holds what
    would not show as itself (a newline would forge a line of the plan), and any other
    control character named, so that no name a pull request wrote drives the terminal."""
    from evalward.errors import printable
    from evalward.text.escaping import reveal_controls

    lines: list[str] = []
    if document["base"]:
        lines.append(f"Compared with {document['base']}:")
        if not document["changedFiles"]:
            lines.append("  no file changed")
        lines += [
            f"  {change['status']} {printable(change['path'])}"
            for change in document["changedFiles"]
        ]
        lines.append("Changed agents:")
        if not document["changedAgents"]:
            lines.append("  none")
        lines += [
            f"  {agent}: {'; '.join(reasons)}"
            for agent, reasons in document["changedAgents"].items()
        ]
        lines += [f"  {name}: no semantic change (not run)" for name in document["cosmeticAgents"]]
    else:
        lines.append("No --base: every Eval runs, with no baseline.")
    lines.append("Evals to run:")
    if not document["evals"]:
        lines.append("  none")
    lines += [line for entry in document["evals"] for line in _eval_lines(entry)]
    lines += [f"  {name}: not run: {why}" for name, why in document["notRun"].items()]
    lines += [f"  {name}: no base run: {why}" for name, why in document["skippedBase"].items()]
    lines += [f"note: {note}" for note in document["notes"]]
    cost = f"~${priced_cost:.4f}"
    if unpriced:
        cost += " for the priced models (a model in the plan has no price)"
    upto = f" (up to ~{most} with adaptive reps)" if most > document["modelCalls"] else ""
    lines.append(f"Estimate: ~{document['modelCalls']} model calls{upto}, {cost}")
    if document["base"]:
        lines.append(_attribution_line(document["attribution"]))
    return reveal_controls("\n".join(lines))
