"""Whose processes may present one run's key of the model proxy: the run's own.

A run's key is in its processes' environment, and anything they write may reach another run
of the same agent user (a shared `/tmp`). A call made with it lands in its run's trace, so a
run could make its calls with a sibling run's key and leave its own trace empty but for what
it reports. Where evalward tracks a run's processes (`sandbox.Sandbox.in_run`: the sessions
its programs start, its cgroup where one can be made), the proxy asks, for each call, which
processes hold the connection it came on (`socket_holders`), and the key is accepted only
when every one of them is the run's: in a session the run started (or its http agent's
server's, which answers the run's requests), or in its cgroup. A process in no run's cgroup
and no session evalward started (one that left its session where there is no cgroup) is
told from no one: it may present the key of a run of its user only while no other run of
that user is under way. Anything else is refused, and so is a call on a connection no
process holds any longer.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from evalward.runtime.processes.socket_holders import Holder
from evalward.runtime.processes.strays import RunProcesses, Sessions


@dataclass(eq=False)
class KeyHolders:
    """The processes one run's key may come from."""

    run: RunProcesses
    sessions: Sessions
    """Every program evalward started and every run under way (the sandbox's)."""
    servers: set[int] = field(default_factory=set)
    """Sessions of the http agent servers answering the run's requests."""

    def refusal(self, holders: Sequence[Holder]) -> str | None:
        """Why a call that came over a connection `holders` hold is not the run's (None: it is)."""
        if not holders:
            return "no process holds the connection it came on any longer"
        for holder in holders:
            why = self._stranger(holder)
            if why is not None:
                return f"it came from process {holder.pid}, {why}"
        return None

    def _stranger(self, holder: Holder) -> str | None:
        run = self.run
        if run.holds(holder.session, holder.cgroup) or holder.session in self.servers:
            return None
        others = [each for each in self.sessions.runs if each is not run]
        if holder.session in self.sessions.live or any(
            each.group is not None and holder.cgroup == each.group.name for each in others
        ):
            return "which is another run's or another program's"
        user = run.uid if run.uid is not None else os.getuid()
        if user not in holder.uids:
            return "which runs as another user"
        if any(each.uid == run.uid for each in others):
            return (
                "which left the session it was started in, so it cannot be told from the "
                "processes of another run under way"
            )
        return None
