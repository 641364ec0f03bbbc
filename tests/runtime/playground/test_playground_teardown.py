"""A playground is torn down whatever ends its run — a run cancelled mid-way (an interrupt,
a failing sibling) included — and one that cannot be made says why, naming it."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Mapping
from pathlib import Path

import pytest

from evalward.resources.playground import Playground
from evalward.rundata.trace import Trace
from evalward.runtime.isolation.agent_users import AgentUser
from evalward.runtime.isolation.sandbox import Sandbox
from evalward.runtime.playground.base import PlaygroundSource
from evalward.runtime.playground.provision import PlaygroundSetting
from evalward.runtime.playground.run import StateNeeds, run_in_playground
from evalward.runtime.processes.port_owner import loopback_listeners

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
CRM = Playground.model_validate(
    {
        "name": "crm",
        "sqlite": {"seed": "examples/refund-desk/shop/seed.sql"},
        "service": {
            "start": ["python3", "examples/refund-desk/crm/server.py", "--port", "{port}"],
            "ready": "/health",
        },
    }
)
SETTING = PlaygroundSetting(env={"PATH": os.environ["PATH"]})


def test_a_cancelled_run_leaves_no_service_and_no_folder() -> None:
    seen: dict[str, str] = {}

    async def scenario() -> None:
        entered = asyncio.Event()

        async def run(env: Mapping[str, str]) -> Trace:
            seen.update(env)
            entered.set()
            await asyncio.Event().wait()  # the agent never finishes
            return Trace()

        task = asyncio.ensure_future(
            run_in_playground(PlaygroundSource("crm", CRM, ROOT), StateNeeds(), run, SETTING)
        )
        await entered.wait()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    port = int(seen["EVALWARD_SERVICE_URL"].rsplit(":", 1)[1])
    assert loopback_listeners(port) == []  # the service is gone
    assert not Path(seen["EVALWARD_SQLITE_PATH"]).exists()
    assert not Path(seen["EVALWARD_SQLITE_PATH"]).parent.exists()  # the run's folder


def test_a_playground_that_cannot_be_made_is_the_runs_error_naming_it() -> None:
    refused = Sandbox(AgentUser(20001, 20001, "nobody"), unavailable="agent isolation needs root")
    ran: list[bool] = []

    async def run(env: Mapping[str, str]) -> Trace:
        ran.append(True)
        return Trace()

    trace, state = asyncio.run(
        run_in_playground(
            PlaygroundSource("crm", CRM, ROOT),
            StateNeeds(),
            run,
            PlaygroundSetting(env={}, sandbox=refused),
        )
    )
    assert ran == [] and state is None
    assert trace.error == (
        "the playground could not be provisioned: playground 'crm': agent isolation needs root"
    )
