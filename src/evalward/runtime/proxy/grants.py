"""A key of the model proxy: what one fixture run's processes (or an http agent's server)
get, and what the proxy keeps about the run while the key is valid."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from evalward.providers.base import RunLabels
from evalward.rundata.trace import ModelCall, StepType, Trace
from evalward.runtime.processes.key_holders import KeyHolders
from evalward.runtime.proxy import endpoints, past_proxy
from evalward.runtime.proxy.observed import TrafficObserver
from evalward.runtime.telemetry import otlp

KEY_NAMES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
"""The variables the official SDKs read a key from; they always hold the run's proxy key."""
KEY_PREFIX = "evalward-proxy-"
LOOPBACK = "127.0.0.1,localhost,::1"
"""Never through an HTTP(S) proxy the agent may be given: the model proxy is on loopback."""

SERVER_KEY_CALLED = (
    "the agent's server called the model with its own key (the OPENAI_API_KEY / "
    "ANTHROPIC_API_KEY it was started with) while this run was under way: calls made with "
    "that key belong to no run, so this run's trace cannot show what its model asked for or "
    "what it spent; make the calls that answer a request with the key and base URLs of the "
    "request's `modelProxy` (apiKey, openaiBaseUrl, anthropicBaseUrl, geminiBaseUrl)"
)
"""Why a run of an http agent is an error when its server used the server's own key meanwhile."""


@dataclass
class Grant:
    """One key: a fixture run's (its calls go to `trace`), or an http agent server's
    (no trace: its calls are metered against the budget only)."""

    key: str
    labels: RunLabels
    trace: Trace | None
    env: dict[str, str]
    """What the agent's processes get: base URLs, this key under every key name, and where
    to send OpenTelemetry traces."""
    refused: bool = False
    refusals: int = 0
    """Requests the proxy refused under this key (`Call.refuse`)."""
    unkept_refusals: ModelCall | None = None
    """The trace's record that counts the refusals past those it keeps."""
    observer: TrafficObserver | None = None
    """Turns the run's calls into its steps (a bring-your-own agent's run)."""
    exports: otlp.KeptSpans = field(default_factory=otlp.KeptSpans)
    """What it keeps of the OpenTelemetry trace exports its processes sent."""
    holders: KeyHolders | None = None
    """Which processes may present the key, where the sandbox tracks its run's (None: any)."""

    def request_field(self) -> dict[str, str]:
        """`modelProxy` of the request an http agent receives for this run."""
        return {
            "apiKey": self.key,
            "openaiBaseUrl": self.env["OPENAI_BASE_URL"],
            "anthropicBaseUrl": self.env["ANTHROPIC_BASE_URL"],
            "geminiBaseUrl": self.env["GOOGLE_GEMINI_BASE_URL"],
        }

    ended: bool = False
    """The run is over: a call still in flight is cut short (`end_calls`)."""
    _in_flight: dict[asyncio.Task[object], asyncio.Event] = field(default_factory=dict)
    _served: dict[str, Grant] = field(default_factory=dict)
    """An http agent server's key: the keys of the runs the server is answering (`serve`)."""
    _blamed: bool = False

    def serve(self, run: Grant) -> None:
        """This key is an http agent server's, and `run` (a fixture run's key) is under way
        on that server until it ends: a call with this key that overlaps it, in flight as
        the run begins or made before it ends, makes the run an error (`SERVER_KEY_CALLED`)."""
        self._served = {key: each for key, each in self._served.items() if not each.ended}
        self._served[run.key] = run
        if self._in_flight:
            run.blame_server()

    def blame_server(self) -> None:
        """Its server called the model with its own key while this run was under way."""
        if self.trace is not None and not self._blamed and not self.ended:
            self.trace.add(StepType.error, content=SERVER_KEY_CALLED)
        self._blamed = True

    def _blame_served(self) -> None:
        for run in self._served.values():
            run.blame_server()

    @contextlib.contextmanager
    def calling(self) -> Iterator[None]:
        """Count the block (one request the proxy is answering) as a call in flight; on an
        http agent server's key, one that blames every run of the server under way."""
        task, done = asyncio.current_task(), asyncio.Event()
        assert task is not None
        self._in_flight[task] = done
        self._blame_served()
        try:
            yield
        finally:
            done.set()
            self._in_flight.pop(task, None)
            self._blame_served()

    @property
    def calls_in_flight(self) -> int:
        """How many requests under this key the proxy is answering now."""
        return len(self._in_flight)

    async def end_calls(self, within: float) -> None:
        """Once the run's processes are done: calls still in flight (a stream the agent hung
        up on, being read to its end for its usage) get `within` seconds more, the rest of
        the agent's own time; then each is cut short and recorded in the run's trace as such, so
        none outlives its run, whatever an upstream does."""
        pending = [done.wait() for done in self._in_flight.values()]
        if pending:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(within, 0.0)):
                    await asyncio.gather(*pending)
        self.ended = True
        cut = [done.wait() for task, done in self._in_flight.items() if task.cancel()]
        await asyncio.gather(*cut)

    def finish(self) -> None:
        """Once the run's processes are done: the steps its exported spans show, merged
        with the rest."""
        if self.trace is not None and self.observer is not None:
            otlp.merge_exports(self.trace, self.exports)


def new_grant(
    url: str,
    key_names: Sequence[str],
    labels: RunLabels,
    trace: Trace | None,
    *,
    observe: bool = False,
) -> Grant:
    """A new random key for the proxy at `url`. With `observe`, what the model asks for
    and the agent sends back becomes steps of `trace` (a bring-your-own agent's run; not a
    command tool's)."""
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    env = {name: key for name in key_names}
    env |= endpoints.proxy_env(url, key) | past_proxy.guard_env()
    env |= otlp.exporter_env(f"{url}{otlp.PREFIX}{key}")
    env |= {name: LOOPBACK for name in ("NO_PROXY", "no_proxy")}
    observer = TrafficObserver(trace) if observe and trace is not None else None
    return Grant(key, labels, trace, env, observer=observer)
