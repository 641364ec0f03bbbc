"""Which values are secrets, and every form of one the Redactor catches."""

from __future__ import annotations

import base64
import binascii
import json
import re
import urllib.parse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalward.security import REDACTED, Redactor, _forms
from evalward.text.escaping import ZERO_WIDTH, inline

pytestmark = pytest.mark.unit

SECRETS = ["sk-live-0123456789abcdef", 'tok&<en>"42??>~~', "p@ss w0rd|with*stars_"]
REDACT = Redactor(SECRETS)


def test_secret_names_include_the_hyphenated_token_input_and_the_configured_key_variables() -> None:
    env = {
        "INPUT_GITHUB-TOKEN": "ghs_hyphenated_input",
        "INPUT_GITHUB_TOKEN": "ghs_underscored_input",
        "GITHUB_TOKEN": "ghs_plain_env_token",
        "INPUT_API-KEY": "an-input-marked-secret",
        "MY_DB_PASSWORD": "password-in-a-name",
        "ACME_LLM_CREDENTIAL": "named-by-apiKeyEnv",
        "INPUT_BYPASS-LABEL": "force-eval-bypass",
        "HOME": "/home/runner",
    }
    text = " ".join(env.values())

    redacted = Redactor.from_env(env, key_envs=["ACME_LLM_CREDENTIAL", "UNSET_KEY"])(text)

    assert redacted == " ".join([REDACTED] * 6 + ["force-eval-bypass", "/home/runner"])
    assert "named-by-apiKeyEnv" in Redactor.from_env(env)(text), "only when configured"


def test_a_database_password_outside_a_url_s_login_is_secret() -> None:
    """A password in a URL's query, a keyword string or a DSN with no scheme is secret in
    any variable, as written and percent-decoded; the rest of the value is not."""
    redact = Redactor.from_env(
        {
            "DATABASE_URL": "postgresql://db.corp/app?user=app&password=Qry%2BPassw0rd-77",
            "PG_CONNECTION": "host=db.corp password='Kw Passw0rd 5' dbname=app",
            "MYSQL_DSN": "app:Go-Dsn-Passw0rd-88@tcp(db.corp:3306)/app",
        }
    )

    said = "Qry+Passw0rd-77 Qry%2BPassw0rd-77 Kw Passw0rd 5 Go-Dsn-Passw0rd-88 db.corp/app"

    assert redact(said) == "*** *** *** *** db.corp/app"


def test_the_login_of_a_url_in_any_variable_is_secret() -> None:
    """A proxy's or an index's URL may carry a login (`user:password@`) in a variable whose
    name says nothing secret: the login is secret, and so is its password alone, as written
    and percent-decoded; a password shorter than any secret is left, as a short secret is."""
    redact = Redactor.from_env(
        {
            "HTTPS_PROXY": "http://ci-bot:Pr0xyPassw0rd-4242@proxy.corp:3128",
            "UV_EXTRA_INDEX_URL": "https://__token__:IndexTok3n-777777@pypi.corp/simple",
            "npm_config_registry": "https://npmTok3nAsUser@npm.corp/",
            "PIP_INDEX_URL": "https://bob:p%40ss%3Aw0rd@pip.corp/simple",
            "ALL_PROXY": "socks5://amy:short@socks.corp:1080",
            "HOME": "/home/runner",
        }
    )

    said = (
        "proxy http://ci-bot:Pr0xyPassw0rd-4242@proxy.corp:3128 refused Pr0xyPassw0rd-4242; "
        "index IndexTok3n-777777, npm npmTok3nAsUser, pip p@ss:w0rd and p%40ss%3Aw0rd; "
        "amy:short, short, /home/runner"
    )
    assert redact(said) == (
        f"proxy http://{REDACTED}@proxy.corp:3128 refused {REDACTED}; "
        f"index {REDACTED}, npm {REDACTED}, pip {REDACTED} and {REDACTED}; "
        f"{REDACTED}, short, /home/runner"
    )
    assert redact("https://pypi.corp/simple and ci-bot") == "https://pypi.corp/simple and ci-bot"


def b64_inside(secret: str, before: bytes, after: bytes, urlsafe: bool) -> str:
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    return encode(before + secret.encode() + after).decode()


@settings(max_examples=300, deadline=None)
@given(
    secret=st.sampled_from(SECRETS),
    before=st.binary(max_size=7),
    after=st.binary(max_size=7),
    urlsafe=st.booleans(),
)
def test_base64_of_a_secret_inside_any_longer_blob_is_redacted(
    secret: str, before: bytes, after: bytes, urlsafe: bool
) -> None:
    """Whatever precedes the secret, only the one or two characters at each edge that mix in
    the neighbours' bits are left: nothing that decodes to a part of the secret."""
    blob = b64_inside(secret, before, after, urlsafe)
    redacted = REDACT(f"data:{blob};")
    assert REDACTED in redacted
    kept = redacted.removeprefix("data:").removesuffix(";").split(REDACTED)
    assert len(kept) == 2
    head, tail = kept
    assert len(head) <= -(-len(before) * 4 // 3) + 1  # the prefix's characters, one mixed
    assert len(tail.rstrip("=")) <= -(-len(after) * 4 // 3) + 2


def test_standalone_encodings_and_escapes_are_redacted() -> None:
    for secret in SECRETS:
        data = secret.encode()
        forms = {
            "base64": base64.b64encode(data).decode(),
            "base64 unpadded": base64.b64encode(data).decode().rstrip("="),
            "base64url": base64.urlsafe_b64encode(data).decode(),
            "hex": binascii.hexlify(data).decode(),
            "HEX": binascii.hexlify(data).decode().upper(),
            "percent": urllib.parse.quote(secret, safe=""),
            "percent lower": re.sub(
                r"%[0-9A-F]{2}", lambda m: m[0].lower(), urllib.parse.quote(secret)
            ),
            "percent plus": urllib.parse.quote_plus(secret),
            "JSON": json.dumps(secret),
            "JSON twice": json.dumps(json.dumps(secret)),
        }
        for kind, form in forms.items():
            assert REDACT(f"<{form}>").count(REDACTED) == 1, (secret, kind, REDACT(f"<{form}>"))


@pytest.mark.parametrize("secret", ["-tok_en_0123", "1.tok_en_0123", "#tok_en_0123"])
def test_a_secret_that_opens_a_block_is_redacted_at_a_lines_start_and_inside_it(
    secret: str,
) -> None:
    """Markdown escapes what opens a block where a line starts (`\\-`, `1\\.`), and only there."""
    redact = Redactor([secret])
    for shown in (inline(secret), inline(f"said {secret} here")):
        assert "0123" not in redact(shown), (shown, redact(shown))


def test_each_line_of_a_multi_line_secret_is_a_secret() -> None:
    key = "-----BEGIN KEY-----\nMIIBOgIBAAJBAKj34GkxFhD9\n0aE0hQ4L3bXzm5Zr1yGm\n-----END KEY-----"
    redact = Redactor([key])
    assert redact(f"x{key}y") == f"x{REDACTED}y"
    assert redact("log: 0aE0hQ4L3bXzm5Zr1yGm.") == f"log: {REDACTED}."


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(
        st.one_of(
            st.text(alphabet="sk-live0123456789abcdef&<>\"'?~ \\%", max_size=12),
            st.sampled_from(sorted({f for s in SECRETS for f in _forms(s)})).map(
                lambda f: f[: len(f) // 2] if len(f) % 3 == 0 else f
            ),
        ),
        max_size=12,
    )
)
def test_one_pattern_redacts_like_the_longest_first_alternation_of_every_form(
    parts: list[str],
) -> None:
    """The forms are compiled as a trie; it must choose what a plain alternation of every form,
    longest first, chooses (in a text with a zero-width space, one of every form read through
    one between any two characters)."""
    forms = sorted({f for s in SECRETS for f in _forms(s)}, key=len, reverse=True)
    text = "".join(parts)
    if ZERO_WIDTH in text:
        bare = sorted({f.replace(ZERO_WIDTH, "") for f in forms}, key=len, reverse=True)
        gap = re.escape(ZERO_WIDTH) + "?"
        plain = re.compile("|".join(gap.join(map(re.escape, f)) for f in bare))
    else:
        plain = re.compile("|".join(re.escape(f) for f in forms))
    assert REDACT(text) == plain.sub(REDACTED, text)


@pytest.mark.parametrize(
    ("before", "secret"),
    [
        ("GH", "-7342acmecred"),  # GH-7342 is a cross-reference
        ("see G", "H-7342acmecred"),
        ("https:", "//deploytok81"),  # :// is an autolink
        ("ww", "w.signing8d0c"),  # so is www.
        ("w", "ww.signing8d0c"),
    ],
)
def test_a_secret_an_escape_splits_with_the_text_before_it_is_redacted(
    before: str, secret: str
) -> None:
    """Where the markdown escape puts its zero-width space depends on the text before the
    secret: it lands inside it, and redaction reads through it."""
    shown = inline(f"{before}{secret} and more")
    assert secret not in shown, "the escape splits the secret"
    assert Redactor([secret])(shown) == inline(before) + f"{REDACTED} and more"


def test_a_zero_width_space_between_two_characters_only_is_read_through() -> None:
    """One between two characters of a form, as an escape puts it; not two, not at its edges."""
    secret = "sk-live-0123456789"
    redact = Redactor([secret])
    assert redact(f"x\u200b{secret}\u200by") == f"x\u200b{REDACTED}\u200by"
    assert redact("sk-live\u200b-0123\u200b456789") == REDACTED
    doubled = "sk-live\u200b\u200b-0123456789"
    assert redact(doubled) == doubled


def test_a_part_of_a_secret_beside_a_cut_mark_is_left_as_written() -> None:
    """Only a whole form of a secret is starred: a guess at a secret's start before a `…`,
    or at its end after one, is left as written, right or wrong, so what is written tells
    nothing of the secret. (evalward's own cuts hide a secret before they fall:
    tests/text/test_cuts.py.)"""
    secret = "sk-proj-A1b2C3d4E5f6G7h8"
    redact = Redactor([secret])
    for part in (secret[:4], secret[:12], secret[:-1], "sk-proj-A1bX", secret[-12:]):
        for text in (f"said {part}…", f"{part}\n… [truncated]", f"… {part}", f"…{part}"):
            assert redact(text) == text
            assert redact(json.dumps(text)) == json.dumps(text)
            assert redact(inline(text)) == inline(text)
    assert redact(f"said {secret}…") == f"said {REDACTED}…"
