"""A record's validator is built when it is first used, not when its module is imported
(`rundata/record_model.py`): a run reaches its first model call before any result exists."""

from __future__ import annotations

import pytest

from evalward.rundata.record_model import RecordModel

pytestmark = pytest.mark.unit


def test_a_record_is_built_on_first_use_and_then_validates() -> None:
    class Scored(RecordModel):
        name: str
        score: float

    assert Scored.__pydantic_complete__ is False
    assert Scored.model_validate({"name": "refund", "score": 1}).score == 1.0
    assert Scored.__pydantic_complete__ is True
    with pytest.raises(ValueError, match="score"):
        Scored.model_validate({"name": "refund", "score": "high"})
