"""`evalward import promptfoo CONFIG`: a promptfoo suite as evalward Agents, EvalFixtures and
Evals, written beside the repository's other resources.

Everything is converted before anything is written: a part with no equivalent stops the
import (exit 2) with its file, line and what to write instead, unless `--skip-unsupported`
leaves it out and lists it. Files that exist are never overwritten.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

from evalward.cli._args import output_folder

if TYPE_CHECKING:
    from pathlib import Path

    from evalward.host import Host
    from evalward.importers.promptfoo.convert import PromptfooConversion

HEADER = "# Converted from {config} by `evalward import promptfoo`: {what}.\n"


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "import", help="convert another tool's eval config (promptfoo) into evalward resources"
    )
    parser.add_argument("tool", choices=["promptfoo"], help="the tool the config is for")
    parser.add_argument("config", help="its config file, e.g. promptfooconfig.yaml")
    parser.add_argument(
        "--output-dir",
        type=output_folder,
        metavar="DIR",
        help="where to write agents.yaml, fixtures.yaml and evals.yaml (default: evals/SUITE)",
    )
    parser.add_argument(
        "--name", help="the suite's name, which prefixes every resource (default: its description)"
    )
    parser.add_argument(
        "--skip-unsupported",
        action="store_true",
        help="leave out what has no equivalent (each part is listed) instead of stopping",
    )


def _write_files(texts: dict[Path, str], new: list[Path]) -> None:
    """Write each file of `texts`, all or none: nothing when one of `new` exists already,
    and a write that fails (a full disk cuts a file short) takes back the files written
    before it, which would otherwise make the next import refuse, they being there."""
    from evalward.errors import ConfigError, EvalwardError, refused_write, why_refused
    from evalward.files.rewrite import NotCreated, create_all

    existing = [str(p) for p in new if p.exists() or p.is_symlink()]
    if existing:
        raise ConfigError(
            f"{', '.join(existing)} already exist{'s' if len(existing) == 1 else ''}, so nothing "
            "was written; move them away or give another --output-dir"
        )
    try:
        create_all(texts)
    except NotCreated as failed:
        if not refused_write(failed.error):
            raise failed.error from None
        raise EvalwardError(
            f"{failed.path}: the machine refused the write ({why_refused(failed.error)}), so "
            "no file was written. Free space (or raise the file size limit) and run "
            "`evalward import` again"
        ) from None


def _check_size(path: Path, text: str, documents: list[Any], config: Path) -> None:
    """Refuse, before anything is written, a file larger than `evalward validate` reads: it
    is named with the promptfoo test (or config) its largest document came from."""
    import json

    from evalward.errors import ConfigError
    from evalward.resources.reading.yamlsource import MAX_FILE_BYTES

    size = len(text.encode())
    if size <= MAX_FILE_BYTES:
        return
    # as JSON, not written as YAML again: the largest's measure, at a fraction of the cost
    largest = max(documents, key=lambda document: len(json.dumps(document, default=str)))
    source = largest["metadata"].get("annotations", {}).get("promptfoo") or str(config)
    raise ConfigError(
        f"{source}: the import would write {path} of {size:,} bytes, over the "
        f"{MAX_FILE_BYTES // (1024 * 1024)} MiB a resource file may hold, so nothing was "
        f"written (its largest part is {largest['metadata']['name']!r}, from here): import the "
        "tests in parts, a config for each part, each with its own --name"
    )


def main(args: argparse.Namespace, out: TextIO, host: Host) -> int:
    from pathlib import Path

    import yaml

    from evalward.errors import EXIT_OK, ConfigError
    from evalward.git import Git
    from evalward.importers.promptfoo.convert import convert
    from evalward.importers.promptfoo.resources import render, slug

    host.started()  # no run follows: nothing here lives long enough to be worth the pause
    config = Path(args.config)
    if not config.is_file():
        raise ConfigError(f"{config}: no such file; give the promptfoo config to import")
    here = Path.cwd()
    root = Git(here).top() or here
    conversion = convert(
        config,
        root=root if config.resolve().is_relative_to(root) else config.resolve().parent,
        shown_from=here,
        name=slug(args.name) if args.name else None,
        skip_unsupported=args.skip_unsupported,
        env=host.env,
    )
    target = Path(args.output_dir) if args.output_dir else Path("evals") / conversion.suite
    files = {
        target / "agents.yaml": (conversion.agents, "the models it calls"),
        target / "fixtures.yaml": (conversion.fixtures, "one fixture per test and column"),
        target / "evals.yaml": (conversion.evals, "one Eval per prompt and provider"),
    }
    texts = {
        path: render(documents, HEADER.format(config=config.name, what=what))
        for path, (documents, what) in files.items()
    }
    for path, (documents, _) in files.items():
        _check_size(path, texts[path], documents, config)
    settings_file = root / "evalward.yaml"
    write_settings = bool(conversion.settings) and not (
        settings_file.exists() or settings_file.is_symlink()
    )
    settings = yaml.safe_dump(conversion.settings, sort_keys=False)
    if write_settings:  # last, and with the rest: a refused write takes back the three files
        what = "where its models answer"
        texts[settings_file] = HEADER.format(config=config.name, what=what) + settings
    _write_files(texts, new=list(files))
    print(
        f"evalward import: {config} → {target}/: {len(conversion.agents)} agents, "
        f"{len(conversion.fixtures)} fixtures, {len(conversion.evals)} evals"
        + (f"; {settings_file.name} with its provider settings" if write_settings else ""),
        file=out,
    )
    if conversion.settings and not write_settings:
        print(
            f"\nAdd to {settings_file} (it exists, so it was left as it is):\n{settings}", file=out
        )
    for note in [*conversion.notes, *_unpriced(conversion, root)]:
        print(f"note: {note}", file=out)
    for problem in conversion.dropped:
        print(f"left out: {problem.render()}", file=out)
    print("\nNext: evalward validate, then evalward run", file=out)
    return EXIT_OK


def _unpriced(conversion: PromptfooConversion, root: Path) -> list[str]:
    """A note for each model whose fixtures hold a dollar `cost` assertion while neither the
    built-in price list, the imported settings nor `root`'s evalward.yaml price it: each such
    assertion would be an error at every run, so the user learns it now, with what to write."""
    from evalward.errors import ConfigError
    from evalward.providers.pricing import PriceTable
    from evalward.resources.reading.repo_config import load_config

    try:
        own = load_config(root).pricing
    except ConfigError:  # `validate` says what is wrong with it; the note cannot tell
        own = {}
    priced = {**own, **conversion.settings.get("pricing", {})}
    models = {
        agent["metadata"]["name"]: list(agent["spec"].get("models", []))
        for agent in conversion.agents
    }
    prices = PriceTable()
    counted: dict[str, int] = {}
    for fixture in conversion.fixtures:
        spec = fixture["spec"]
        if any(a.get("type") == "cost" and "maxUsd" in a for a in spec.get("assertions", [])):
            for model in models.get(spec.get("targetAgent", ""), [])[:1]:
                if model not in priced and prices.of(model) is None:
                    counted[model] = counted.get(model, 0) + 1
    return [
        f"{count} fixture(s) check `cost` in dollars on {model}, which evalward has no price "
        "for: those checks would be errors; give its price in evalward.yaml, "
        f"`pricing: {{{model}: {{input: USD per million input tokens, output: USD per "
        "million output tokens}}`"
        for model, count in sorted(counted.items())
    ]
