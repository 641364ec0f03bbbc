"""Point action.yml's `runs.image` at a published image by its digest, for a release commit.

On `main` the action builds its Dockerfile; a release commit runs the image the release
published instead (`docker://ghcr.io/OWNER/NAME@sha256:…`), so no job builds anything. Only
the `image:` line changes; every other byte of action.yml stays as it is.

    python3 scripts/pin-action-image.py action.yml docker://ghcr.io/OWNER/NAME@sha256:<64 hex>

Standard library only: the release job runs it with the runner's own Python.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

IMAGE = re.compile(r"^docker://[a-z0-9][a-z0-9._/-]*(:[0-9]+)?/[a-z0-9._/-]+@sha256:[0-9a-f]{64}$")
"""A registry image by its digest: a tag could be moved to another image, a digest cannot."""
IMAGE_LINE = re.compile(r"^(  image:[ \t]*)(\S+)[ \t]*$", re.MULTILINE)


def pin(text: str, image: str) -> str:
    """action.yml's text with `runs.image` set to `image`; ValueError says why it cannot be."""
    if not IMAGE.match(image):
        raise ValueError(
            f"{image!r} is not an image by digest; expected "
            "docker://REGISTRY/OWNER/NAME@sha256:<64 hex digits>"
        )
    runs = re.search(r"^runs:[ \t]*\n((?:[ \t]+.*\n|[ \t]*\n)*)", text, re.MULTILINE)
    if runs is None:
        raise ValueError("no `runs:` section")
    lines = list(IMAGE_LINE.finditer(text, runs.start(1), runs.end(1)))
    if len(lines) != 1:
        raise ValueError(f"expected one `image:` line under `runs:`, found {len(lines)}")
    (line,) = lines
    if line[2] != "Dockerfile":
        raise ValueError(f"runs.image is {line[2]!r}, not Dockerfile: is this a release already?")
    return text[: line.start(2)] + image + text[line.end(2) :]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(
            "usage: pin-action-image.py ACTION_YML docker://HOST/OWNER/NAME@sha256:DIGEST",
            file=sys.stderr,
        )
        return 2
    path, image = Path(argv[0]), argv[1]
    try:
        path.write_text(pin(path.read_text(encoding="utf-8"), image), encoding="utf-8")
    except (OSError, ValueError) as exc:
        print(f"pin-action-image: {path}: {exc}", file=sys.stderr)
        return 2
    print(f"{path}: runs.image is {image}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
