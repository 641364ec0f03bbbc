"""A base agent lists database variables in its `env:`, as the docs allow, and the job holds
them with the database's password: in a URL's login, in its query (libpq's `?password=`),
or in a DSN with no scheme (a Go driver's); and URLs whose query holds a key (a signed URL's
`?sig=`, a function's `?code=`). The pull request's program prints them in its answer: none
of the passwords reaches it, nor the comment, results.json or the log."""

from __future__ import annotations

import json

import pytest

from fakes.github_api import FakeGitHub, FakePull
from support.actionrun import pull_request_event, run_action
from support.agentenv import PYTHON
from support.documents import labelled_suite
from support.gitrepo import GitRepo

pytestmark = pytest.mark.hostile

PASSWORDS = {
    "DATABASE_URL": "Qry-Db-Passw0rd-77",
    "MYSQL_DSN": "Go-Dsn-Passw0rd-88",
    "LOGIN_URL": "Login-Passw0rd-99",
    "SIGNED_URL": "Signed-Url-Sig-66",
    "FUNCTION_URL": "Function-Key-55",
}
ANSWERS = (
    'import json, sys\nsys.stdin.read()\nprint(json.dumps({"type": "final", "content": "hello"}))\n'
)
PRINTS_THEM = (
    "import json, os, sys\nsys.stdin.read()\n"
    f"said = ' | '.join(os.environ.get(n, '-') for n in {list(PASSWORDS)!r})\n"
    'print(json.dumps({"type": "final", "content": "go away " + said}))\n'
)
AGENT = f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: pr-agent }}
spec:
  runtime:
    command: {{ run: [{PYTHON}, bot/main.py], env: [{", ".join(PASSWORDS)}] }}
  watch: [bot/**]
"""


def test_a_database_password_in_a_query_or_a_dsn_reaches_neither_the_program_nor_a_report(
    repo: GitRepo, github: FakeGitHub, env: dict[str, str]
) -> None:
    env = {
        **env,
        "DATABASE_URL": f"postgresql://db.example/app?user=app&password={PASSWORDS['DATABASE_URL']}",
        "MYSQL_DSN": f"app:{PASSWORDS['MYSQL_DSN']}@tcp(db.example:3306)/app",
        "LOGIN_URL": f"postgres://app:{PASSWORDS['LOGIN_URL']}@db.example/app",
        "SIGNED_URL": f"https://store.example/b/c?sv=2024-05-04&sig={PASSWORDS['SIGNED_URL']}",
        "FUNCTION_URL": f"https://fn.example/api/hook?code={PASSWORDS['FUNCTION_URL']}",
    }
    suite = labelled_suite("pr-agent", "greets", "hi", "{ type: equals, value: hello }")
    base = repo.commit(
        "agent", {"agents/a.yaml": AGENT, "evals/a.yaml": suite, "bot/main.py": ANSWERS}
    )
    repo.branch("feature")
    head = repo.commit("print the environment", {"bot/main.py": PRINTS_THEM})
    github.add_pull(FakePull(number=7, head_sha=head, base_sha=base))

    run = run_action(
        repo.path, github, pull_request_event(github.repository, 7, base, head), env=env
    )

    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    results = json.dumps(run.results())
    (said,) = [f["output"] for f in run.results()["fixtures"] if f["side"] == "head"]
    assert "go away postgresql://db.example/app?user=app&password= | tcp(db.example:3306)/app" in (
        said
    ), said
    assert "https://store.example/b/c?sv=2024-05-04&sig= | https://fn.example/api/hook?code=" in (
        said
    ), said
    comments = "\n".join(c["body"] for c in github.comments_on(7))
    for name, password in PASSWORDS.items():
        where = [results, comments, run.stdout + run.stderr]
        assert not any(password in text for text in where), name
