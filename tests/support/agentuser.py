"""The agent users this test process runs programs as. pytest-xdist's workers run at once,
and a job stops every process of its agent users when it ends, so each worker has users of
its own (the action input `agent-user`, as jobs sharing a self-hosted machine would)."""

from __future__ import annotations

import os

from evalward.runtime.sandbox import AGENT_UID as IMAGE_AGENT_UID
from evalward.runtime.sandbox import AgentUser


def _worker() -> int:
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(name.removeprefix("gw")) if name.removeprefix("gw").isdigit() else 0


AGENT_UID = IMAGE_AGENT_UID + 10 * _worker()
"""The head side's agent uid here; the base side's is the next."""
AGENT_USER_INPUT = "evalward-agent" if AGENT_UID == IMAGE_AGENT_UID else str(AGENT_UID)
"""The action input `agent-user` that names them: the image's own on the first worker."""


def agent_user() -> AgentUser:
    return AgentUser.named(AGENT_USER_INPUT)
