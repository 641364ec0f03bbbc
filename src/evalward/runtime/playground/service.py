"""A playground's `service` part: a program of the gate's side serving an API on a port
evalward picks, started per run and waited for (`ready`), its state read from its state
endpoint or its `dump` command, its process group stopped when the run ends.

In the action it runs as the agent user of the run's side, in the sandbox, with the scratch
environment every program from a checkout gets (no secret), and the port it answers on must
be held by that user. Its state is read up to STATE_LIMIT bytes, as one JSON document, or
not at all when it answers a state unchanged since its tag (`state_tags.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalward.errors import (
    AgentRunError,
    ConfigError,
    DuplicateKey,
    GitError,
    HttpFailure,
    NotCommitted,
    PlaygroundError,
    PortTaken,
    TreeError,
)
from evalward.files.committed import RepoFiles
from evalward.files.inside import glob_matches, watched_folders
from evalward.files.trees import remove_tree
from evalward.git import TreeEntry
from evalward.http.client import HttpClient, Reply
from evalward.resources.playground import McpReady, Playground, ServicePart
from evalward.rundata.playground_state import PlaygroundState, shared_with
from evalward.runtime.agents.process import (
    kill_group,
    last_stderr_line,
    limited_env,
    read_tail,
    spawn,
    tail,
)
from evalward.runtime.isolation.sandbox import Sandbox
from evalward.runtime.playground import state_delta, state_tags
from evalward.runtime.playground.base import (
    STATE_LIMIT,
    LivePlayground,
    PlaygroundPart,
    PlaygroundSource,
    keep_latest,
    seed_place,
)
from evalward.runtime.playground.service_environment import ServiceEnvironments
from evalward.runtime.processes.port_owner import (
    free_port,
    loopback_listeners,
    owned_host,
    release_port,
)
from evalward.runtime.processes.socket_holders import sockets_holders
from evalward.runtime.processes.strays import RunProcesses
from evalward.text import jsontext

DUMP_SECONDS = 30.0
PORT_TRIES = 3
"""Starts of a service whose port another program took before the service could bind it."""


class _PortTaken(Exception):
    """The service exited before it was ready, and something else listens on its port."""


@dataclass
class Service:
    process: asyncio.subprocess.Process
    port: int
    url: str
    logs: list[asyncio.Task[bytes]]
    placeholders: dict[str, str]
    env: dict[str, str]
    """What it was started with: its `dump` command gets the same."""
    sandbox: Sandbox | None
    """Where it was started (with its environment's packages): its `dump` runs there too."""

    async def stderr_tail(self, grace: float) -> str:
        if self.process.returncode is None:
            return ""
        return await last_stderr_line(self.logs[1], grace)


class ServiceRun(PlaygroundPart[ServicePart]):
    """The run's service: `EVALWARD_SERVICE_URL`."""

    kind = "service"

    def __init__(self, spec: ServicePart) -> None:
        super().__init__(spec)
        self.service: Service | None = None
        self.read = False
        """Whether its state was read: the first read is of the service as it started."""
        self.data: Path | None = None
        """The service's own folder (`{data}`): not in the run's folder, whose path the agent
        is told, but beside it under a name no agent user can list or guess, so that the
        agent, the same user, cannot write there what the service then reports. The name is
        in the service's environment and, where its command line passes it on (a child
        started with it), in that command line: each program's Landlock domain keeps the
        agent from reading the first; the second is every user's to read (docs/playgrounds.md
        warns of `{data}` on the command line); without Landlock, both are the agent's."""

    def lay_out(self, live: LivePlayground) -> dict[str, str]:
        self.data = Path(tempfile.mkdtemp(prefix="evalward-service-data-", dir=live.folder.parent))
        user = live.sandbox.user if live.sandbox is not None else None
        if user is not None:
            os.chown(self.data, user.uid, user.gid)
        return {}

    async def start(
        self, live: LivePlayground, env: Mapping[str, str], shared: Mapping[str, str]
    ) -> dict[str, str]:
        part = self.spec
        seed = seed_place(live, part.seed) if part.seed else ""
        sandbox = await service_sandbox(live.source, live.sandbox, live.environments, env)
        for tries_left in reversed(range(PORT_TRIES)):
            service = self.service = await self._launch(live, env, shared, seed, sandbox)
            try:
                await self._wait_ready(live, service, retry=tries_left > 0)
            except _PortTaken:
                left = await self._stop(live)
                if left:
                    raise live.error(f"its service: {left}") from None
                continue
            return {"EVALWARD_SERVICE_URL": service.url}
        raise AssertionError("the last try raises rather than retries")

    async def _launch(
        self,
        live: LivePlayground,
        env: Mapping[str, str],
        shared: Mapping[str, str],
        seed: str,
        sandbox: Sandbox | None,
    ) -> Service:
        """The service started on a port of its own, not yet waited for."""
        port = free_port()
        assert self.data is not None, "laid out before it starts"
        data = str(self.data)
        values = {"{port}": str(port), "{seed}": seed, "{data}": data}
        argv = [replace_placeholders(arg, values) for arg in self.spec.start]
        extra = {"PORT": str(port), "EVALWARD_SERVICE_SEED": seed, "EVALWARD_SERVICE_DATA": data}
        own_env = limited_env(env, [], extra | dict(shared), sandbox=sandbox)
        try:
            process = await spawn(
                argv, cwd=live.source.world, env=own_env, stdin=False, sandbox=sandbox
            )
        except AgentRunError as exc:
            release_port(port)
            raise live.error(f"the service could not start: {exc}") from None
        logs = [
            asyncio.create_task(read_tail(process.stdout)),
            asyncio.create_task(read_tail(process.stderr)),
        ]
        url = f"http://127.0.0.1:{port}"
        own_env["EVALWARD_SERVICE_URL"] = url
        return Service(process, port, url, logs, values, own_env, sandbox)

    async def capture(
        self, live: LivePlayground, state: PlaygroundState, queries: list[str]
    ) -> None:
        service = self.service
        assert service is not None, "a started service"
        await _alive(live, service)
        check_owner(live, service)
        key = self.spec.state_part()
        if key is None:
            return
        first, self.read = not self.read, True
        if self.spec.dump is not None:
            raw = await self._dump(live, service, self.spec.dump)
            state.document[key] = _document(live, raw, "its state dump", fresh=first)
        elif self.spec.state is not None:
            state.document[key] = await _endpoint_state(live, service, self.spec.state, first)

    async def tear_down(self, live: LivePlayground) -> str:
        left = await self._stop(live)
        data, self.data = self.data, None
        if data is not None:
            try:
                data.rmdir()  # most services leave it empty: no walk, no thread
            except OSError:
                try:
                    await asyncio.to_thread(remove_tree, data)
                except TreeError as exc:
                    left = "; ".join(filter(None, [left, f"its data folder: {exc}"]))
        return f"its service: {left}" if left else ""

    async def _stop(self, live: LivePlayground) -> str:
        """End the service's process group; what it left that could not be removed, or ""."""
        service, self.service = self.service, None
        if service is None:
            return ""
        left = await kill_group(service.process, live.kill_grace, sandbox=service.sandbox)
        release_port(service.port)
        for task in service.logs:
            task.cancel()
        await asyncio.gather(*service.logs, return_exceptions=True)
        return left

    async def _wait_ready(self, live: LivePlayground, service: Service, retry: bool) -> None:
        """Until the service answers `ready`. One that exited first while something else
        listens on its port could not bind it (another program took it between evalward
        picking it and the service binding it): with `retry`, that is _PortTaken, to be
        started again on another port."""
        part = self.spec
        deadline = time.monotonic() + part.ready_timeout_seconds
        url = service.url + part.ready_path
        asks = _answers_mcp if isinstance(part.ready, McpReady) else _answers_get
        shown = f"{part.ready_path} (MCP initialize)" if asks is _answers_mcp else part.ready_path
        client = HttpClient(timeout_seconds=part.ready_timeout_seconds)
        try:
            while True:
                if service.process.returncode is not None:
                    taken = bool(loopback_listeners(service.port))
                    if taken and retry:
                        raise _PortTaken
                    raise live.error(
                        f"the service exited with code {service.process.returncode} before "
                        f"{shown} answered"
                        + await service.stderr_tail(live.kill_grace)
                        + (f" (another program held its port {service.port})" if taken else "")
                    )
                with contextlib.suppress(HttpFailure):
                    if await asks(client, url):
                        check_owner(live, service)
                        return
                if time.monotonic() >= deadline:  # stopped, so that what it said can be told
                    await kill_group(service.process, live.kill_grace, sandbox=service.sandbox)
                    raise live.error(
                        f"the service did not answer {shown} within "
                        f"{part.ready_timeout_seconds:g} s (service.readyTimeoutSeconds)"
                        + await service.stderr_tail(live.kill_grace)
                    )
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(0.1):
                        await service.process.wait()
        finally:
            await client.aclose()

    async def _dump(self, live: LivePlayground, service: Service, command: list[str]) -> bytes:
        """The service's state as its `dump` command prints it: run like the service (the
        same user, environment and placeholders), its output read up to STATE_LIMIT bytes."""
        argv = [replace_placeholders(arg, service.placeholders) for arg in command]
        try:
            process = await spawn(
                argv, cwd=live.source.world, env=service.env, stdin=False, sandbox=service.sandbox
            )
        except AgentRunError as exc:
            raise live.error(f"its state dump could not start: {exc}") from None
        errors = asyncio.create_task(read_tail(process.stderr, 2000))
        try:
            async with asyncio.timeout(DUMP_SECONDS):
                output = await _read_bounded(live, process.stdout)
                code = await process.wait()
        except TimeoutError:
            raise live.error(f"its state dump did not finish within {DUMP_SECONDS:g} s") from None
        finally:
            left = await kill_group(process, live.kill_grace, sandbox=service.sandbox)
        if left:
            raise live.error(f"its state dump: {left}")
        if code != 0:
            said = tail(await errors, 300).strip().splitlines()
            raise live.error(
                f"its state dump exited with code {code}" + (f": {said[-1]}" if said else "")
            )
        errors.cancel()
        return output


async def service_sandbox(
    source: PlaygroundSource,
    sandbox: Sandbox | None,
    environments: ServiceEnvironments | None,
    env: Mapping[str, str],
) -> Sandbox | None:
    """The sandbox of `source`'s service for a run in `sandbox`, its copy of the tree holding
    only what the service reads where it names a `watch` (`service_reads`: what its runs are
    keyed on), with the packages of the service's `environment` (built once per side) when
    it declares one and the job builds them. PlaygroundError, naming the playground, when
    either cannot be made. The job asks it first as a side's turn begins, before any of the
    side's programs: the build runs as the side's user, and beside a run's agent, the same
    user, it could be written into (`Execution`)."""
    part, copy = source.spec.service, _own_copy(source, sandbox)
    spec = part.environment if part is not None else None
    if spec is None or copy is None or environments is None:
        return copy
    try:
        return await environments.sandbox_for(
            f"playground {source.name!r}'s service", spec, source.world, copy, env
        )
    except (AgentRunError, ConfigError, OSError) as exc:
        raise PlaygroundError(
            f"playground {source.name!r}: the service's environment could not be built: {exc}"
        ) from None


def _own_copy(source: PlaygroundSource, sandbox: Sandbox | None) -> Sandbox | None:
    """The run's sandbox for its service: its programs run in a copy of the tree of their
    own (one per tree and reads, shared by the runs), never the agent's, whose copy holds
    what the agent's key hashes. A service that names a `watch` gets what it names and
    what its `watch` matches, and no other file; one that names none, the whole tree."""
    if sandbox is None:
        return None
    try:
        reads = service_reads(source.spec, source.door)
    except (TreeError, OSError, GitError) as exc:
        raise PlaygroundError(
            f"playground {source.name!r}: the files its service's `watch` matches cannot be "
            f"listed: {exc}"
        ) from None
    owner = "service: the whole tree"
    if reads is not None:
        owner = "service " + hashlib.sha256("\0".join(sorted(reads)).encode()).hexdigest()[:16]
    sandbox.limit(source.world, reads, owner)
    return sandbox.for_agent(owner)


def watched_files(spec: Playground, door: RepoFiles) -> dict[str, TreeEntry]:
    """The files of `door`'s tree its services' `watch` globs match, by their paths as
    watched (under a linked folder, the link's), with what the tree holds there: what a
    watching service's copy holds besides what it names, and what its runs are keyed on.
    A folder the tree lacks matches nothing; TreeError, OSError or GitError when the tree
    cannot be listed."""
    globs = spec.watched()
    found: dict[str, TreeEntry] = {}
    for folder in watched_folders(globs):
        try:
            real, _ = door.place(folder or ".")
            listed = door.entries(folder or ".")
        except NotCommitted:
            continue
        for name, entry in listed.items():
            if real == folder:
                path = name
            elif real:
                path = folder + name[len(real) :]
            else:
                path = f"{folder}/{name}"
            if any(glob_matches(path, glob) for glob in globs):
                found[path] = entry
    return found


def service_reads(spec: Playground, door: RepoFiles) -> frozenset[str] | None:
    """What the programs of `spec`'s service read of `door`'s tree: the files it names and
    those its `watch` matches (`watched_files`); None, the whole tree, for a service that
    names no `watch`, or a playground without one."""
    service = spec.service
    if service is None or service.reads_everything:
        return None
    return frozenset([*(path.lstrip("/") for path in service.named()), *watched_files(spec, door)])


async def _answers_get(client: HttpClient, url: str) -> bool:
    """`ready: /path`: a GET answered below 400."""
    return (await client.get(url, timeout_seconds=1.0)).status < 400


MCP_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": "evalward-ready",
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "evalward-ready", "version": "1"},
    },
}
"""What `ready: {mcp: /path}` sends: the first request of every MCP session."""


async def _answers_mcp(client: HttpClient, url: str) -> bool:
    """`ready: {mcp: /path}`: an MCP `initialize` over streamable HTTP answered with its
    result, as JSON or as an event of a stream (an SDK server answers either way, and no
    GET below 400 without a route of its own). The session it opens dies with the run's
    service."""
    reply = await client.post_json(
        url,
        MCP_INITIALIZE,
        {"accept": "application/json, text/event-stream"},
        timeout_seconds=2.0,
    )
    if reply.status != 200:
        return False
    if reply.headers.get("content-type", "").startswith("text/event-stream"):
        texts = [
            line.removeprefix("data:").strip()
            for line in reply.body.decode("utf-8", "replace").splitlines()
            if line.startswith("data:")
        ]
    else:
        texts = [reply.body.decode("utf-8", "replace")]
    for text in texts:
        with contextlib.suppress(ValueError):
            message = jsontext.loads(text)
            if (
                isinstance(message, dict)
                and message.get("id") == MCP_INITIALIZE["id"]
                and isinstance(message.get("result"), dict)
            ):
                return True
    return False


def replace_placeholders(arg: str, values: Mapping[str, str]) -> str:
    for placeholder, value in values.items():
        arg = arg.replace(placeholder, value)
    return arg


async def _alive(live: LivePlayground, service: Service, grace: float = 0.0) -> None:
    """PlaygroundError when the service has exited: its exit is why its state cannot be read
    (waited for up to `grace` seconds after a state read found no one answering: the service
    may have ended before its exit was seen)."""
    if service.process.returncode is None and grace > 0:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace):
                await service.process.wait()
    if service.process.returncode is not None:
        raise live.error(
            f"the service exited with code {service.process.returncode} during the run"
            + await service.stderr_tail(live.kill_grace)
        )


def check_owner(live: LivePlayground, service: Service) -> None:
    """In the action, the port must be held by the run's own user, and by the service's
    own processes (those it started in its session, or in its run's cgroup): another side's
    program that bound it first does not answer in the service's place, nor does one of
    the same user's (another run's agent, running beside it, that ended the service's
    listener and bound its port)."""
    sandbox = live.sandbox
    user = sandbox.user if sandbox is not None else None
    if user is None:
        return
    try:
        owned_host(service.port, user.uid)
    except PortTaken as exc:
        raise live.error(f"the service's {exc}") from None
    run = sandbox.run if sandbox is not None else None
    if run is not None:
        stranger = _stranger_on(service.port, user.uid, run)
        if stranger:
            raise live.error(f"the service's port {service.port} is held by {stranger}")


def _stranger_on(port: int, uid: int, run: RunProcesses) -> str:
    """A process of `uid` that holds a listener on `port` and is not the service's `run`'s
    (in none of its sessions, nor in its cgroup), or a listener no process holds; "" where
    every one is the service's."""
    listeners = loopback_listeners(port)
    holding = sockets_holders({each.inode for each in listeners}, uid)
    for each in listeners:
        holders = holding.get(each.inode, [])
        if not holders:
            return f"a listener no process of its user holds ({each.address})"
        for holder in holders:
            if not run.holds(holder.session, holder.cgroup):
                return (
                    f"process {holder.pid}, which is not the service's (a process another run "
                    "started, or one an agent left): it does not answer in the service's place"
                )
    return ""


async def _endpoint_state(live: LivePlayground, service: Service, path: str, fresh: bool) -> Any:
    """The state its endpoint answers: whole, or as the document kept with the tag the read
    sent back (a 304: `state_tags.py`) or that document patched (a 226: `state_delta.py`).
    A fresh service's read waits for another run's under way, whose answer may give the tag."""
    source = f"its state endpoint {path}"
    waits = fresh and state_tags.kept(live, source) is None
    async with state_tags.first_read(live, source) if waits else contextlib.nullcontext():
        held = state_tags.kept(live, source)  # another run's first read may have kept one
        sent = held[0] if held is not None else None
        reply = await _state(live, service, path, sent)
        tag = state_tags.answered(live, source, reply.status, reply.headers, sent)
        if held is not None:
            if reply.status == state_tags.NOT_MODIFIED:
                return held[1]
            if reply.status == state_tags.IM_USED:
                return state_delta.patched(live, source, held, reply)
        document = _document(live, reply.body, source, fresh=fresh)
        if fresh and tag is not None and tag != sent:
            state_tags.keep(live, source, tag, document, len(reply.body))
        return document


async def _state(live: LivePlayground, service: Service, path: str, tag: str | None) -> Reply:
    """What the state endpoint answered (up to STATE_LIMIT bytes), asked only for a state
    other than the one of `tag` when there is one, and then as a delta where the service
    can: a whole state, a 304 or a 226."""
    client = HttpClient(timeout_seconds=30, max_reply_bytes=STATE_LIMIT)
    try:
        reply = await client.get(
            service.url + path, state_delta.asked(tag) if tag is not None else None
        )
    except HttpFailure as exc:
        await _alive(live, service, grace=live.kill_grace)  # it did not answer: it ended?
        raise live.error(f"its state endpoint {path} did not answer: {exc}") from None
    finally:
        await client.aclose()
    if reply.status >= 300 and reply.status != state_tags.NOT_MODIFIED:
        raise live.error(f"its state endpoint {path} answered HTTP {reply.status}")
    return reply


def _document(live: LivePlayground, raw: bytes, source: str, *, fresh: bool) -> Any:
    """The state `raw` gives. A service as it started (`fresh`) answers the same bytes in
    each run of a job (the same program and seed): the document read from them is kept in
    the job's templates, and a later read whose bytes are the same (compared at C speed:
    a later run's first state, or the state after an agent that changed nothing) gets it
    without parsing them again. A document is never changed once read, so runs share it
    as they share a database template's tables."""
    templates = live.templates
    key = (live.source.world, live.name, source)
    held = templates.fresh_states.get(key) if templates is not None else None
    if held is not None and held[0] == raw:
        return held[1]
    document = state_json(live, raw, source)
    if templates is not None and fresh:
        keep_latest(templates.fresh_states, key, (raw, document))
        templates.compared.keep(document)
    elif held is not None:  # a changed state, read whole: its unchanged records are kept's
        document = shared_with(document, held[1])
    return document


def state_json(live: LivePlayground, raw: bytes, source: str) -> Any:
    """The service's state: one JSON document, nested at most AGENT_DEPTH deep (what the
    agent stored in the service shapes it), no key given twice (an agent's text spliced
    into it could add a second `"status"`)."""
    try:
        return jsontext.loads(raw, max_depth=jsontext.AGENT_DEPTH, unique_keys=True)
    except DuplicateKey as exc:
        raise live.error(f"{source} is ambiguous: {exc}") from None
    except ValueError as exc:
        raise live.error(f"{source} did not give one JSON document ({exc})") from None


async def _read_bounded(live: LivePlayground, stream: asyncio.StreamReader | None) -> bytes:
    kept = bytearray()
    while stream is not None and (chunk := await stream.read(65536)):
        kept.extend(chunk)
        if len(kept) > STATE_LIMIT:
            raise live.error(f"its state dump is larger than {STATE_LIMIT:,} bytes")
    return bytes(kept)
