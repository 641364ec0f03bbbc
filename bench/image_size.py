"""The action's image: its size layer by layer, what a job downloads and unpacks, and how long
the container takes to start evalward.

For each image (built first: see docs/benchmarks.md, "The action's image"), with podman:
its size (`podman image inspect`), each layer's (`podman history`), each layer's compressed
blob (`podman save --format oci-dir`: what a registry serves) and the time to unpack it
(`gunzip | tar -x`, one after the other as docker does), `podman run --rm IMAGE --version`
(median of 5) and the import of the action's engine inside it (`python -X importtime`).

    python bench/image_size.py evalward:dev evalward:dev-node
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

MB = 1_000_000


def podman(*args: str) -> str:
    return subprocess.run(["podman", *args], capture_output=True, text=True, check=True).stdout


def made_by(command: str) -> str:
    """A layer's command as a table can show it: no shell prefix, no content digests, the
    whitespace of continued lines collapsed, its first 70 characters."""
    command = re.sub(r"^/bin/sh -c (#\(nop\) )?", "", command)
    command = re.sub(r"\b(file|dir|multi):[0-9a-f]{64}", r"\1:…", command)
    command = " ".join(command.split())
    return command if len(command) <= 70 else command[:69].rstrip() + "…"


def layer_rows(listed: list[dict[str, object]]) -> list[tuple[str, int]]:
    """Each layer that adds bytes, oldest first, from `podman history --format json`: the
    command that made it and its size (podman names the field `size`)."""
    rows = []
    for entry in reversed(listed):
        size = entry.get("size")
        if not isinstance(size, int):
            raise SystemExit(f"podman history gave a layer with no size: {entry}")
        if size:
            rows.append((made_by(str(entry.get("CreatedBy", ""))), size))
    return rows


def layers(image: str) -> list[tuple[str, int]]:
    """Each layer of the image that adds bytes, oldest first."""
    return layer_rows(json.loads(podman("history", "--format", "json", "--no-trunc", image)))


def blobs(image: str) -> list[tuple[int, float]]:
    """Each layer's compressed size and how long unpacking it takes."""
    with tempfile.TemporaryDirectory() as work:
        saved = Path(work) / "image"
        podman("save", "--format", "oci-dir", "-o", str(saved), image)
        index = json.loads((saved / "index.json").read_text())
        digest = index["manifests"][0]["digest"].split(":")[1]
        manifest = json.loads((saved / "blobs" / "sha256" / digest).read_text())
        found = []
        for layer in manifest["layers"]:
            blob = saved / "blobs" / "sha256" / layer["digest"].split(":")[1]
            into = Path(work) / "unpacked"
            into.mkdir(exist_ok=True)
            start = time.perf_counter()
            subprocess.run(f"gunzip -c {blob} | tar -x -C {into}", shell=True, check=True)
            found.append((blob.stat().st_size, time.perf_counter() - start))
        return found


def started(image: str) -> float:
    times = []
    for _ in range(5):
        start = time.perf_counter()
        podman("run", "--rm", image, "--version")
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def engine_import(image: str) -> float:
    err = subprocess.run(
        ["podman", "run", "--rm", "--entrypoint", "python", image, "-I", "-X", "importtime",
         "-c", "import evalward.action.run"],
        capture_output=True, text=True, check=True,
    ).stderr  # fmt: skip
    last = [line for line in err.splitlines() if re.search(r"\|\s*evalward\.action\.run$", line)]
    return int(last[-1].split("|")[1]) / 1e6 if last else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("images", nargs="+")
    args = parser.parse_args()
    for image in args.images:
        size = int(json.loads(podman("image", "inspect", image))[0]["Size"])
        print(f"\n{image}: {size / MB:.1f} MB\n")
        print("| layer (the command that made it) | size |")
        print("|---|---|")
        for made, bytes_ in layers(image):
            print(f"| `{made.replace('|', '/')}` | {bytes_ / MB:.1f} MB |")
        packed = blobs(image)
        print(
            f"\ncompressed layers {' + '.join(f'{s / MB:.1f}' for s, _ in packed)} MB; "
            f"unpacked in {' + '.join(f'{t:.1f}' for _, t in packed)} s; "
            f"`podman run --rm {image} --version` {started(image):.2f} s (median of 5); "
            f"the action's engine imported in {engine_import(image):.2f} s"
        )


if __name__ == "__main__":
    main()
