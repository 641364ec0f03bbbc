#!/usr/bin/env python3
"""Write docs/results.schema.json, results.json's JSON Schema, from the run record's model
(`evalward.record.schema.Results`), so the published schema cannot drift from what evalward
writes.

    python scripts/gen_results_schema.py           # rewrite docs/results.schema.json
    python scripts/gen_results_schema.py --check   # exit 1 when it is out of date
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from evalward.record.schema import results_json_schema

TARGET = Path(__file__).resolve().parents[1] / "docs" / "results.schema.json"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true", help="fail when the file is stale")
    args = parser.parse_args()
    text = json.dumps(results_json_schema(), indent=2, ensure_ascii=False) + "\n"
    if args.check:
        if not TARGET.exists() or TARGET.read_text(encoding="utf-8") != text:
            print(f"{TARGET.name} is out of date: run scripts/gen_results_schema.py")
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
