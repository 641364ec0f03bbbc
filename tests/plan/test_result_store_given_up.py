"""A result store the machine refuses is given up for the rest of the run, never the run's
end: here another run holding the database's write past the wait (`BUSY_SECONDS`, made 0 so
that the refusal comes at once). tests/cli/test_a_disk_that_refuses.py and
tests/action/test_a_runner_out_of_space.py show a full disk's refusal end to end."""

from __future__ import annotations

import contextlib
import errno
import sqlite3
from pathlib import Path

import pytest

from evalward.plan import result_cache_db
from evalward.plan.result_cache import ResultCache
from evalward.plan.result_cache_db import FILE_NAME, ResultStore
from evalward.rundata.pairwise_record import PairAgreement

pytestmark = pytest.mark.unit


def test_a_database_another_run_holds_past_the_wait_gives_the_store_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(result_cache_db, "BUSY_SECONDS", 0.0)
    store = ResultStore(tmp_path, create=True)
    store.put("kept", "1")
    with contextlib.closing(sqlite3.connect(tmp_path / FILE_NAME, isolation_level=None)) as other:
        other.execute("BEGIN IMMEDIATE")  # another run's write, open past the wait
        store.put("dropped", "2")
        other.rollback()
    assert store.refused is not None and store.refused.errno == errno.EBUSY
    assert store.get("kept") is None, "reads miss once the store is given up"
    store.put("after", "3")  # dropped: nothing waits on the database again
    store.commit()
    with contextlib.closing(sqlite3.connect(tmp_path / FILE_NAME)) as db:
        assert db.execute("SELECT key FROM results").fetchall() == [("kept",)]


def test_a_cache_given_up_says_what_to_do_about_the_run_that_holds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(result_cache_db, "BUSY_SECONDS", 0.0)
    cache = ResultCache(tmp_path / "cache")
    assert cache.unkept(tmp_path) is None
    cache.keep_agreement("a", _agreement())
    path = tmp_path / "cache" / "results" / FILE_NAME
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as other:
        other.execute("BEGIN IMMEDIATE")
        cache.keep_agreement("b", _agreement())
        other.rollback()
    said = cache.unkept(tmp_path)
    assert said is not None and said.startswith("the result cache (cache/results/results.sqlite)")
    assert "database is locked (EBUSY)" in said and "let it finish" in said, said


def _agreement() -> PairAgreement:
    return PairAgreement(model="openai/gpt-test", kappa=1.0, consistency=1.0, scored=4, errors=0)
