"""Secrets never leave the runner, and agent or judge output cannot restructure the comment."""

from __future__ import annotations

import base64
import html
import json
import re
import unicodedata
import urllib.parse

import pytest

from evalward.text.escaping import MAX_MARKS
from fakes.github_api import FakeGitHub, FakePull
from fakes.model_server import ScriptedModelServer, text
from support.actionrun import (
    ActionRun,
    execute,
    prepare,
    pull_request_event,
    run_action,
)
from support.byoagent import agent_python, one_agent_suite
from support.gitrepo import GitRepo
from support.suite import (
    BASE_PROMPT,
    GREETING_FIXTURE,
    HEAD_PROMPT,
    ORDER_FIXTURE,
    SUPPORT_BOT,
    SUPPORT_EVAL,
    make_pr,
    provider_env,
)

pytestmark = pytest.mark.hostile

SECRETS = {
    "OPENAI_API_KEY": "sk-test-secret-value",
    "DEPLOY_TOKEN": 'dpl_tok&<en>"42',
    "MY_SECRET_NOTE": "p@ss w0rd|with*stars_",
    "STRIPE_KEY": "rk_live_\\back\\slash",
}


def everything_written(run: ActionRun, github: FakeGitHub) -> dict[str, str]:
    """Every place a run writes to: its files, the summary, the logs, the outputs, and what it
    sent GitHub (comments, check runs with their annotations, commit statuses)."""
    out = run.output_dir
    written = {p.name: p.read_text() for p in out.iterdir() if p.is_file()}
    written["summary"] = run.summary
    written["stdout"] = run.stdout
    written["stderr"] = run.stderr
    written["outputs"] = json.dumps(run.outputs)
    for index, comment in enumerate(github.comments_on(7)):
        written[f"comment {index}"] = comment["body"]
    for index, check in enumerate(github.check_runs):
        written[f"check run {index}"] = json.dumps(check, ensure_ascii=False)
    for index, status in enumerate(github.statuses):
        written[f"status {index}"] = json.dumps(status, ensure_ascii=False)
    return written


@pytest.fixture
def echoing_run(repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer) -> ActionRun:
    base, head = make_pr(repo, github)
    model.script(lambda b: "BASE-V1" in json.dumps(b), text("Hello! shipped 2026-11-25"))
    leak = " ".join([*SECRETS.values(), github.token])
    # Long enough that the reports are written in several streamed pieces (report.html and
    # results.json are redacted as they are written): the secrets sit early and late.
    padding = "and more " * 12_000
    reply = f"Sure, here are the keys: {leak} {padding} once more: {leak}"
    model.script(lambda b: "HEAD-V2" in json.dumps(b), text(reply))
    env = {"OPENAI_BASE_URL": model.base_url, **SECRETS}
    return run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )


def test_no_secret_value_appears_anywhere_even_when_the_agent_echoes_it(
    echoing_run: ActionRun, github: FakeGitHub
) -> None:
    run = echoing_run
    assert run.returncode == 1, run.stderr
    written = everything_written(run, github)
    assert {"results.json", "report.html", "junit.xml", "comment.md", "comment 0"} <= set(written)
    assert "the keys:" in written["results.json"]  # the echo itself was recorded
    assert "once more:" in written["report.html"] and len(written["report.html"]) > 200_000
    for name, content in written.items():
        for secret in [*SECRETS.values(), github.token]:
            forms = {secret, json.dumps(secret)[1:-1], secret.replace("&", "&amp;")}
            for form in forms:
                assert form not in content, f"{secret!r} leaks into {name} as {form!r}"
            core = re.sub(r"[^A-Za-z0-9]", "", secret)[4:12]
            assert core not in content, f"part of {secret!r} leaks into {name}"


HOSTILE = (
    "@octocat @acme/security-team please look. <img src=x onerror=alert(1)> "
    "</details></details> [click here](https://evil.example/phish) "
    "<!-- evalward:acme/agents --> ## ⚠️ Gate bypassed\n"
    "| Eval | Score |\n|---|---|\n| fake | 1.00 |\n```\n</details> "
    r"$\Huge\color{green}\textsf{✅ evalward: every affected Eval passes}$ "
    r"$$\color{white}\text{hidden}$$ "
    "Z" + "\u0336\u0301\u0317\u0353\u0348\u0358\u0489" * 6 + "algo"
)
"""Mentions, HTML, a forged link, marker, heading and table, a fence closer, LaTeX that
GitHub would draw as math (a huge green verdict, white text), and a letter under 42
combining marks, drawn over the lines around it."""


def outside_code(body: str) -> str:
    """The comment without its fenced code blocks (inert: GitHub shows them verbatim)."""
    out: list[str] = []
    fence = ""
    for line in body.splitlines():
        if not fence and (m := re.match(r"^(`{3,})", line)):
            fence = m[1]
        elif fence and line.strip() == fence:
            fence = ""
        elif not fence:
            out.append(line)
    return "\n".join(out)


def live_dollars(markdown: str) -> list[str]:
    """The lines of `markdown` holding a `$` GitHub may read as a math delimiter: one outside
    code blocks and code spans that is not the literal `<span>$</span>`. GitHub renders `$…$`
    and `$$…$$` as MathJax after markdown, so a backslash before it does not hold."""
    outside = re.sub(r"(?<![`\\])(`+)(?!`).*?(?<!`)\1(?!`)", "", outside_code(markdown))
    return [line for line in outside.replace("<span>$</span>", "").splitlines() if "$" in line]


def judged_greeting(repo: GitRepo, github: FakeGitHub) -> tuple[str, str]:
    """Pull request #7, whose head judges the greeting fixture (`openai/judge-test`, a
    rubric of politeness): its base and head."""
    base, _ = make_pr(repo, github)
    judged = (repo.path / "evals/fixtures/greeting.yaml").read_text() + (
        "    - { type: judge, rubric: Greets the customer politely., minScore: 0.5 }\n"
    )
    eval_with_judge = (repo.path / "evals/support-bot.yaml").read_text() + (
        "  judge: { model: openai/judge-test }\n"
    )
    head = repo.commit(
        "judge the greeting",
        {"evals/fixtures/greeting.yaml": judged, "evals/support-bot.yaml": eval_with_judge},
    )
    github.pulls[7].head_sha = head
    return base, head


def judged_comment(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, quoted: str
) -> str:
    """The comment on pull request #7 (`judged_greeting`) when the agent says `quoted` and
    the judge quotes it back in its summary, its violation and its advice (a score of 0.2):
    the gate fails (exit 1), after the judge ran."""
    base, head = judged_greeting(repo, github)
    verdict = {
        "score": 0.2,
        "confidence": 0.9,
        "summary": f"The agent wrote: {quoted}",
        "violations": [
            {"rule": "stay on topic", "severity": "high", "evidence_step": 1, "quote": quoted}
        ],
        "what_would_raise_score": quoted,
    }
    model.script(lambda b: "EVALWARD-DATA" in json.dumps(b), text(json.dumps(verdict)))
    model.script(lambda b: True, text(f"Hello! {quoted}"))
    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=provider_env(model),
        inputs={"gate-config": "head", "cache": "off"},
    )
    assert run.returncode == 1, run.stderr
    assert model.requests_mentioning("EVALWARD-DATA"), "the judge never ran"
    return str(github.comments_on(7)[0]["body"])


def test_hostile_judge_text_cannot_ping_inject_or_restructure_the_comment(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base, head = judged_greeting(repo, github)
    verdict = {
        "score": 0.2,
        "confidence": 0.9,
        "summary": HOSTILE,
        "violations": [{"rule": HOSTILE, "severity": "high", "evidence_step": 1, "quote": HOSTILE}],
        "what_would_raise_score": HOSTILE,
    }
    model.script(lambda b: "EVALWARD-DATA" in json.dumps(b), text(json.dumps(verdict)))
    model.script("12345", text("Your order has shipped, arriving 2026-11-25."))
    model.script(lambda b: True, text("Hello! How can I help?"))
    env = provider_env(model)

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=env,
        inputs={"gate-config": "head", "cache": "off"},
    )

    assert run.returncode == 1, run.stderr
    assert model.requests_mentioning("EVALWARD-DATA"), "the judge never ran"
    body = github.comments_on(7)[0]["body"]
    assert "Judge score 0.20" in body and "onerror" in body, "the verdict is shown, escaped"
    assert "— judge: step 1 · high · " in body, "the cited violation leads the reason"
    assert re.search(r"(?<![\w\u200b])@(octocat|acme)", body) is None, "a mention would ping"
    markup = outside_code(body)
    assert "<img" not in markup
    assert re.search(r"(?<!\\)\]\(https?://evil", markup) is None, "a live markdown link"
    assert "https://evil" not in markup, "a bare URL GitHub would autolink"
    assert markup.count("<details") == markup.count("</details>")
    assert body.startswith("<!-- evalward") and markup.count("<!--") == 1, "one marker, first"
    # inline judge text never starts a line, so it cannot open a heading or a table row
    assert re.search(r"^#+ ⚠️ Gate bypassed", markup, re.MULTILINE) is None
    assert re.search(r"^\| fake \| 1\.00 \|$", markup, re.MULTILINE) is None
    assert not live_dollars(body), "LaTeX GitHub would draw as math"
    assert most_marks(body) <= MAX_MARKS and "combining marks" in body, "a stack is drawn"


def most_marks(text: str) -> int:
    """The most combining marks one character of `text` carries."""
    longest = run = 0
    for character in text:
        run = run + 1 if unicodedata.category(character) in ("Mn", "Me") else 0
        longest = max(longest, run)
    return longest


# --- every encoded form, every name a secret arrives by ------------------------------------

KEY_ENV = "ACME_LLM_CREDENTIAL"
"""The provider key's variable, named by `apiKeyEnv`: nothing in the name says it is secret."""
ENCODED_SECRETS = {
    KEY_ENV: "acme-cred-5f2e9c1b7d4a",
    "DEPLOY_TOKEN": 'dpl_tok&<en>"42??>~~',  # base64 with + and /, percent forms differ
    "MY_SECRET_NOTE": "p@ss w0rd|with*stars_",
}


def encodings(secret: str) -> dict[str, str]:
    """Each way a hostile agent could write `secret` to slip past a plain search for it."""
    data = secret.encode()
    forms = {"raw": secret}
    for name, encode in (("base64", base64.b64encode), ("base64url", base64.urlsafe_b64encode)):
        whole = encode(data).decode()
        forms[name] = whole
        forms[f"{name} unpadded"] = whole.rstrip("=")
        # inside a longer blob: the secret starts 1 or 2 bytes into a 3-byte group
        forms[f"{name} in a blob, offset 1"] = encode(b"<" + data + b">>").decode()
        forms[f"{name} in a blob, offset 2"] = encode(b"<<" + data + b">").decode()
    forms["hex"] = data.hex()
    forms["HEX"] = data.hex().upper()
    forms["percent"] = urllib.parse.quote(secret, safe="")
    forms["percent plus"] = urllib.parse.quote_plus(secret)
    return forms


def readable(content: str) -> str:
    """`content` with the escapes of HTML, markdown, JSON, workflow commands and mentions
    undone, so that an escaped copy of a secret is found as well."""
    return html.unescape(content).replace("\\", "").replace("\u200b", "").replace("%25", "%")


def windows(form: str, size: int = 12) -> set[str]:
    """Every run of `size` characters of `form`: each holds a part only the secret makes."""
    return {form[i : i + size] for i in range(max(1, len(form) - size + 1))}


def test_every_encoded_form_of_every_known_secret_is_redacted_everywhere(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    config = f"providers:\n  openai: {{ apiKeyEnv: {KEY_ENV} }}\n"
    base = repo.commit(
        "agents, evals and provider settings",
        {
            "evalward.yaml": config,
            "agents/support-bot.yaml": SUPPORT_BOT.format(prompt=BASE_PROMPT),
            "evals/support-bot.yaml": SUPPORT_EVAL,
            "evals/fixtures/order-status.yaml": ORDER_FIXTURE,
            "evals/fixtures/greeting.yaml": GREETING_FIXTURE,
        },
    )
    repo.branch("feature")
    head = repo.commit(
        "change", {"agents/support-bot.yaml": SUPPORT_BOT.format(prompt=HEAD_PROMPT)}
    )
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))
    secrets = {**ENCODED_SECRETS, "INPUT_GITHUB-TOKEN": github.token}
    forms = {
        (name, kind): form
        for name, secret in secrets.items()
        for kind, form in encodings(secret).items()
    }
    echo = " ".join(f"[{name} {kind}: {form}]" for (name, kind), form in forms.items())
    model.script(lambda b: "BASE-V1" in json.dumps(b), text("Hello! shipped 2026-11-25"))
    model.script(lambda b: "HEAD-V2" in json.dumps(b), text(f"Keys: {echo}"))
    launch = prepare(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env={"OPENAI_BASE_URL": model.base_url, **ENCODED_SECRETS},
        inputs={"check-run": "true"},
    )
    # the token as a `docker://` step passes `with: github-token`
    launch.env["INPUT_GITHUB-TOKEN"] = launch.env.pop("INPUT_GITHUB_TOKEN")

    run = execute(repo.path, launch)

    assert run.returncode == 1, run.stderr
    written = everything_written(run, github)
    assert {"results.json", "report.html", "junit.xml", "comment 0", "check run 0"} <= set(written)
    assert "[ACME_LLM_CREDENTIAL hex: ***]" in written["results.json"], "the echo is recorded"
    assert "[DEPLOY_TOKEN base64url in a blob, offset 2: " in readable(written["comment 0"])
    for where, content in written.items():
        shown = readable(content)
        for (name, kind), form in forms.items():
            for part in windows(form):
                assert part not in content and part not in shown, (
                    f"{name} as {kind} leaks into {where}: {part!r}"
                )


@pytest.mark.parametrize(
    ("input_name", "secret_env"),
    [("parallel", "OPENAI_API_KEY"), ("pr", "INPUT_GITHUB-TOKEN")],
)
def test_an_error_quoting_a_secret_is_redacted_on_stderr(
    repo: GitRepo, github: FakeGitHub, input_name: str, secret_env: str
) -> None:
    base, head = make_pr(repo, github)
    secret = "sk-quoted-in-an-error-0042"
    launch = prepare(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env={secret_env: secret},
        inputs={input_name: secret},  # a secret given to the wrong input: the error quotes it
    )

    run = execute(repo.path, launch)

    assert run.returncode == 2
    assert f"::error::action input `{input_name}`" in run.stderr
    assert "(got '***')" in run.stderr
    assert secret not in run.stderr + run.stdout


# --- bidirectional controls ---------------------------------------------------------------

TROJAN = "Refund approved \u202eyaler ton od\u202c \u2067ok\u2069 for #4"
"""Displayed as "Refund approved do not relay ok for #4" where controls are obeyed."""


def test_bidi_controls_in_agent_output_are_shown_by_name_wherever_it_is_shown(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base, head = make_pr(repo, github)
    model.script(lambda b: "BASE-V1" in json.dumps(b), text("Hello! shipped 2026-11-25"))
    model.script(lambda b: "HEAD-V2" in json.dumps(b), text(TROJAN))
    env = provider_env(model)

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=env,
        inputs={"check-run": "true"},
    )

    assert run.returncode == 1, run.stderr
    shown = {
        "comment": github.comments_on(7)[0]["body"],
        "summary": run.summary,
        "report.html": (run.output_dir / "report.html").read_text(),
        "log": run.stdout,
        "check run": json.dumps(github.check_runs, ensure_ascii=False),
    }
    for where, content in shown.items():
        for control in "\u202e\u202c\u2067\u2069":
            assert control not in content, f"U+{ord(control):04X} reaches the {where}"
    # report.html embeds the data as JSON for its script, `<` and `>` written as escapes
    assert (
        "Refund approved \\u003cU+202E\\u003eyaler ton od\\u003cU+202C\\u003e"
        in (shown["report.html"])
    )
    assert "Refund approved <U+202E>yaler ton od<U+202C> <U+2067>ok<U+2069>" in shown["comment"]
    assert "<U+202E>" in shown["summary"]
    assert "\\u202e" in (run.output_dir / "results.json").read_text(), "the data keeps them"


# --- a secret that an escape would split ----------------------------------------------------

SPLIT_BY_AN_ESCAPE = {
    "OPENAI_API_KEY": ("GH", "-7342acmecred5f2e9c"),  # `GH-7342` is a cross-reference
    "DEPLOY_TOKEN": ("see https:", "//deploytok81c4e2"),  # `://` starts an autolink
    "SIGNING_SECRET": ("ww", "w.signing8d0c33a1"),  # so does `www.`
    "RELEASE_PAT": ("#", "#[release9f1b77d2"),  # `##[` is a runner command in a log line
}
"""Secrets, each with the text written right before it: where an escape puts its zero-width
space depends on the text around it, so it lands inside the secret, in a form the secret
escaped alone never takes."""


def test_a_secret_an_escape_splits_with_the_text_before_it_is_redacted_everywhere(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    base, head = judged_greeting(repo, github)
    echo = " ".join(f"{before}{secret}" for before, secret in SPLIT_BY_AN_ESCAPE.values())
    verdict = {
        "score": 0.2,
        "confidence": 0.9,
        "summary": f"The agent wrote: {echo}",
        "violations": [{"rule": "no keys", "severity": "high", "evidence_step": 1, "quote": echo}],
        "what_would_raise_score": echo,
    }
    model.script(lambda b: "EVALWARD-DATA" in json.dumps(b), text(json.dumps(verdict)))
    model.script(lambda b: True, text(f"Hello! {echo}"))
    secrets = {name: secret for name, (_, secret) in SPLIT_BY_AN_ESCAPE.items()}

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env={"OPENAI_BASE_URL": model.base_url, **secrets},
        inputs={"gate-config": "head", "cache": "off", "check-run": "true"},
    )

    assert run.returncode == 1, run.stderr
    assert model.requests_mentioning("EVALWARD-DATA"), "the judge never ran"
    written = everything_written(run, github)
    assert {"results.json", "report.html", "comment 0", "check run 0"} <= set(written)
    assert "GH*** see https:*** ww*** #***" in written["results.json"], "the echo is recorded"
    assert "— judge: step 1 · high · " in written["comment 0"], "the judge's quote is shown"
    leaks = {
        (name, where)
        for where, content in written.items()
        for name, secret in secrets.items()
        for part in windows(secret, size=8)
        if part in content or part in readable(content)
    }
    assert not leaks, f"secrets leak (the secret's name, where): {sorted(leaks)}"


# --- a secret a cut falls in ----------------------------------------------------------------

CUT_KEY = "sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def leaked(written: dict[str, str]) -> set[str]:
    """Where any 8 characters of `CUT_KEY` are written, as they are or once read back."""
    return {
        where
        for where, content in written.items()
        for part in windows(CUT_KEY, size=8)
        if part in content or part in readable(content)
    }


def gated_with_the_key(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, base: str, head: str
) -> ActionRun:
    """The pull request gated by its head's Evals, `CUT_KEY` the job's OpenAI key."""
    return run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env={"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": CUT_KEY},
        inputs={"gate-config": "head", "cache": "off", "check-run": "true"},
    )


def judge_and_agent_say(model: ScriptedModelServer, said: str) -> None:
    """The agent says `said`, and the judge quotes it in every field of its verdict."""
    verdict = {
        "score": 0.2,
        "confidence": 0.9,
        "summary": said,
        "violations": [{"rule": "r", "severity": "high", "evidence_step": 1, "quote": said}],
        "what_would_raise_score": said,
    }
    model.script(lambda b: "EVALWARD-DATA" in json.dumps(b), text(json.dumps(verdict)))
    model.script(lambda b: True, text(f"Hello! {said}"))


@pytest.mark.parametrize("words", [50, 115], ids=["a quote's cut", "report.html's cut"])
def test_a_secret_a_cut_falls_in_is_redacted_everywhere(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, words: int
) -> None:
    """A text from outside is cut short where it is shown (a judge's quote at 120
    characters, report.html's reason at 300): the secret the cut fell in was written in
    part, `sk-proj-A1b2C3d4E5f…` in the comment and all but its last two characters in
    report.html, a form of it redaction did not look for."""
    base, head = judged_greeting(repo, github)
    said = "w " * words + CUT_KEY + " and more words after it" * 3
    judge_and_agent_say(model, said)

    run = gated_with_the_key(repo, github, model, base, head)

    assert run.returncode == 1, run.stderr
    assert model.requests_mentioning("EVALWARD-DATA"), "the judge never ran"
    written = everything_written(run, github)
    assert "w w *** and" in written["comment 0"], "the cut quote is shown, its secret starred"
    assert not (leaks := leaked(written)), f"a part of the key leaks into {sorted(leaks)}"


def test_a_secret_junit_xml_s_cut_falls_in_is_redacted(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """junit.xml's failure message is the run's message cut at 500 characters, and it was
    cut with no mark: a judge's summary that put the key across the cut wrote its first 20
    characters, `sk-proj-A1b2C3d4E5f6`, in the file, a form redaction does not look for
    without a `…` after it. The key is starred in the whole message before it is cut."""
    base, head = judged_greeting(repo, github)
    said = "w " * 224 + CUT_KEY + " and more words after it" * 3  # the key from character 480
    judge_and_agent_say(model, said)

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env={"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": CUT_KEY},
        inputs={"gate-config": "head", "cache": "off"},
    )

    assert run.returncode == 1, run.stderr
    written = everything_written(run, github)
    assert "w w *** and" in written["junit.xml"], "the cut message is shown, its secret starred"
    assert not (leaks := leaked(written)), f"a part of the key leaks into {sorted(leaks)}"


def test_a_secret_a_regex_s_shown_match_is_cut_in_is_redacted(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """A regex assertion that matches says what it matched, cut at 80 characters, and it
    was cut with no mark: a pattern of the pull request's own (`Hello.*`) that matched up
    to a key the agent wrote showed the key's first 13 characters in every report, a form
    redaction does not look for without a `…` after it. The key is starred in the whole
    match before it is cut."""
    base, _ = make_pr(repo, github)
    matched = (repo.path / "evals/fixtures/greeting.yaml").read_text() + (
        '    - { type: regex, pattern: "Hello.*" }\n'
    )
    head = repo.commit("match the greeting", {"evals/fixtures/greeting.yaml": matched})
    github.pulls[7].head_sha = head
    said = "w " * 30 + CUT_KEY + " and more words after it"  # the key from character 67
    model.script(lambda b: True, text(f"Hello! {said}"))

    run = gated_with_the_key(repo, github, model, base, head)

    written = everything_written(run, github)
    shown = json.loads(written["results.json"])["fixtures"]
    assert "w w *** and" in json.dumps(shown, ensure_ascii=False), "the match, its key starred"
    assert not (leaks := leaked(written)), f"a part of the key leaks into {sorted(leaks)}"


def test_a_secret_a_cut_of_the_judge_s_verdict_falls_in_is_redacted(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """The judge's verdict is capped as it is stored: its summary at 3 KB and its advice at
    1 KB (cut with ` … [truncated]`, a space before the mark), a violation's rule at 200
    characters and its quote at 500 (cut with no mark). A verdict that put the key across
    each cut wrote its first 16 to 20 characters in results.json and report.html, which
    no form of the key matches. The key is starred in each whole text before it is cut."""
    base, head = judged_greeting(repo, github)
    tail = " and more words after it"
    verdict = {
        "score": 0.2,
        "confidence": 0.9,
        "summary": "w " * 1520 + CUT_KEY + tail,  # the key from byte 3,040 of 3,056 kept
        "violations": [
            {
                "rule": "w " * 90 + CUT_KEY + tail,  # from character 180 of 200
                "severity": "high",
                "evidence_step": 1,
                "quote": "w " * 240 + CUT_KEY + tail,  # from character 480 of 500
            }
        ],
        "what_would_raise_score": "w " * 496 + CUT_KEY + tail,  # from byte 992 of 1,008
    }
    model.script(lambda b: "EVALWARD-DATA" in json.dumps(b), text(json.dumps(verdict)))
    model.script(lambda b: True, text("Hello! How can I help?"))

    run = gated_with_the_key(repo, github, model, base, head)

    assert run.returncode == 1, run.stderr
    assert model.requests_mentioning("EVALWARD-DATA"), "the judge never ran"
    written = everything_written(run, github)
    assert not (leaks := leaked(written)), f"a part of the key leaks into {sorted(leaks)}"


SCORER = """\
import re, sys
key = re.search(r"sk-proj-[A-Za-z0-9]+", sys.stdin.read())[0]
said = {said}
(sys.stderr if {to_stderr} else sys.stdout).write(said)
sys.exit(1)
"""
SCORER_SAYS = {
    # its stderr cut to its first and last 300 characters: the key across the first cut...
    "stderr's start": ('"w " * 140 + key + "z" * 600', True),
    # ...and across the last, which shows the key's last 20 characters after the cut
    "stderr's end": ('"z" * 700 + key + "w" * 280', True),
    # its stdout cut at 500 characters
    "stdout": ('"w " * 240 + key + " and more"', False),
}


@pytest.mark.parametrize("says", list(SCORER_SAYS))
def test_a_secret_a_cut_of_a_scorer_s_words_falls_in_is_redacted(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer, says: str
) -> None:
    """A script scorer's words are cut as its failure's reason: its stderr to its first
    and last 300 characters (` … ` between them), its stdout at 500 characters (no mark).
    A scorer of the pull request's own that printed the key the agent said across a cut
    wrote the key's first (or last) 20 characters in every report, which no form of the
    key matches. The key is starred in the whole of its words before either
    cut."""
    base, _ = make_pr(repo, github)
    scored = (repo.path / "evals/fixtures/greeting.yaml").read_text() + (
        "    - { type: code, language: python, protocol: script, file: scorers/says.py }\n"
    )
    said, to_stderr = SCORER_SAYS[says]
    head = repo.commit(
        "score the greeting",
        {
            "evals/fixtures/greeting.yaml": scored,
            "scorers/says.py": SCORER.format(said=said, to_stderr=to_stderr),
        },
    )
    github.pulls[7].head_sha = head
    model.script(lambda b: True, text(f"Hello! {CUT_KEY} is the key."))

    run = gated_with_the_key(repo, github, model, base, head)

    written = everything_written(run, github)
    assert "***" in written["comment.md"], "the scorer's words are shown, the key starred"
    assert not (leaks := leaked(written)), f"a part of the key leaks into {sorted(leaks)}"


BROKEN_LINE_AGENT = """\
import json, os, sys, urllib.request

sys.stdin.readline()
body = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "the key"}]}
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=json.dumps(body).encode()
)
request.add_header("content-type", "application/json")
request.add_header("authorization", "Bearer " + os.environ["OPENAI_API_KEY"])
with urllib.request.urlopen(request, timeout=60) as reply:
    said = json.loads(reply.read())["choices"][0]["message"]["content"]
key = said.split()[1]
print(json.dumps({"type": "tool_call", "x": "w " * 35 + key}), flush=True)  # no `tool`
print(json.dumps({"type": "final", "content": "the answer"}), flush=True)
"""


def test_a_secret_a_cut_of_an_agent_s_broken_line_falls_in_is_redacted(
    repo: GitRepo, github: FakeGitHub, model: ScriptedModelServer
) -> None:
    """A line of an agent's that is no trace event is shown in the run's error cut at 120
    characters, and it was cut with no mark: an agent that printed the key its model said
    across the cut wrote the key's first 22 characters in every report. The cut ends `…`,
    and the key is starred in the whole line before it is cut."""
    python, isolation = agent_python()
    suite = one_agent_suite(
        "teller",
        "ask",
        command=f"[{python}, agent/teller.py]",
        prompt="ask",
        assertion="{ type: contains, value: answer }",
    )
    answers = (
        "import json, sys\nsys.stdin.readline()\n"
        'print(json.dumps({"type": "final", "content": "the answer"}))\n'
    )
    base = repo.commit("the agent", {"agents.yaml": suite, "agent/teller.py": answers})
    repo.branch("change")
    head = repo.commit("tell", {"agent/teller.py": BROKEN_LINE_AGENT})
    model.script("the key", text(f"Hello! {CUT_KEY} is the key."))
    env = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": CUT_KEY}

    github.add_pull(
        FakePull(number=7, head_sha=head, base_sha=base, files=repo.pull_files(base, head))
    )
    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 7, base, head),
        env=env,
        inputs={"cache": "off", "agent-isolation": isolation},
    )

    written = everything_written(run, github)
    assert "is not a trace event" in written["results.json"], run.stderr[-2000:]
    assert not (leaks := leaked(written)), f"a part of the key leaks into {sorted(leaks)}"
