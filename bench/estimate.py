"""The budget's estimate against what runs spent: model calls, tokens and cost.

Two suites, each run once with `evalward run --json` (whose `spending` key holds the estimate
the budget would trim by and what the providers answered):

- the bundled examples on the mock provider (`examples/mock-replies.yaml`), which counts
  tokens at four characters a token; its calls are priced as the models they stand for (an
  `evalward.yaml` prices `mock/<model>` as `<provider>/<model>`);
- a synthetic suite (bench/synth.py, one tool call and one answer per fixture) on the
  benchmark model server, whose usage counts the same way, priced as gpt-4.1-mini.

Prints, per suite, the estimate, the actual figures and their ratios (estimate / actual).

    python bench/estimate.py [--fixtures 200]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml
from common import EVALWARD, ROOT, model_server, timed
from synth import generate

from evalward.providers.pricing import DEFAULT_PRICES


def spending(command: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    run = timed([*command, "--json", "--no-cache", "--no-history"], env=env)
    document: dict[str, Any] = json.loads(run.stdout)
    return dict(document["spending"])


def examples() -> dict[str, Any]:
    repo = Path(tempfile.mkdtemp(prefix="evalward-estimate-"))
    shutil.copytree(ROOT / "examples", repo / "examples")
    config = yaml.safe_load((ROOT / "evalward.yaml").read_text())
    config["pricing"] = {
        f"mock/{model_id.partition('/')[2]}": {"input": price.input, "output": price.output}
        for model_id, price in DEFAULT_PRICES.items()
    }
    (repo / "evalward.yaml").write_text(yaml.safe_dump(config))
    mock = repo / "examples" / "mock-replies.yaml"
    return spending([*EVALWARD, "run", str(repo), "--mock-script", str(mock)])


def synthetic(fixtures: int) -> dict[str, Any]:
    repo = Path(tempfile.mkdtemp(prefix="evalward-estimate-"))
    generate(repo, 1, fixtures, tools=True, parallel=None)
    price = DEFAULT_PRICES["openai/gpt-4.1-mini"]
    pricing = {"openai/bench-model": {"input": price.input, "output": price.output}}
    (repo / "evalward.yaml").write_text(yaml.safe_dump({"pricing": pricing}))
    with model_server(1.0) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "bench"}
        return spending([*EVALWARD, "run", str(repo), "--parallel", "32"], env)


def report(name: str, figures: dict[str, Any]) -> None:
    estimate, actual = figures["estimate"], figures["actual"]
    print(name)
    for key, unit in (("calls", "model calls"), ("tokens", "tokens"), ("costUsd", "USD")):
        ratio = estimate[key] / actual[key] if actual[key] else float("nan")
        figures = f"estimated {estimate[key]:>12,.4f}  actual {actual[key]:>12,.4f}"
        print(f"  {unit:12} {figures}  ratio {ratio:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fixtures", type=int, default=200)
    args = parser.parse_args()
    report("bundled examples, mock provider", examples())
    report(f"synthetic suite, {args.fixtures} fixtures x 2 calls", synthetic(args.fixtures))


if __name__ == "__main__":
    main()
