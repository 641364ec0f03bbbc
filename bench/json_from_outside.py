"""What reading JSON from outside costs (`evalward.text.jsontext.loads`): an agent's trace
event line, a model request's body of 40 KB as the proxy reads it (bytes) and a model reply
as the proxy reads it (text), each non-ASCII; and a service's state of 1.5 MB read strictly.
This tree's evalward and each `--before` tree's alternated, each round in a fresh
interpreter; the median of each case's time a read.

    python bench/json_from_outside.py [--rounds 7] [--before NAME=SRC ...]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

from common import alternation

READS = """\
import json, time
from evalward.text import jsontext

event = json.dumps({"type": "tool_call", "tool": "lookup_order", "id": "c1",
                    "arguments": {"order_id": "12345", "note": "café ☕"}}).encode()
turn = {"role": "user", "content": "Où est ma commande ? " * 20}
body = json.dumps({"model": "gpt-4.1-mini", "messages": [turn] * 90}).encode()
reply = json.dumps({"id": "x", "choices": [{"message": {"role": "assistant",
                    "content": "Votre commande est expédiée. " * 300}}]}, ensure_ascii=False)
orders = {f"W{i:07d}": {"amount": i * 1.25, "items": [{"id": str(i), "name": "thé vert"}] * 3,
                        "ok": i % 2 == 0} for i in range(5000)}
state = json.dumps({"orders": orders}, ensure_ascii=False).encode()
cases = [
    ("an event line", len(event), 20000, lambda: jsontext.loads(event, max_depth=64)),
    ("a request body", len(body), 400, lambda: jsontext.loads(body, max_depth=64)),
    ("a reply's text", len(reply.encode()), 2000, lambda: jsontext.loads(reply)),
    ("a state, strictly", len(state), 5,
     lambda: jsontext.loads(state, max_depth=64, unique_keys=True)),
]
out = []
for name, size, times, read in cases:
    read()
    started = time.perf_counter()
    for _ in range(times):
        read()
    out.append([name, size, (time.perf_counter() - started) / times])
print(json.dumps(out))
"""


def main() -> None:
    rounds, trees = alternation(__doc__, 7)
    times: dict[str, dict[str, list[float]]] = {name: {} for name in trees}
    sizes: dict[str, int] = {}
    for _ in range(rounds):
        for tree, src in trees.items():
            done = subprocess.run(
                [sys.executable, "-c", READS],
                env={**os.environ, "PYTHONPATH": src},
                capture_output=True,
                text=True,
                check=True,
            )
            for case, size, seconds in json.loads(done.stdout):
                times[tree].setdefault(case, []).append(seconds)
                sizes[case] = size
    for tree, cases in times.items():
        shown = "; ".join(
            f"{case} ({sizes[case]:,} bytes) {_shown(statistics.median(measured))}"
            for case, measured in cases.items()
        )
        print(f"{tree}: a read, median over {rounds} alternated rounds: {shown}")


def _shown(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} µs" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"


if __name__ == "__main__":
    main()
