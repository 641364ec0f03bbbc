"""P1 against promptfoo: the same 1,000 cases, one model call each, equivalent `contains` and
`regex` assertions, the same OpenAI-compatible server (50 ms latency), concurrency 32, run back
to back. Prints both wall times (median of --runs), their ratio (target: evalward <= 0.5 x
promptfoo) and whether both tools gave every case the same pass/fail.

Needs promptfoo from npm:  npm install --prefix /tmp/pf promptfoo@0.121.20
    python bench/p1_promptfoo.py --promptfoo /tmp/pf/node_modules/.bin/promptfoo [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
from pathlib import Path

import yaml
from common import EVALWARD, model_server, timed
from synth import expected_text, generate

PROMPTFOO_ENV = {
    "PROMPTFOO_DISABLE_TELEMETRY": "1",
    "PROMPTFOO_DISABLE_UPDATE": "1",
    "PROMPTFOO_DISABLE_DEBUG_LOG": "1",
    # its remaining outbound calls fail at once instead of waiting on a closed network
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "NO_PROXY": "127.0.0.1,localhost",
}


FAIL_EVERY = 7
"""Every 7th case expects the wrong text, so that both tools have failures to agree on."""


def promptfoo_config(cases: int, base_url: str) -> dict[str, object]:
    return {
        "providers": [
            {"id": "openai:chat:bench-model", "config": {"apiBaseUrl": base_url, "apiKey": "bench"}}
        ],
        "prompts": ["{{prompt}}"],
        "tests": [
            {
                "vars": {"prompt": f"case {i} of agent-0000"},
                "assert": [
                    {"type": "contains", "value": f"case {expected_text(i, FAIL_EVERY)} of"},
                    {"type": "regex", "value": r"answer: case \d+"},
                ],
            }
            for i in range(cases)
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--promptfoo", required=True)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="evalward-vs-promptfoo-"))
    repo = work / "repo"
    generate(repo, 1, args.cases, tools=False, parallel=args.concurrency, fail_every=FAIL_EVERY)
    ours, theirs = [], []
    with model_server(args.latency_ms) as server:
        config = work / "promptfooconfig.yaml"
        config.write_text(yaml.safe_dump(promptfoo_config(args.cases, server.base_url)))
        for _ in range(args.runs):
            out = work / "out"
            mine = timed(
                [
                    *EVALWARD,
                    "run",
                    str(repo),
                    "--parallel",
                    str(args.concurrency),
                    "--no-cache",
                    "--no-history",
                    "--output-dir",
                    str(out),
                ],
                env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "bench"},
            )
            assert mine.returncode == 1, "the failing cases should fail the Eval"
            ours.append(mine.wall)
            peer = timed(
                [
                    args.promptfoo,
                    "eval",
                    "-c",
                    str(config),
                    "--max-concurrency",
                    str(args.concurrency),
                    "--no-cache",
                    "--no-write",
                    "-o",
                    str(work / "pf.json"),
                ],
                env={**PROMPTFOO_ENV, "HOME": str(work)},
                cwd=work,
                ok=(0, 100),  # promptfoo exits 100 when some cases fail
            )
            theirs.append(peer.wall)
    evalward_pass = {
        int(re.search(r"case-(\d+)$", f["fixture"]).group(1)): f["status"] == "pass"  # type: ignore[union-attr]
        for f in json.loads((work / "out" / "results.json").read_text())["fixtures"]
    }
    promptfoo_pass = {
        int(re.search(r"case (\d+) of", r["vars"]["prompt"]).group(1)): bool(r["success"])  # type: ignore[union-attr]
        for r in json.loads((work / "pf.json").read_text())["results"]["results"]
    }
    mine_median, peer_median = statistics.median(ours), statistics.median(theirs)
    print(
        f"P1 vs promptfoo: {args.cases} cases x 1 call, concurrency {args.concurrency}, "
        f"{args.latency_ms:g} ms latency, median of {args.runs}"
    )
    print(f"  evalward   {mine_median:.2f} s   runs: {', '.join(f'{w:.2f}' for w in ours)}")
    print(f"  promptfoo  {peer_median:.2f} s   runs: {', '.join(f'{w:.2f}' for w in theirs)}")
    print(f"  ratio      {mine_median / peer_median:.2f}   (target <= 0.50)")
    same = evalward_pass == promptfoo_pass
    print(
        f"  verdicts   {'identical' if same else 'DIFFER'} for {len(evalward_pass)} cases "
        f"({sum(evalward_pass.values())} pass in evalward, "
        f"{sum(promptfoo_pass.values())} in promptfoo)"
    )


if __name__ == "__main__":
    main()
