"""What showing agent text costs, escape by escape: 1 MB of text in each of three shapes
(ASCII, accented prose, and prose with a stack of combining marks every 200 characters)
through `reveal_bidi` alone (the bidirectional controls), `reveal_marks` alone (stacks of
combining marks cut and counted) and `reveal_controls` (both, and the other controls: what
the comment, the log and the check run apply), and `inline` (one line of GitHub markdown).
Prints milliseconds per MB, the median of --repeat.

    python bench/escaping.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from evalward.text import escaping

SIZE = 1_000_000
STACK = "\u0336\u0301\u0317\u0353\u0348\u0358\u0489" * 6
SHAPES = {
    "ASCII": "Your order 12345 has shipped and arrives on 2026-11-25. ",
    "accented prose": "Votre commande a été expédiée ; elle arrive à Köln, Đà Nẵng. ",
    "a stack every 200 characters": "Votre commande a été expédiée. " * 6 + "Z" + STACK + " ",
}
STEPS: dict[str, Callable[[str], str]] = {
    "reveal_bidi": escaping.reveal_bidi,
    "reveal_marks": escaping.reveal_marks,
    "reveal_controls": escaping.reveal_controls,
    "inline": lambda text: escaping.inline(text, limit=SIZE * 2),
}


def milliseconds(step: Callable[[str], str], text: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        step(text)
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    repeat = parser.parse_args().repeat
    escaping.reveal_marks("é" + "\u0301" * 9)  # the marks' table, built once a process
    print(f"ms per MB, median of {repeat}:")
    for shape, piece in SHAPES.items():
        text = (piece * (SIZE // len(piece) + 1))[:SIZE]
        cells = (f"{name} {milliseconds(step, text, repeat):.1f}" for name, step in STEPS.items())
        print(f"{shape}: " + "; ".join(cells))


if __name__ == "__main__":
    main()
