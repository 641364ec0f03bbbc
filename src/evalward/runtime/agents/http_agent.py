"""Run a bring-your-own agent server (`runtime.http`): start, wait until ready, POST, stop.

One server per agent and checkout, started on first use from the PR head (or base) and
stopped when the run ends, also when it fails. `{port}` in `start`, `ready` and `url` is a
free loopback port chosen by evalward (also exported as PORT), so base and head servers of
the same agent can run side by side.

With the model proxy, the server's environment holds a key of its own (its calls are
metered, but belong to no fixture run), and each POST carries the run's key in
`modelProxy`: calls made with that one land in the run's trace. A call made with the
server's own key while runs of the server are under way makes each of them an error
(`Grant.serve`): what it asked the model is in no trace. In the sandbox, the server's key
works only from the server's processes, and a run's key from the run's and the server's
(`processes.key_holders`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from evalward.errors import AgentRunError, HttpFailure, HttpTimeout, PortTaken, ProtocolError
from evalward.http.client import HttpClient
from evalward.providers.base import RunLabels
from evalward.resources.agents.agent_runtime import HttpRuntime
from evalward.rundata.trace import StepType, Trace
from evalward.runtime.agents.process import (
    DEFAULT_KILL_GRACE,
    kill_group,
    last_stderr_line,
    limited_env,
    read_tail,
    spawn,
)
from evalward.runtime.isolation.sandbox import Sandbox
from evalward.runtime.processes.key_holders import KeyHolders
from evalward.runtime.processes.port_owner import free_port, owned_host
from evalward.runtime.processes.strays import RunProcesses
from evalward.runtime.proxy.model_proxy import Grant, ModelProxy
from evalward.runtime.telemetry.protocol import apply_response
from evalward.text import jsontext

POLL_SECONDS = 0.1
"""How often a starting server is asked whether it is ready."""


class HttpAgentServer:
    def __init__(
        self,
        runtime: HttpRuntime,
        *,
        name: str,
        root: Path,
        env: Mapping[str, str],
        kill_grace: float = DEFAULT_KILL_GRACE,
        proxy: ModelProxy | None = None,
        sandbox: Sandbox | None = None,
    ) -> None:
        """Keyword parameters past `runtime`, each a setting of this server's life that its
        caller names; a parameter object would only rename them."""
        self.runtime = runtime
        self.proxy = proxy
        self.sandbox = sandbox
        self.grant: Grant | None = None
        """The model proxy's key the server was started with (None before it starts)."""
        self.name = name
        self.root = root
        self.env = env
        self.kill_grace = kill_grace
        self.port = free_port()
        self.url = runtime.url.replace("{port}", str(self.port))
        self.ready_url = runtime.ready.replace("{port}", str(self.port))
        self._process: asyncio.subprocess.Process | None = None
        self._logs: list[asyncio.Task[bytes]] = []
        self._lock = asyncio.Lock()
        self._started = False
        self._failure: str | None = None
        # every call below sets its own timeout
        self._client = HttpClient(timeout_seconds=runtime.ready_timeout_seconds)

    async def ensure_started(self) -> None:
        """Start once; a failure is remembered so every run reports it without retrying."""
        async with self._lock:
            if self._failure is not None:
                raise AgentRunError(self._failure)
            if self._started:
                return
            try:
                await self._start()
            except AgentRunError as exc:
                self._failure = str(exc)
                await self.stop()
                raise
            self._started = True

    async def _start(self) -> None:
        argv = [a.replace("{port}", str(self.port)) for a in self.runtime.start]
        extra = {"PORT": str(self.port)}
        if self.proxy is not None:
            await self.proxy.ensure_started()
            self.grant = self.proxy.open_grant(RunLabels(agent=self.name), None)
            extra = {**self.grant.env, **extra}
        env = limited_env(self.env, self.runtime.env, extra, sandbox=self.sandbox)
        holders = self._key_holders()
        self._process = await spawn(argv, cwd=self.root, env=env, stdin=False, sandbox=self.sandbox)
        if holders is not None:
            holders.servers.add(self._process.pid)  # its session: its key works from it alone
        self._logs = [
            asyncio.create_task(read_tail(self._process.stdout)),
            asyncio.create_task(read_tail(self._process.stderr)),
        ]
        deadline = time.monotonic() + self.runtime.ready_timeout_seconds
        while True:
            if self._process.returncode is not None:
                raise AgentRunError(
                    f"agent {self.name!r}: the server exited with code "
                    f"{self._process.returncode} before {self.ready_url} answered"
                    + await last_stderr_line(self._logs[1], self.kill_grace)
                )
            with contextlib.suppress(HttpFailure):
                reply = await self._client.get(self.ready_url, timeout_seconds=POLL_SECONDS * 5)
                if reply.status < 400:
                    self.checked_url()
                    # A connection kept from the probe could be to whatever answered it.
                    await self._client.aclose()
                    self._client = HttpClient(timeout_seconds=self.runtime.ready_timeout_seconds)
                    return
            if time.monotonic() >= deadline:
                raise AgentRunError(
                    f"agent {self.name!r}: {self.ready_url} did not answer within "
                    f"{self.runtime.ready_timeout_seconds:g} s (runtime.http.readyTimeoutSeconds)"
                )
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(POLL_SECONDS):
                    await self._process.wait()

    def _key_holders(self) -> KeyHolders | None:
        """Where the sandbox tracks programs: the server's own key works only from the
        server's processes (none, until it has started), never from a run's."""
        if self.grant is None or self.sandbox is None:
            return None
        uid = self.sandbox.user.uid if self.sandbox.user is not None else None
        self.grant.holders = KeyHolders(RunProcesses(uid), self.sandbox.sessions)
        return self.grant.holders

    def checked_url(self) -> str:
        """The URL to POST to. In the action, only after checking that the agent's server is
        alive and that every loopback listener on its port is the agent user's
        (`port_owner`); a `localhost` URL then names the numeric address its server holds."""
        if self.sandbox is None or self.sandbox.user is None:
            return self.url  # every program runs as evalward's user: nothing to tell apart
        if self._process is None or self._process.returncode is not None:
            raise AgentRunError(f"agent {self.name!r}: the server is no longer running")
        try:
            host = owned_host(self.port, self.sandbox.user.uid)
        except PortTaken as exc:
            raise AgentRunError(f"agent {self.name!r}: {exc}") from None
        parts = urlsplit(self.url)
        if parts.hostname != "localhost":
            return self.url
        shown = f"[{host}]" if ":" in host else host
        return urlunsplit(parts._replace(netloc=f"{shown}:{self.port}"))

    async def run(
        self,
        request: Mapping[str, Any],
        trace: Trace,
        *,
        timeout_seconds: float,
        setting: str = "spec.execution.timeoutSeconds",
        grant: Grant | None = None,
    ) -> str:
        """One POST per fixture run or turn, answered within `timeout_seconds` (the kind's
        choice: a turn gets no more than what is left of its conversation; `setting` says
        where it is set); the reply is the trace, a final message, or plain text (returned:
        the answer, when it is no trace)."""
        try:
            await self.ensure_started()
        except AgentRunError as exc:
            trace.add(StepType.error, content=f"the agent server could not start: {exc}")
            return ""
        if grant is not None and self.grant is not None:
            self.grant.serve(grant)  # its own key's calls are blamed on the runs under way
        if grant is not None and grant.holders is not None and self._process is not None:
            grant.holders.servers.add(self._process.pid)  # it presents the run's key
        try:
            url = self.checked_url()
        except AgentRunError as exc:
            trace.add(StepType.error, content=str(exc))
            return ""
        try:
            body = dict(request)
            if grant is not None:
                body["modelProxy"] = grant.request_field()
            reply = await self._client.post_json(url, body, timeout_seconds=timeout_seconds)
        except HttpTimeout:
            trace.time_out(f"the agent did not answer within {timeout_seconds:g} s ({setting})")
            return ""
        except HttpFailure as exc:
            trace.add(StepType.error, content=f"cannot reach the agent at {self.url}: {exc}")
            return ""
        if reply.status >= 300:
            said = reply.text(300).strip()
            trace.add(
                StepType.error,
                content=f"the agent answered HTTP {reply.status} to POST {self.url} "
                f"(`runtime.http.url`){': ' + said if said else ', with no body'}",
            )
            return ""
        kind = reply.headers.get("content-type", "")
        if kind.startswith("text/plain"):
            return reply.body.decode("utf-8", "replace")
        try:
            data = jsontext.loads(reply.body, max_depth=jsontext.AGENT_DEPTH)
        except ValueError as exc:
            shown = f" ({kind.split(';')[0]})" if kind else ""
            trace.add(
                StepType.error,
                content=f"the agent's reply{shown} is neither JSON ({exc}) nor `text/plain`: "
                "answer with a trace as JSON, or the answer alone as text/plain",
            )
            return ""
        try:
            apply_response(trace, data)
        except ProtocolError as exc:
            trace.add(StepType.error, content=f"the agent's reply is not a trace: {exc}")
        return ""

    async def stop(self) -> None:
        if self.proxy is not None and self.grant is not None:
            self.proxy.revoke(self.grant)
        process, self._process = self._process, None
        if process is not None:
            await kill_group(process, self.kill_grace, sandbox=self.sandbox)
        if self.grant is not None:
            # the server is gone: a model call it left in flight (an upstream that stalls)
            # ends now, not at the provider's timeout, which would hold the run's end
            await self.grant.end_calls(within=0)
        for task in self._logs:
            task.cancel()
        await asyncio.gather(*self._logs, return_exceptions=True)
        self._logs = []
        await self._client.aclose()
