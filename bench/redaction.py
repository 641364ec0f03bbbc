"""The cost of redaction: a 10 MB report (JSON-like text with traces) redacted whole and
streamed, with 5 secrets of realistic shapes, a few of them echoed in it in several forms.

    python bench/redaction.py [--mb 10] [--repeat 5]
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import statistics
import string
import time

from evalward.security import Redactor

SECRETS = [
    "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0",
    "sk-ant-api03-" + "z" * 20 + "Y9x8W7v6U5t4",
    "ghs_" + "16C7e42F292c6912E7710c838347Ae178B4a",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    'p@ss w0rd|with*stars_&<"quotes">',
]


def report(megabytes: int) -> str:
    """Text shaped like results.json: JSON lines of traces with words, numbers and ids."""
    rng = random.Random(7)
    words = ["the", "order", "shipped", "tool", "lookup_order", "customer", "refund", "why"]
    lines = []
    size = 0
    while size < megabytes * 1_000_000:
        content = " ".join(rng.choice(words) for _ in range(40))
        ident = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(24))
        step = {"type": "message", "id": ident, "content": content, "tokens": rng.randint(1, 999)}
        if rng.random() < 0.001:
            secret = rng.choice(SECRETS)
            step["content"] += " " + rng.choice(
                [secret, base64.b64encode(("x" + secret).encode()).decode(), secret.encode().hex()]
            )
        line = json.dumps(step)
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    text = report(args.mb)
    start = time.perf_counter()
    redact = Redactor(SECRETS)
    built = time.perf_counter() - start
    whole, streamed = [], []
    for _ in range(args.repeat):
        start = time.perf_counter()
        out = redact(text)
        whole.append(time.perf_counter() - start)
        chunks = [text[i : i + 4096] for i in range(0, len(text), 4096)]
        start = time.perf_counter()
        piece = "".join(redact.stream(chunks))
        streamed.append(time.perf_counter() - start)
        assert piece == out
    print(
        f"redaction of {len(text) / 1e6:.1f} MB, {len(SECRETS)} secrets "
        f"({out.count('***')} found): build {built * 1000:.0f} ms, "
        f"whole median {statistics.median(whole):.3f} s, "
        f"streamed median {statistics.median(streamed):.3f} s over {args.repeat}"
    )


if __name__ == "__main__":
    main()
