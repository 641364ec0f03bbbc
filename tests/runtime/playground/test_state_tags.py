"""A service's state read again by its ETag (`runtime/playground/state_tags.py`): what a state
answer's tag must be to be kept, and every way a service's answer breaks the validators' rules
refused as the run's error naming the service. With a real service on loopback:
tests/runtime/playground/test_service_etags.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalward.errors import PlaygroundError
from evalward.resources.playground import Playground
from evalward.runtime.playground.base import LivePlayground, PlaygroundSource
from evalward.runtime.playground.state_tags import IM_USED, NOT_MODIFIED, TAG_LIMIT, answered

pytestmark = pytest.mark.unit
WHERE = "service 'shop' at /state"


def _live(tmp_path: Path) -> LivePlayground:
    spec = Playground.model_validate({"files": {"seed": "world"}})
    return LivePlayground(PlaygroundSource("shop", spec, tmp_path), tmp_path, None, 1.0)


@pytest.mark.parametrize(
    ("status", "headers", "sent", "kept"),
    [
        (200, {"etag": '"v1"'}, None, '"v1"'),
        (200, {}, None, None),
        (200, {"etag": 'W/"v1"'}, None, None),  # weak: the bytes may differ, so not kept
        (NOT_MODIFIED, {"etag": '"v1"'}, '"v1"', '"v1"'),
        (IM_USED, {"etag": '"v2"'}, '"v1"', '"v2"'),
    ],
)
def test_a_strong_tag_is_kept_and_a_weak_one_or_none_is_not(
    tmp_path: Path, status: int, headers: dict[str, str], sent: str | None, kept: str | None
) -> None:
    assert answered(_live(tmp_path), WHERE, status, headers, sent) == kept


@pytest.mark.parametrize(
    ("status", "headers", "sent", "why"),
    [
        (NOT_MODIFIED, {"etag": '"v1"'}, None, "answered 304 Not Modified to a read that sent no"),
        (NOT_MODIFIED, {}, '"v1"', "answered 304 Not Modified without an ETag"),
        (NOT_MODIFIED, {"etag": '"v2"'}, '"v1"', "with another ETag than the one it was sent"),
        (NOT_MODIFIED, {"etag": 'W/"v1"'}, '"v1"', "answered 304 Not Modified with a weak ETag"),
        (IM_USED, {"etag": '"v1"'}, None, "answered 226 IM Used (a delta) to a read that sent no"),
        (200, {"etag": "v1"}, None, "is not one quoted tag of printable ASCII"),
        (200, {"etag": '"a"b"'}, None, "is not one quoted tag of printable ASCII"),
        (200, {"etag": '"v\x011"'}, None, "holds a control character"),
        (200, {"etag": '"' + "x" * TAG_LIMIT + '"'}, None, f"is longer than {TAG_LIMIT} bytes"),
    ],
)
def test_an_answer_that_breaks_the_validators_rules_is_the_run_s_error(
    tmp_path: Path, status: int, headers: dict[str, str], sent: str | None, why: str
) -> None:
    with pytest.raises(PlaygroundError) as raised:
        answered(_live(tmp_path), WHERE, status, headers, sent)
    assert str(raised.value).startswith(f"playground 'shop': {WHERE} ")
    assert why in str(raised.value)
