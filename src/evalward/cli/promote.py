"""`evalward promote TRACE --agent A`: turn a trace into an EvalFixture (seed 003's flywheel)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from evalward.host import Host


def register(commands: Any) -> None:
    parser = commands.add_parser("promote", help="turn a trace into an EvalFixture YAML")
    parser.add_argument(
        "trace", help="evalward trace JSON, OpenAI/Anthropic transcript or OTel GenAI spans"
    )
    parser.add_argument("--agent", required=True, help="the agent the fixture tests (its label)")
    parser.add_argument("--name", help="the fixture's name (default: promoted-<trace id>)")
    parser.add_argument(
        "--output",
        "-o",
        help="write into this YAML file of resources (the fixture appended, its text kept, or "
        "one of the same name replaced); default: print to stdout",
    )
    parser.add_argument(
        "--format", choices=("evalward", "openai", "anthropic", "otel"), help="skip detection"
    )
    parser.add_argument("--kind", choices=("golden", "bad", "edge"), default="golden")
    parser.add_argument(
        "--severity", choices=("low", "medium", "high", "critical"), default="medium"
    )
    parser.add_argument(
        "--contains", action="append", default=[], help="also assert the output contains this"
    )
    parser.add_argument("--rubric", help="also add a judge assertion with this rubric")
    parser.add_argument(
        "--no-replay", action="store_true", help="do not record the tool results as toolReplay"
    )
    parser.add_argument(
        "--conversation",
        action="store_true",
        help="each user message a scripted turn with the tools called on it "
        "(docs/conversations.md), not one replayed input",
    )


def main(args: argparse.Namespace, out: TextIO, host: Host) -> int:
    import re
    import subprocess
    from pathlib import Path

    from evalward.authoring.promote import (
        Promotion,
        build_fixture,
        check_against,
        default_name,
        load_trace,
        render,
        write,
    )
    from evalward.cli._local import repository
    from evalward.definitions.loader import load_what_loads
    from evalward.errors import EXIT_OK, ConfigError
    from evalward.resources.common import NAME_PATTERN

    host.started()  # no run follows: nothing here lives long enough to be worth the pause
    if "" in args.contains:  # the fixture's check would fail at the model, not the flag
        raise ConfigError(
            '--contains "": the text the output must contain is empty, and every output '
            "contains that; give the text (e.g. --contains shipped), or leave out --contains"
        )
    if args.rubric is not None and not args.rubric.strip():  # it was added as no judge at all
        raise ConfigError(
            f"--rubric {args.rubric!r}: the judge's rubric is empty, so no judge assertion "
            "would be added; give what the judge checks (e.g. --rubric 'says when the order "
            "ships'), or leave out --rubric"
        )
    loaded = load_trace(Path(args.trace), args.format)
    name = args.name or default_name(loaded.trace_id)
    if not re.match(NAME_PATTERN, name):
        raise ConfigError(
            f"--name {name!r}: a fixture name is lowercase letters, digits, '.', '_' and '-', "
            "starting and ending with a letter or digit"
        )
    email = subprocess.run(
        ["git", "config", "user.email"], capture_output=True, text=True, check=False
    ).stdout.strip()
    promotion = Promotion(
        agent=args.agent,
        name=name,
        promoted_by=email or None,
        kind=args.kind,
        severity=args.severity,
        contains=tuple(args.contains),
        rubric=args.rubric,
        replay=not args.no_replay,
        conversation=args.conversation,
    )
    document = build_fixture(loaded, promotion)
    resources, _ = load_what_loads(repository("."))
    check_against(resources, promotion, args.output)
    if args.output:
        outcome = write(Path(args.output), document)
        print(f"evalward: fixture {name} {outcome} in {args.output}", file=out)
    else:
        print(render(document), end="", file=out)
    return EXIT_OK
