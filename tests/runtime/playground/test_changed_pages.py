"""Which pages of a run's database differ from its template's: the pages found by spans
compared where they lie are the pages that differ byte by byte, whichever file is longer
and wherever the changes fall."""

from __future__ import annotations

import random

import pytest

from evalward.runtime.playground.sqlite_changes import changed_pages

pytestmark = pytest.mark.unit

SIZE = 512


def test_the_pages_found_are_the_pages_that_differ() -> None:
    rng = random.Random(3)
    for _ in range(400):
        pages, run_pages = rng.randint(0, 150), rng.randint(0, 150)
        template = rng.randbytes(pages * SIZE)
        image = bytearray(template[: run_pages * SIZE])
        image += rng.randbytes(max(0, run_pages - pages) * SIZE)
        for _ in range(rng.randint(0, 4)):
            if image:
                image[rng.randrange(len(image))] ^= 1 << rng.randrange(8)
        run = bytes(image)
        differ = {
            number + 1
            for number in range(max(pages, run_pages))
            if run[number * SIZE : (number + 1) * SIZE]
            != template[number * SIZE : (number + 1) * SIZE]
        }
        assert changed_pages(run, template, SIZE) == differ, (pages, run_pages)
