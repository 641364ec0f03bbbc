"""The agent users this test process runs programs as. pytest-xdist's workers run at once,
and so may another test run or an action job on the same machine; a job stops every process
of its agent users when it ends, so each worker claims a pair of its own, as `agent-user:
auto` does for a job, and holds it for its life."""

from __future__ import annotations

import os

from evalward.runtime.isolation.agent_users import AGENT_UID as IMAGE_AGENT_UID
from evalward.runtime.isolation.agent_users import AgentUser, claim_pair


def _claimed() -> int:
    if os.geteuid() != 0:  # no user switch without root: the uid only names users
        return IMAGE_AGENT_UID
    return claim_pair({0}).user.uid  # the claim is held until this process ends


AGENT_UID = _claimed()
"""The head side's agent uid here; the base side's is the next."""
AGENT_USER_INPUT = "evalward-agent" if AGENT_UID == IMAGE_AGENT_UID else str(AGENT_UID)
"""The action input `agent-user` that names them: the image's own for the first pair."""


def agent_user() -> AgentUser:
    return AgentUser.named(AGENT_USER_INPUT)
