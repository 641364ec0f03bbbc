#!/usr/bin/env python3
"""Write docs/results.schema.json, results.json's JSON Schema, from the run record's model
(`evalward.record.schema.Results`), so the published schema cannot drift from what evalward
writes.

    python scripts/gen_results_schema.py           # rewrite docs/results.schema.json
    python scripts/gen_results_schema.py --check   # exit 1 when it is out of date
"""

from __future__ import annotations

import json
import sys

from generated import ROOT, write_or_check

from evalward.record.schema import results_json_schema

TARGET = ROOT / "docs" / "results.schema.json"


def main() -> int:
    return write_or_check(
        TARGET,
        lambda: json.dumps(results_json_schema(), indent=2, ensure_ascii=False) + "\n",
        "gen_results_schema.py",
        __doc__.splitlines()[0],
    )


if __name__ == "__main__":
    sys.exit(main())
