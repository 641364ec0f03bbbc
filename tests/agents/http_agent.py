"""An http agent for tests: writes its pid to $PIDDIR/server-PORT.pid (default: the working
directory), answers GET /ready and POST /run.

POST /run replies with a final message for prompt "short", an error status for "fail",
an HTML page for "html", nothing for 30 s for "slow", writes the fixture's name into its
playground's folder for "playground", and the full trace form otherwise; POST elsewhere
answers 404 with no body.
"""

import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

pid_file = os.path.join(os.environ.get("PIDDIR", "."), f"server-{sys.argv[1]}.pid")
with open(pid_file, "w") as handle:
    handle.write(str(os.getpid()))


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.reply(200 if self.path == "/ready" else 404, {"ok": True})

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["content-length"])))
        prompt = request["messages"][-1]["content"]
        if self.path != "/run":
            self.send_response(404)
            self.send_header("content-length", "0")
            self.end_headers()
        elif prompt == "html":
            page = b"<html><body>It works</body></html>"
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)
        elif prompt == "short":
            self.reply(200, {"final": f"short answer for {request['fixture']}"})
        elif prompt == "fail":
            self.reply(500, {"error": "boom"})
        elif prompt == "playground":
            folder = request["playground"]["EVALWARD_PLAYGROUND_DIR"]
            with open(os.path.join(folder, "done.txt"), "w") as done:
                done.write(f"{request['fixture']} in {folder}")
            self.reply(200, {"final": folder})
        elif prompt == "slow":
            time.sleep(30)
            self.reply(200, {"final": "too late"})
        else:
            trace = [
                {"type": "tool_call", "tool": "search", "arguments": {"q": prompt}},
                {"type": "tool_result", "tool": "search", "output": "3 hits"},
                {
                    "type": "final",
                    "content": f"port {os.environ['PORT']} shadow {request['shadowTools']}",
                },
            ]
            self.reply(200, {"trace": trace})

    def reply(self, status: int, body: object) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        print(format % args, file=sys.stderr)


HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
