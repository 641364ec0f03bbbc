"""A command agent for tests: its behaviour is chosen by the fixture's prompt.

- "echo": answers with the request it received (as JSON) after one tool call.
- "crash": writes to stderr and exits 3.
- "garbage": prints a line that is not a trace event.
- "text-key": gives its final answer under `text`, not `content`.
- "hang": ignores SIGTERM, starts a child that does too, writes both pids to ./pids, sleeps.
"""

import json
import os
import signal
import subprocess
import sys
import time

request = json.loads(sys.stdin.readline())
prompt = request["messages"][-1]["content"]
print(f"started for {request['fixture']}", file=sys.stderr, flush=True)


def emit(**event: object) -> None:
    print(json.dumps(event), flush=True)


if prompt == "echo":
    emit(type="tool_call", tool="lookup", arguments='{"id": 7}', id="c1")
    emit(type="tool_result", tool="lookup", id="c1", output={"found": True})
    emit(type="usage", input_tokens=12, output_tokens=3, model="acme/model-1")
    emit(type="final", content=json.dumps(request, sort_keys=True))
elif prompt == "crash":
    emit(type="assistant", content="thinking")
    print("Traceback: something broke", file=sys.stderr, flush=True)
    sys.exit(3)
elif prompt == "garbage":
    print("DEBUG: not json", flush=True)
    emit(type="final", content="never counted")
elif prompt == "text-key":
    emit(type="final", text="I issued a refund for order 12345")
elif prompt == "hang":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)",
        ]
    )
    with open("pids", "w") as handle:
        handle.write(f"{os.getpid()} {child.pid}")
    emit(type="assistant", content="working on it")
    time.sleep(600)
