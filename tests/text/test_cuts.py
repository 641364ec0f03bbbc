"""Every cut evalward makes of a text from outside hides the process's secrets first: what a
cut shows is never part of a secret, however the text puts the secret across the cut."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from evalward.host import Host
from evalward.rundata.results import cap_output
from evalward.scoring.judges.judge import cap_bytes
from evalward.security import REDACTED
from evalward.text.cuts import cap_chars, hidden, hide_before_cuts
from evalward.text.escaping import block, code_span, inline, terminal_block, terminal_inline

pytestmark = pytest.mark.unit

KEY = "sk-proj-A1b2C3d4E5f6G7h8"


@pytest.fixture
def lent() -> Iterator[None]:
    """The cuts of this process hide `KEY`, as the entry point's host lends its redactor;
    nothing is hidden again after the test."""
    Host({"OPENAI_API_KEY": KEY})
    yield
    hide_before_cuts(str)


def parts(secret: str, shortest: int = 4) -> list[str]:
    """Each start and each end of `secret` from `shortest` characters on."""
    return [secret[:n] for n in range(shortest, len(secret))] + [
        secret[-n:] for n in range(shortest, len(secret))
    ]


def cuts(text: str) -> dict[str, str]:
    """`text` through each of evalward's cuts, cut wherever `text` puts the key."""
    return {
        "cap_chars": cap_chars(text, 60),
        "inline": inline(text, 60),
        "terminal_inline": terminal_inline(text, 60),
        "code_span": code_span(text, 60),
        "block": block(text, 60),
        "terminal_block": terminal_block(text, 60),
        "cap_bytes": cap_bytes(text, 80),
        "cap_output": cap_output(text, 60),
    }


@pytest.mark.usefixtures("lent")
@pytest.mark.parametrize("before", range(40, 62, 3))
def test_no_cut_shows_a_part_of_a_secret_it_fell_in(before: int) -> None:
    text = "w" * before + KEY + " and more words after it" * 4
    for name, shown in cuts(text).items():
        assert not [p for p in parts(KEY, 6) if p in shown], (name, shown)


@pytest.mark.usefixtures("lent")
def test_a_text_that_fits_is_left_whole_for_the_writer_to_redact() -> None:
    """A cut that does not fall keeps the text as it is: the redaction of what is written
    stars the whole secret, as it does everywhere."""
    assert cap_chars(f"the key {KEY}", 60) == f"the key {KEY}"
    assert hidden(json.dumps(KEY)) == json.dumps(REDACTED)


def test_without_a_redactor_lent_a_cut_only_cuts() -> None:
    hide_before_cuts(str)
    assert cap_chars("w" * 50 + KEY, 60) == ("w" * 50 + KEY)[:59] + "…"


def test_a_host_lends_its_secrets_from_the_start_and_the_keys_it_notes_later() -> None:
    """Every cut a command makes hides the secrets, from the host's start on (a GitHub
    answer that stops the action before its providers are read), and a key whose variable
    the providers name once they are read (`apiKeyEnv`) from then on."""
    other = "acme-llm-key-0123456789"
    host = Host({"OPENAI_API_KEY": KEY, "ACME_LLM": other})
    try:
        assert cap_chars("w" * 50 + KEY, 60) == "w" * 50 + REDACTED
        assert other[:9] in cap_chars("w" * 50 + other, 60), "not a secret by its name"
        host.note_key_envs(["ACME_LLM"])
        assert cap_chars("w" * 50 + other, 60) == "w" * 50 + REDACTED
    finally:
        hide_before_cuts(str)
