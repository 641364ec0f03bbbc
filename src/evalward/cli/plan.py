"""`evalward plan`: what would run and why, with the model calls and cost it would take.

Nothing runs and no key is needed: the change is detected and planned exactly as `run`
would, then estimated with budget.estimate_run (the same estimate the budget trims by).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

from evalward.cli._args import add_mock, add_root, add_selection

if TYPE_CHECKING:
    from evalward.host import Host


def register(commands: Any) -> None:
    parser = commands.add_parser("plan", help="show what would run and why, and its cost")
    add_root(parser)
    add_selection(parser)
    add_mock(parser)
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")


def main(args: argparse.Namespace, out: TextIO, host: Host) -> int:
    import json

    from evalward.cli._local import Selection, check_base, repository
    from evalward.errors import EXIT_OK
    from evalward.estimate import estimate_run
    from evalward.git import Git
    from evalward.pipeline import prepare_change
    from evalward.providers.registry import build_providers, repo_providers
    from evalward.run_setup import Revisions, RunSetup
    from evalward.sides import Side

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
    )
    with prepare_change(setup) as prepared:
        plan, changes = prepared.plan, prepared.changes
        resources = {side: c.resources for side, c in prepared.checkouts.items()}
        evals: list[dict[str, Any]] = []
        total_calls, total_cost, unpriced = 0, 0.0, False
        for name in plan.evals:
            runs = [r for r in plan.runs if r.eval == name]
            calls, cost = 0, 0.0
            for run in runs:
                estimate = estimate_run(run, resources[run.side], providers.prices)
                calls += estimate.calls
                if estimate.cost_usd is None:
                    unpriced = True
                else:
                    cost += estimate.cost_usd
            total_calls += calls
            total_cost += cost
            evaluation = resources[Side.head].evals[name].resource
            evals.append(
                {
                    "name": name,
                    "agent": evaluation.spec.target_agent,
                    "why": changes.affected_evals.get(name, [])
                    if args.base
                    else ["every Eval runs without --base"],
                    "fixtures": len({r.fixture for r in runs if r.side is Side.head}),
                    "headRuns": sum(1 for r in runs if r.side is Side.head),
                    "baseRuns": sum(1 for r in runs if r.side is Side.base),
                    "modelCalls": calls,
                    "costUsd": round(cost, 6),
                }
            )
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
    }
    if args.json:
        print(json.dumps(document, indent=2), file=out)
    else:
        print(_render(document, unpriced, total_cost), file=out)
    return EXIT_OK


def _render(document: dict[str, Any], unpriced: bool, priced_cost: float) -> str:
    lines: list[str] = []
    if document["base"]:
        lines.append(f"Compared with {document['base']}:")
        if not document["changedFiles"]:
            lines.append("  no file changed")
        for change in document["changedFiles"]:
            lines.append(f"  {change['status']} {change['path']}")
        lines.append("Changed agents:")
        if not document["changedAgents"]:
            lines.append("  none")
        for agent, reasons in document["changedAgents"].items():
            lines.append(f"  {agent}: {'; '.join(reasons)}")
        for agent in document["cosmeticAgents"]:
            lines.append(f"  {agent}: no semantic change (not run)")
    else:
        lines.append("No --base: every Eval runs, with no baseline.")
    lines.append("Evals to run:")
    if not document["evals"]:
        lines.append("  none")
    for entry in document["evals"]:
        base = f", {entry['baseRuns']} base runs" if entry["baseRuns"] else ""
        lines.append(
            f"  {entry['name']} (agent {entry['agent']}): {'; '.join(entry['why'])}\n"
            f"    {entry['fixtures']} fixtures, {entry['headRuns']} head runs{base}; "
            f"~{entry['modelCalls']} model calls, ~${entry['costUsd']:.4f}"
        )
    for name, why in document["notRun"].items():
        lines.append(f"  {name}: not run: {why}")
    for name, why in document["skippedBase"].items():
        lines.append(f"  {name}: no base run: {why}")
    for note in document["notes"]:
        lines.append(f"note: {note}")
    cost = f"~${priced_cost:.4f}"
    if unpriced:
        cost += " for the priced models (a model in the plan has no price)"
    lines.append(f"Estimate: ~{document['modelCalls']} model calls, {cost}")
    return "\n".join(lines)
