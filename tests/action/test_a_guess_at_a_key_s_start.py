"""A pull request's agent that writes guesses at the start of the job's key, each followed by a
`…` as if cut there, learns nothing from what is published: every guess is shown as written,
the right one too. Redaction once starred what stood before any `…` when it started a
secret, so the one guess starred was the key's next character, and a run a character gave
the whole key."""

from __future__ import annotations

import string

import pytest

from fakes.github_api import FakeGitHub, FakePull
from support.actionrun import pull_request_event, run_action
from support.byoagent import agent_python, one_agent_suite
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

KEY = "sk-proj-Q7xWm2Lk9PzR4tYb8NcVd1Hs"
"""The job's OpenAI key: evalward holds it, the agent is given only the model proxy's."""
KNOWN = "sk-proj-Q7xW"
"""What earlier runs would have told of the key."""
CANDIDATES = string.ascii_letters + string.digits + "-_"

ANSWERS = """\
import sys
sys.stdin.readline()
print('{"type": "final", "content": "answer"}')
"""

GUESSES = f"""\
import json, sys
sys.stdin.readline()
guesses = [{KNOWN!r} + c + "\\u2026" for c in {CANDIDATES!r}]
print(json.dumps({{"type": "final", "content": "\\n".join(guesses)}}))
"""


def test_every_guess_at_the_key_s_next_character_is_shown_as_written(
    repo: GitRepo, github: FakeGitHub
) -> None:
    python, isolation = agent_python()
    suite = one_agent_suite(
        "guesser",
        "ask",
        command=f"[{python}, agent/guesser.py]",
        prompt="ask",
        assertion="{ type: contains, value: answer }",
    )
    base = repo.commit("the agent", {"agents.yaml": suite, "agent/guesser.py": ANSWERS})
    repo.branch("guess")
    head = repo.commit("guess", {"agent/guesser.py": GUESSES})
    github.add_pull(FakePull(number=9, head_sha=head, base_sha=base))

    run = run_action(
        repo.path,
        github,
        pull_request_event(github.repository, 9, base, head),
        env={"OPENAI_API_KEY": KEY},
        inputs={"cache": "off", "agent-isolation": isolation},
    )

    assert run.returncode == 1, run.stdout + run.stderr
    published = {
        "comment": github.comments_on(9)[0]["body"],
        "job summary": run.summary,
        "results.json": (run.output_dir / "results.json").read_text().replace("\\u2026", "…"),
    }
    for where, text in published.items():
        hidden = [c for c in CANDIDATES if f"{KNOWN}{c}…" not in text]
        assert hidden == [], f"{where} shows all but the guesses {hidden}"
        assert KEY not in text
