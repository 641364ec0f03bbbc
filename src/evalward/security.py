"""Keep secrets out of everything evalward writes: comments, summaries, files and logs.

The secrets are the values of the environment variables evalward knows to hold one:

- every name that looks secret (`…_KEY`, `…_TOKEN`, `…_PAT`, `…SECRET…`, `…PASSWORD…`, the
  separator `_` or `-`), which covers the `github-token` input both as action.yml passes it
  (`INPUT_GITHUB_TOKEN`) and as a `docker://` step does (`INPUT_GITHUB-TOKEN`), any other
  input whose name says it is secret, and `GITHUB_TOKEN` (not `on-missing-secrets`, whose value
  is one of a few words: `NEVER_SECRET`);
- every variable the provider settings name as a key (`apiKeyEnv` in evalward.yaml, or the
  defaults `OPENAI_API_KEY` and `ANTHROPIC_API_KEY`), whatever it is called;
- the login of every URL in any variable (`HTTPS_PROXY=http://user:password@proxy`,
  `UV_EXTRA_INDEX_URL=https://__token__:TOKEN@host/simple`), and of a DSN with no scheme
  (`app:password@tcp(db:3306)/app`): `user:password` and the password alone; and every
  credential written as a parameter (`postgresql://db/app?password=…`, `host=db
  password=…`, `Server=db;Password=…;`); each as written and percent-decoded (`logins`).

A secret is redacted in each form it can take on its way out (`_forms`): as it is; escaped
for JSON, HTML/XML, GitHub markdown, the terminal and workflow commands, once or twice; and
encoded in base64 and base64url (with or without padding, alone or inside a longer blob),
hex (lower and upper case) and percent-encoding (`quote`, `quote_plus`, upper or lower hex
digits) — each of those escaped once more; and in a text holding a zero-width space, with one
between any two of its characters, as markdown's escapes put one where the text before the
secret decides (`GH` before `-7342…`).

What a cut shows of a secret is no form of it: where evalward cuts a text from outside short,
the secrets are hidden before the cut (`text/cuts.py`, lent this redactor by the entry point),
never looked for after it. Starring whatever stands before a cut's `…` and starts a secret
would tell a pull request's agent that wrote a guess and `…` of its own whether the guess is
right: redaction says only whether a whole form of a secret is there.
Not covered: encodings of an encoding (base64 of hex), other character sets than UTF-8,
base64 wrapped over lines, and a secret shorter than `_MIN_SECRET_LENGTH` (too likely to be
ordinary text).
"""

from __future__ import annotations

import base64
import binascii
import html
import json
import re
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cached_property
from typing import Any

from evalward.text.escaping import (
    ZERO_WIDTH,
    command_data,
    command_property,
    inline,
    terminal_inline,
    unmention,
)

_SECRET_NAME = re.compile(r"[_-](KEY|TOKEN|PAT)$|SECRET|PASSWORD", re.IGNORECASE)
ALWAYS_SECRET = ("GITHUB_TOKEN", "INPUT_GITHUB_TOKEN", "INPUT_GITHUB-TOKEN")
"""The token evalward talks to GitHub with, under each name it can arrive by."""
NEVER_SECRET = ("INPUT_ON_MISSING_SECRETS", "INPUT_ON-MISSING-SECRETS")
"""The action's inputs whose names say secret but whose value is one of a few words (an enum of
action/settings.py: `fail`, `skip`). Taken for a secret, the word would be starred wherever
it stands in what evalward writes (`ignore` in "is *** by git"), and a mistyped value in the
message that refuses it ("got '***'")."""
_MIN_SECRET_LENGTH = 6
_URL_LOGIN = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://([^/?#\s]*)@")
"""A URL's login (its userinfo): what stands between `scheme://` and the last `@` before its
host ends, where a browser and curl read it."""
_NETWORK_LOGIN = re.compile(r"(?i)(?:^|(?<=[\s,]))(?:[a-z][a-z0-9+.-]*://)?([^\s,]*)@")
"""A proxy's or an index's login, as the tools that read those variables take it: with no
scheme too (`user:password@proxy:3128`, which curl, pip and uv read as `http://`), and up to
the last `@` of the address, a raw `#`, `/` or `?` in the password included."""
_BARE_LOGIN = re.compile(r"(?:^|(?<=[\s,]))([^\s,:/@?#=]+:(?!//)[^\s,@]+)@")
"""A login with no scheme before it, where a `:` says it holds a password: a Go driver's
DSN (`app:password@tcp(db:3306)/app`); not an e-mail address (no `:`)."""
_CREDENTIAL = re.compile(
    r"(?i)(?:^|(?<=[?&;\s]))(?:password|passwd|pwd|pass|sslpassword|(?:client_)?secret|"
    r"(?:access_|auth_|api_)?token|(?:x-)?api[_-]?key|apikey|key|"
    r"(?:subscription|access|secret|account)[_-]?key|sig|signature|code)"
    r"\s*=\s*('[^']*'|\"[^\"]*\"|[^\s&;#]+)"
)
"""A credential written as a parameter: in a URL's query (libpq's
`postgresql://db/app?user=app&password=…`, a gateway's `?key=…` or `?subscription-key=…`,
a signed URL's `?sig=…`, an Azure function's `?code=…`), a keyword string (libpq's
`host=db password=…`, ADO.NET's `Server=db;Password=…;`)."""
_NETWORK_NAMES = re.compile(r"(?i)(?:^|_)PROXY\Z|INDEX|REGISTRY")
"""The variables that name a proxy or a package index (`HTTPS_PROXY`, `UV_EXTRA_INDEX_URL`,
`npm_config_registry`): their logins are read as `_NETWORK_LOGIN` says."""
REDACTED = "***"
_STREAM_BATCH = 64 * 1024

Redact = Callable[[str], str]
"""Whatever hides secrets in a text: a `Redactor`, or the identity where none can appear."""


def looks_secret(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret."""
    if name in NEVER_SECRET:
        return False
    return name in ALWAYS_SECRET or _SECRET_NAME.search(name) is not None


class Redactor:
    """Replaces every form of every known secret with `***` (one compiled alternation)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        values = {s for s in _pieces(secrets) if len(s) >= _MIN_SECRET_LENGTH}
        self._forms = {form for s in values for form in _forms(s)}
        self._pattern = re.compile(_trie_pattern(self._forms)) if self._forms else None
        # a zero-width space may stand between two characters of a form (`_read_through`)
        self._longest = max((2 * len(form) for form in self._forms), default=0)

    @classmethod
    def from_env(cls, env: Mapping[str, str], key_envs: Iterable[str] = ()) -> Redactor:
        """The secrets of `env`: secret-looking names, and `key_envs` (the variables the
        provider settings read keys from) whatever their names."""
        named = set(key_envs)
        named_secret = (value for name, value in env.items() if name in named or looks_secret(name))
        return cls(
            [
                *named_secret,
                *(found for name, value in env.items() for found in logins(value, name)),
            ]
        )

    def __call__(self, text: str) -> str:
        if self._pattern is None:
            return text
        return self._pattern_for(text).sub(REDACTED, text)

    def _spans(self, text: str) -> Iterator[tuple[int, int]]:
        """Where `text` holds a form of a secret (`_pattern_for`), in order."""
        return (match.span() for match in self._pattern_for(text).finditer(text))

    def _pattern_for(self, text: str) -> re.Pattern[str]:
        """The forms as they are, or, in a text that holds a zero-width space, read through
        one between any two characters (`_read_through`)."""
        assert self._pattern is not None
        return self._read_through if ZERO_WIDTH in text else self._pattern

    @cached_property
    def _read_through(self) -> re.Pattern[str]:
        """Every form with a zero-width space allowed between any two of its characters.

        GitHub markdown's escapes put one where the text around a character decides
        (`GH-` before a digit, `://`, `www.`), so a secret written right after `GH` takes a
        form its own escaping cannot foresee: `GH-\u200b7342…` for the secret `-7342…`. Read
        through them, a form is found whatever text came before it. Compiled on the first
        text that needs it (a comment, a job summary): most of what is redacted has none."""
        bare = {form.replace(ZERO_WIDTH, "") for form in self._forms}
        return re.compile(_trie_pattern(bare, gap=re.escape(ZERO_WIDTH) + "?"))

    def stream(self, chunks: Iterable[str], batch: int = _STREAM_BATCH) -> Iterator[str]:
        """Redact text that is written as it is produced (a large report), giving the same
        text as redacting it whole: a secret split across two chunks is still caught.

        Text is held back only while a secret could still be completing: a match starting
        before the last `longest - 1` characters is decided by what is already here.
        """
        if self._pattern is None:
            yield from chunks
            return
        # Each flush rescans the `longest - 1` characters it holds back: batches at least that
        # long keep the work linear however long a secret's escaped form is.
        batch = max(batch, self._longest)
        pending: list[str] = []
        size = 0
        for chunk in chunks:
            pending.append(chunk)
            size += len(chunk)
            if size < batch + self._longest:
                continue
            emitted, rest = self._redact_settled("".join(pending))
            pending, size = [rest], len(rest)
            yield emitted
        yield self("".join(pending))

    def _redact_settled(self, text: str) -> tuple[str, str]:
        """Redact the part of `text` no later text can change; return it and the rest."""
        assert self._pattern is not None
        settled = len(text) - (self._longest - 1)
        out: list[str] = []
        position = 0
        for start, end in self._spans(text):
            if start >= settled:
                break
            out += (text[position:start], REDACTED)
            position = end
        end = max(position, settled)
        out.append(text[position:end])
        return "".join(out), text[end:]


def logins(value: str, name: str = "") -> list[str]:
    """The secrets of each login in `value` (of the variable `name`): a URL's (a proxy's or
    an index's read as their tools read them, `_login_pattern`), one with no scheme that
    holds a password (`_BARE_LOGIN`): `user:password`, the password alone, a login with no
    `:` (a token given as the user); and each credential written as a parameter
    (`_CREDENTIAL`: `?password=…`, `password=…`); each as written and percent-decoded."""
    found: list[str] = []
    for login in [*_login_pattern(name).findall(value), *_BARE_LOGIN.findall(value)]:
        password = login.partition(":")[2]
        found += {login, urllib.parse.unquote(login), password, urllib.parse.unquote(password)}
    for written in _CREDENTIAL.findall(value):
        bare = written.strip("'\"")
        found += {written, bare, urllib.parse.unquote(bare), urllib.parse.unquote_plus(bare)}
    return [secret for secret in found if secret]


def without_logins(value: str, name: str = "") -> str:
    """`value` (of the variable `name`) with each login left out (`http://proxy:3128`,
    `tcp(db:3306)/app`) and each credential parameter emptied (`?user=app&password=`)."""
    for pattern in (_login_pattern(name), _BARE_LOGIN, _CREDENTIAL):
        value = pattern.sub(_before_the_secret, value)
    return value


def _before_the_secret(match: re.Match[str]) -> str:
    """What a match of a login's or a credential's pattern holds before its secret (its
    first group): `http://` of `http://user:pw@`, `password=` of `password=pw`."""
    return match[0][: match.start(1) - match.start()]


def _login_pattern(name: str) -> re.Pattern[str]:
    """How the logins of the variable `name` are found: a proxy's or an index's as the tools
    that read it take them (`_NETWORK_LOGIN`), any other's in URLs with their scheme."""
    return _NETWORK_LOGIN if _NETWORK_NAMES.search(name) else _URL_LOGIN


def _trie_pattern(forms: Iterable[str], gap: str = "") -> str:
    """One regular expression matching the longest of `forms` that starts at a position.

    The forms share prefixes (a secret and its escapes, the three base64 alignments), so
    they are written as a trie: at each character the engine tries the few characters that
    can follow, not every form — about three times faster than a flat alternation of 80
    forms (bench/redaction.py). A form ending where a longer one goes on is the last, empty,
    alternative, so the longer is preferred, as in an alternation sorted longest first.
    `gap`, a pattern, may match between any two characters of a form.
    """
    trie: dict[str, Any] = {}
    for form in forms:
        node = trie
        for char in form:
            node = node.setdefault(char, {})
        node[""] = {}

    def written(node: dict[str, Any], before: str = "") -> str:
        branches = []
        for first, after in sorted(node.items()):
            if not first:
                continue
            run, child = [first], after
            while len(child) == 1 and "" not in child:  # a chain: no recursion per character
                ((char, child),) = child.items()
                run.append(char)
            branches.append(before + gap.join(map(re.escape, run)) + written(child, gap))
        if "" not in node and len(branches) == 1:
            return branches[0]
        return "(?:" + "|".join(branches) + ("|)" if "" in node else ")") if branches else ""

    return written(trie)


def _pieces(secrets: Iterable[str]) -> Iterator[str]:
    """Each secret, trimmed, and each line of a multi-line one (a PEM key): escaping for
    markdown or a log joins or splits lines, and every line is secret on its own."""
    for secret in secrets:
        yield secret.strip()
        lines = secret.strip().splitlines()
        if len(lines) > 1:
            yield from (line.strip() for line in lines)


def _escapes() -> list[Callable[[str], str]]:
    from markupsafe import escape as jinja_escape

    return [
        lambda s: json.dumps(s)[1:-1],
        lambda s: json.dumps(s, ensure_ascii=False)[1:-1],
        html.escape,
        lambda s: html.escape(s, quote=False),
        lambda s: str(jinja_escape(s)),  # report.html: `"` is `&#34;`, `'` is `&#39;`
        lambda s: html.escape(s, quote=False).replace('"', "&quot;"),  # an XML attribute
        lambda s: inline(s, limit=len(s) * 8),
        # inside a line, where no `-` or `1.` it starts with opens a block to escape
        lambda s: inline("x" + s, limit=len(s) * 8 + 1)[1:],
        lambda s: terminal_inline(s, limit=len(s) * 8),
        unmention,  # a code block in the comment
        command_data,
        command_property,
    ]


def _encodings(secret: str) -> set[str]:
    """The secret's UTF-8 bytes in base64 (also inside a longer blob), hex and percent form."""
    data = secret.encode("utf-8")
    forms: set[str] = set()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        whole = encode(data).decode("ascii")
        forms |= {whole, whole.rstrip("=")}
        forms |= {_base64_inside(data, offset, encode) for offset in range(3)}
    hexed = binascii.hexlify(data).decode("ascii")
    forms |= {hexed, hexed.upper()}
    percent = {
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote(secret),
        urllib.parse.quote_plus(secret),
    }
    forms |= percent | {re.sub(r"%[0-9A-F]{2}", lambda m: m[0].lower(), p) for p in percent}
    return forms


def _base64_inside(data: bytes, offset: int, encode: Callable[[bytes], bytes]) -> str:
    """What base64 of a longer text holds for `data` starting `offset` bytes into a 3-byte
    group: the characters whose 6 bits all come from `data` (the edge ones mix in neighbours).
    """
    encoded = encode(b"\0" * offset + data + b"\0\0").decode("ascii")
    first = -(-8 * offset // 6)  # the first character that starts inside `data`
    last = 8 * (offset + len(data)) // 6  # the first that ends past it
    return encoded[first:last]


def _forms(secret: str) -> set[str]:
    """A secret as it can appear in what evalward writes: as it is, escaped once or twice
    (e.g. JSON inside HTML), and encoded (base64, hex, percent) then escaped once: the text
    redacted is the text written."""
    escapes = _escapes()
    once = {secret} | {escape(secret) for escape in escapes}
    escaped = once | {escape(form) for form in once for escape in escapes}
    encoded = _encodings(secret)
    return escaped | encoded | {escape(form) for form in encoded for escape in escapes}
