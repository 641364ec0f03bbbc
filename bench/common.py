"""Helpers shared by the benchmark scripts: the model server, timing, the evalward command."""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
EVALWARD = [sys.executable, "-m", "evalward"]


def before_and_this(before: list[str]) -> dict[str, str]:
    """The `src` folders a benchmark times, by name: this tree's, then each `--before
    NAME=SRC`'s (another checkout's, alternated with it)."""
    return {"this tree": str(ROOT / "src")} | dict(b.split("=", 1) for b in before)


def alternation(description: str | None, rounds: int) -> tuple[int, dict[str, str]]:
    """The options of a benchmark that alternates trees and nothing else: `--rounds N` (by
    default `rounds`) and `--before NAME=SRC ...`; the rounds, and the trees to time
    (`before_and_this`)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--before", action="append", default=[], metavar="NAME=SRC")
    args = parser.parse_args()
    return args.rounds, before_and_this(args.before)


def compile_evalward(env: dict[str, str] | None = None) -> None:
    """Write the bytecode of the evalward that the benchmarks run (the one PYTHONPATH or the
    virtualenv gives; `env` may name another PYTHONPATH), as pip does when it installs the
    wheel into the image. Without it an editable install under PYTHONDONTWRITEBYTECODE=1
    compiles every module from source in every run: 0.3-0.5 s of start-up that no installed
    evalward pays."""
    if env and env.get("PYTHONPATH"):
        where = Path(env["PYTHONPATH"].split(os.pathsep)[0]) / "evalward"
    else:
        spec = importlib.util.find_spec("evalward")
        if spec is None or spec.origin is None:
            return
        where = Path(spec.origin).parent
    compileall.compile_dir(where, quiet=1)


compile_evalward()


@dataclass
class ModelServer:
    base_url: str

    def requests(self) -> int:
        return int(self.stats()["requests"])

    def stats(self, reset: bool = False) -> dict[str, Any]:
        """Requests so far, and when the first arrived and the last was answered."""
        stats_url = self.base_url.removesuffix("/v1") + "/stats" + ("?reset=1" if reset else "")
        with urllib.request.urlopen(stats_url) as response:
            data: dict[str, Any] = json.load(response)
            return data


@contextmanager
def model_server(latency_ms: float) -> Iterator[ModelServer]:
    port_file = Path(tempfile.mkdtemp()) / "port"
    process = subprocess.Popen(
        [
            sys.executable,
            str(BENCH / "model_server.py"),
            "--latency-ms",
            str(latency_ms),
            "--port-file",
            str(port_file),
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while not port_file.exists() or not port_file.read_text():
            if time.monotonic() > deadline:
                raise RuntimeError("the benchmark model server did not start")
            time.sleep(0.02)
        yield ModelServer(f"http://127.0.0.1:{port_file.read_text()}/v1")
    finally:
        process.terminate()
        process.wait(timeout=10)


@dataclass
class Timed:
    wall: float
    cpu: float
    returncode: int
    stdout: str


def timed(
    command: list[str],
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    ok: tuple[int, ...] = (0, 1),
) -> Timed:
    """Wall time and the child's CPU time (user + sys) of one command."""
    before = os.times()
    start = time.perf_counter()
    done = subprocess.run(
        command, env={**os.environ, **(env or {})}, cwd=cwd, capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    if done.returncode not in ok:
        raise RuntimeError(f"{command} failed ({done.returncode}): {done.stderr[-2000:]}")
    return Timed(wall, cpu, done.returncode, done.stdout)


def median(values: list[float]) -> float:
    return statistics.median(values)


def answer_chat(
    handler: BaseHTTPRequestHandler, body: dict[str, Any], message: dict[str, Any], tokens: int
) -> None:
    """Send `message` as an OpenAI chat completion answering `body`, `tokens` of usage split
    five to one between prompt and completion: the scripted servers of the benchmarks."""
    calls = bool(message.get("tool_calls"))
    completion = tokens // 6
    payload = json.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "bench"),
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
            ],
            "usage": {
                "prompt_tokens": tokens - completion,
                "completion_tokens": completion,
                "total_tokens": tokens,
            },
        }
    ).encode()
    handler.send_response(200)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(payload)))
    handler.end_headers()
    handler.wfile.write(payload)
