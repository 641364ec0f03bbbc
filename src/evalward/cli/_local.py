"""What the run, plan and merge commands share: choosing runs, building clients, reporting.

Imported only by commands that run the engine, so it may import the whole pipeline.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from evalward.errors import ConfigError
from evalward.git import Git
from evalward.past.trend import Trend
from evalward.record.evaluation import Evaluation
from evalward.record.schema import RunInfo
from evalward.record.write import results_document
from evalward.report import files
from evalward.report.markdown import marker_for, render_comment, report_context
from evalward.resources import ResourceSet
from evalward.resources.problems import did_you_mean
from evalward.rundata.sides import Side
from evalward.security import Redactor
from evalward.stages.gate import GateDecision
from evalward.stages.plan import Plan, PlannedRun
from evalward.text import escaping


@dataclass(frozen=True)
class Selection:
    """--agent/--eval/--fixture/--reps: narrow the plan after it is built from the change."""

    agents: tuple[str, ...] = ()
    evals: tuple[str, ...] = ()
    fixtures: tuple[str, ...] = ()
    reps: int | None = None

    @classmethod
    def of(cls, args: argparse.Namespace) -> Selection:
        return cls(tuple(args.agent), tuple(args.eval), tuple(args.fixture), args.reps)

    def apply(self, plan: Plan, resources: Mapping[Side, ResourceSet]) -> Plan:
        head = resources[Side.head]
        _known("--agent", self.agents, head.agents)
        _known("--eval", self.evals, head.evals)
        _known("--fixture", self.fixtures, head.fixtures)

        def wanted(name: str) -> bool:
            if self.evals and name not in self.evals:
                return False
            target = head.evals[name].resource.spec.target_agent if name in head.evals else ""
            return not self.agents or target in self.agents

        evals = [name for name in plan.evals if wanted(name)]
        runs = [
            run
            for run in plan.runs
            if run.eval in evals and (not self.fixtures or run.fixture in self.fixtures)
        ]
        if self.reps is not None:
            groups = dict.fromkeys((r.side, r.eval, r.fixture) for r in runs)
            runs = [PlannedRun(s, e, f, rep) for s, e, f in groups for rep in range(self.reps)]
        return dataclasses.replace(plan.with_runs(runs), evals=evals)


def _known(option: str, names: tuple[str, ...], defined: Mapping[str, Any]) -> None:
    for name in names:
        if name not in defined:
            raise ConfigError(
                f"{option} {name}: no such resource in the repository"
                f"{did_you_mean(name, list(defined))}"
            )


def repository(path: str) -> Path:
    root = Path(path)
    if not root.is_dir():
        raise ConfigError(f"{root}: not a directory; give the repository root")
    return root.resolve()


def check_base(git: Git, base: str | None) -> None:
    """`--base` names a commit of a git repository that has one: a mistake in the command line
    (exit 2) is not a missing history in a workflow's checkout (git.py's words)."""
    if base is None:
        return
    if not git.run("rev-parse", "--git-dir", check=False).strip():
        raise ConfigError(
            f"--base {base}: {git.repo} is not in a git repository, so there is nothing to "
            "compare with; run evalward in a clone, or leave out --base to run every Eval"
        )
    for ref, what in ((base, f"--base {base}"), ("HEAD", "HEAD")):
        if not git.run("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False):
            missing = (
                "the repository has no commit yet"
                if ref == "HEAD"
                else f"no branch, tag or commit {base!r} in {git.repo}"
            )
            raise ConfigError(
                f"{what}: {missing}; give a branch, tag or commit it has (`git branch -a` "
                "lists the branches), or leave out --base to run every Eval"
            )


@dataclass(frozen=True)
class Output:
    """Where and how a local command shows its outcome: the stream it prints to, the redaction
    every printed or written text goes through, --json, and --output-dir; and what the
    command adds below the comment (`extra`) or to the results document (`extra_json`)."""

    out: TextIO
    redact: Redactor
    as_json: bool = False
    output_dir: str | None = None
    extra: str = ""
    extra_json: dict[str, Any] | None = None


def emit(
    output: Output,
    evaluation: Evaluation,
    decision: GateDecision,
    *,
    base: bool,
    run: RunInfo | None = None,
    trends: Mapping[str, Trend] | None = None,
) -> int:
    """Print the comment (or the results document with --json), write files, return the code.

    The files are what the action writes (comment.md as GitHub would render it); the comment
    printed is for a terminal, so its links and mentions are left intact (escaping.py).
    `run` says how far a run went, and whether a signal cancelled it.
    """
    out, redact = output.out, output.redact
    context = report_context(
        evaluation,
        decision,
        marker=marker_for("local"),
        run=run,
        show_changes=base,
        report_file=bool(output.output_dir),
    )
    if output.output_dir:
        files.write_reports(
            Path(output.output_dir),
            evaluation,
            decision,
            lambda: render_comment(context),
            redact,
            files.Shown(run, trends, context.summary),
        )
    if output.as_json:
        document = results_document(evaluation, decision, run, context.summary)
        document.update(output.extra_json or {})
        print(redact(json.dumps(document, indent=2)), file=out)
    else:
        print(redact(render_comment(context, sink=escaping.TERMINAL)), file=out)
        if output.extra:
            print(redact(output.extra), file=out)
    return decision.exit_code
