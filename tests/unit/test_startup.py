"""The collector is off from the process's start until the first resource load, which freezes
what start-up built and turns it back on."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalward import startup
from evalward.resources import load_resources

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: bot }
spec: { models: [openai/gpt-test], system: hi }
"""


@pytest.fixture
def collector() -> Iterator[None]:
    assert gc.isenabled() and gc.get_freeze_count() == 0
    yield
    gc.unfreeze()
    gc.enable()
    startup._paused = False


def test_the_first_load_ends_the_start_up_pause(collector: None, tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(AGENT)
    startup.pause_collector()
    assert not gc.isenabled()
    load_resources(tmp_path)
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    assert frozen > 0  # what start-up built is out of the collector's sight
    # Later loads pause and resume as before and freeze nothing: a freeze would add the objects
    # of the set kept here (frozen objects that die meanwhile only lower the count).
    again = load_resources(tmp_path)
    assert gc.isenabled() and gc.get_freeze_count() <= frozen
    assert again.agents


def test_a_load_without_a_pause_freezes_nothing(collector: None, tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(AGENT)
    load_resources(tmp_path)
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_a_merge_ends_the_start_up_pause_too(collector: None) -> None:
    from evalward.changes import ChangeSet
    from evalward.errors import ConfigError
    from evalward.plan import Plan
    from evalward.providers.pricing import PriceTable
    from evalward.shard_merge import Expected, merge

    plan = Expected({"head": "", "base": ""}, Plan(), {}, ChangeSet(), [], PriceTable())
    startup.pause_collector()
    with pytest.raises(ConfigError, match="no shard results"):
        merge([], plan, None)  # a merge reads results: its start-up ends here
    assert gc.isenabled() and gc.get_freeze_count() > 0
