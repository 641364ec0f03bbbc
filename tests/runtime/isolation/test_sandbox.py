"""The action's sandbox for programs from a checkout, piece by piece: the environment built from
scratch, the private home, the refusal without root, the working copy, and what `protect` closes.
The whole attack, through the action, is tests/runtime/isolation/test_agent_sandbox.py."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from evalward.action.settings import Settings
from evalward.action.trusted.trust import NOT_ROOT, agent_sandbox
from evalward.errors import ConfigError
from evalward.flows.pipeline import evaluate_change
from evalward.git import Git
from evalward.plan.run_setup import Revisions, RunOptions, RunSetup
from evalward.providers.registry import Providers, build_providers
from evalward.resources.agents.agent import AgentSpec
from evalward.runtime.agents.process import limited_env, logins_withheld
from evalward.runtime.agents.resolved_agent import ResolvedAgent
from evalward.runtime.agents.runner import AgentRunner
from evalward.runtime.isolation.agent_users import AGENT_USER, AgentUser
from evalward.runtime.isolation.sandbox import Sandbox
from evalward.runtime.isolation.workspace_guard import protect
from evalward.security import Redactor
from runtime.agents.test_byo_agents import fixture_run
from support.agentuser import AGENT_UID, agent_user
from support.gitrepo import GitRepo

pytestmark = pytest.mark.integration

needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="switching to the agent user needs root (CI runs as root)"
)

EVALWARDS_ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/evalward",
    "LANG": "C.UTF-8",
    "OPENAI_API_KEY": "sk-real-provider-key",
    "ANTHROPIC_API_KEY": "sk-ant-real-provider-key",
    "INPUT_GITHUB_TOKEN": "ghs_real_token_0001",
    "GITHUB_OUTPUT": "/github/file_commands/set_output_1",
    "ACTIONS_RUNTIME_URL": "https://runtime.example/",
    "RUNNER_TEMP": "/home/runner/work/_temp",
    "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE000",
    "DATABASE_URL": "postgres://app:sk-real-provider-key@db.example/app",
    "MODEL_NAME": "gpt-test",
    "DATA_DIR": "/home/runner/work/_temp/data",
}
LISTED = [name for name in EVALWARDS_ENV if name not in ("PATH", "HOME", "LANG")]


def test_the_command_line_passes_what_an_agent_lists() -> None:
    env = limited_env(EVALWARDS_ENV, LISTED, {"EVALWARD_PROTOCOL": "1"})
    assert env == {**EVALWARDS_ENV, "EVALWARD_PROTOCOL": "1"}


def test_in_the_action_no_credential_or_runner_plumbing_gets_through_but_injected_values_do() -> (
    None
):
    proxy = {"OPENAI_API_KEY": "proxy-key-for-this-run", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    env = limited_env(EVALWARDS_ENV, LISTED, proxy, sandbox=Sandbox(None))
    # HOME and TMPDIR are the sandbox's, set when the process starts
    assert env == {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "MODEL_NAME": "gpt-test",
        "DATA_DIR": "/home/runner/work/_temp/data",  # RUNNER_TEMP's value is no credential
        **proxy,
    }


def test_in_the_action_a_url_is_passed_without_its_login() -> None:
    """A proxy's or an index's URL the workflow gives with a login reaches an agent or an
    installer without it: the password is a credential, whatever the variable's name."""
    workflow = {
        "PATH": "/usr/bin:/bin",
        "HTTPS_PROXY": "http://ci-bot:Pr0xyPassw0rd-4242@proxy.corp:3128",
        "UV_EXTRA_INDEX_URL": "https://__token__:IndexTok3n-777777@pypi.corp/simple",
        "npm_config_registry": "https://npmTok3nAsUser@npm.corp/",
        "NO_PROXY": "localhost,127.0.0.1",
    }
    listed = [name for name in workflow if name != "PATH"]

    env = limited_env(workflow, listed, sandbox=Sandbox(None))

    assert env == {
        "PATH": "/usr/bin:/bin",
        "HTTPS_PROXY": "http://proxy.corp:3128",
        "UV_EXTRA_INDEX_URL": "https://pypi.corp/simple",
        "npm_config_registry": "https://npm.corp/",
        "NO_PROXY": "localhost,127.0.0.1",
    }
    assert logins_withheld(workflow, listed, sandbox=Sandbox(None)) == (
        "HTTPS_PROXY",
        "UV_EXTRA_INDEX_URL",
        "npm_config_registry",
    )
    assert limited_env(workflow, listed) == workflow, "the command line's user's own"
    assert logins_withheld(workflow, listed, sandbox=None) == ()


PASSWORD = "Pr0xyPassw0rd-4242"


@pytest.mark.parametrize(
    ("name", "value", "given"),
    [
        ("HTTPS_PROXY", f"ci-bot:{PASSWORD}@proxy.corp:3128", "proxy.corp:3128"),
        ("https_proxy", f"http://ci-bot:{PASSWORD}#x@proxy.corp:3128", "http://proxy.corp:3128"),
        ("ALL_PROXY", f"socks5h://ci-bot:{PASSWORD}/x@[::1]:1080", "socks5h://[::1]:1080"),
        (
            "UV_INDEX",
            f"https://a:{PASSWORD}?@pypi.corp/simple https://pypi.org/simple",
            "https://pypi.corp/simple https://pypi.org/simple",
        ),
    ],
    ids=["no scheme", "a raw #", "a raw / behind SOCKS", "a raw ? among two indexes"],
)
def test_a_proxy_s_or_an_index_s_login_is_read_as_their_tools_read_it(
    name: str, value: str, given: str
) -> None:
    """curl, pip and uv take a proxy with no scheme as `http://`, and a login up to the
    address's last `@`: that login reaches no sandboxed program and is a secret."""
    workflow = {"PATH": "/bin", name: value}

    env = limited_env(workflow, [name], sandbox=Sandbox(None))

    assert env[name] == given
    assert logins_withheld(workflow, [name], sandbox=Sandbox(None)) == (name,)
    assert PASSWORD not in Redactor.from_env(workflow)(f"the install printed {value}")


def test_without_root_the_user_switch_is_unavailable_unless_turned_off() -> None:
    default = Settings()
    assert agent_sandbox(default, euid=1001).unavailable == NOT_ROOT
    assert "agent-isolation: off" in NOT_ROOT
    as_root = agent_sandbox(default, euid=0)  # `auto`: a pair of its own, held until close
    try:
        assert as_root.user is not None and as_root.user.uid >= AgentUser.named(AGENT_USER).uid
        assert as_root.user.uid % 2 == AgentUser.named(AGENT_USER).uid % 2  # pairs start at 10001
        assert as_root.user.uid != AGENT_UID  # this worker holds that one
    finally:
        as_root.close()
    off = agent_sandbox(Settings.model_validate({"agent-isolation": "off"}), euid=1001)
    assert off.user is None and not off.unavailable


def test_agent_user_names_another_user_and_never_one_the_sandbox_must_keep_apart(
    tmp_path: Path,
) -> None:
    def chosen(value: str, workspace: Path | None = None) -> AgentUser | None:
        settings = Settings.model_validate({"agent-user": value})
        return agent_sandbox(settings, euid=0, workspace=workspace).user

    assert chosen("20001") == AgentUser(20001, 20001, "uid-20001")
    os.chown(tmp_path, 4242, 4242)
    for taken in ("root", "4242", "4241"):
        with pytest.raises(ConfigError, match="agent-user"):
            chosen(taken, tmp_path)
    with pytest.raises(ConfigError, match="there is no user 'nobody-here'"):
        chosen("nobody-here")
    for malformed in ("a b; rm -rf", "0", "999"):
        with pytest.raises(ConfigError, match="agent-user"):
            Settings.from_env({"INPUT_AGENT_USER": malformed})


def test_the_working_copies_leave_out_evalwards_directories_wherever_they_are() -> None:
    settings = Settings.model_validate(
        {"output-dir": "/github/workspace/reports/evalward", "cache-dir": "./cache//runs"}
    )
    sandbox = agent_sandbox(settings, euid=0, workspace=Path("/github/workspace"))
    assert sandbox.not_copied == {".git", ".evalward", "reports/evalward", "cache/runs"}
    outside = Settings.model_validate({"output-dir": "/tmp/out", "cache-dir": "../cache"})
    assert agent_sandbox(outside, euid=0, workspace=Path("/w")).not_copied == {".git", ".evalward"}


PROBE = """\
import json, os, sys
sys.stdin.readline()
try:
    open("written-here.txt", "w").write("x")
    wrote = True
except OSError:
    wrote = False
report = {"cwd": os.getcwd(), "env": dict(os.environ), "uid": os.getuid(), "wrote": wrote,
          "home": sorted(os.listdir(os.environ["HOME"])), "files": sorted(os.listdir("."))}
open(os.path.join(os.environ["HOME"], "cache.txt"), "w").write("mine")
print(json.dumps({"type": "final", "content": json.dumps(report)}))
"""


def probe(root: Path, sandbox: Sandbox, python: str = sys.executable) -> dict[str, Any]:
    (root / "probe.py").write_text(PROBE)
    spec = AgentSpec.model_validate(
        {"runtime": {"command": {"run": [python, "probe.py"], "env": ["OPENAI_API_KEY"]}}}
    )
    runner = AgentRunner(
        ResolvedAgent("probe", spec, "", root),
        Providers(by_name={}),
        EVALWARDS_ENV,
        kill_grace=0.2,
        sandbox=sandbox,
    )

    async def go() -> Any:
        try:
            return await runner.run(fixture_run("hi"))
        finally:
            await runner.aclose()

    trace = asyncio.run(go())
    assert trace.final_output, trace.steps
    return dict(json.loads(trace.final_output))


def test_without_a_user_switch_programs_run_in_place_with_a_private_home(tmp_path: Path) -> None:
    sandbox = Sandbox(None)
    try:
        seen = probe(tmp_path, sandbox)
    finally:
        sandbox.close()
    assert seen["cwd"] == str(tmp_path) and seen["wrote"]
    home = seen["env"]["HOME"]
    assert home == seen["env"]["TMPDIR"] and seen["home"] == []
    assert not Path(home).exists(), "the home is removed when the process is gone"
    assert "OPENAI_API_KEY" not in seen["env"] and "USER" not in seen["env"]


def test_an_unavailable_sandbox_refuses_programs_before_anything_runs(
    repo: GitRepo, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    repo.commit(
        "a command agent",
        {
            "agent.yaml": "apiVersion: evalward.dev/v1\nkind: Agent\nmetadata: { name: bot }\n"
            "spec:\n  runtime: { command: { run: [" + json.dumps(sys.executable) + ", run.py] } }\n"
            "---\napiVersion: evalward.dev/v1\nkind: Eval\nmetadata: { name: bot-eval }\n"
            "spec: { targetAgent: bot, fixtureSelector: { matchLabels: { agent: bot } } }\n"
            "---\napiVersion: evalward.dev/v1\nkind: EvalFixture\n"
            "metadata: { name: one, labels: { agent: bot } }\n"
            "spec: { targetAgent: bot, input: { type: prompt, payload: { prompt: hi } },\n"
            "  assertions: [{ type: contains, value: hi }] }\n",
            "run.py": f"open({str(marker)!r}, 'w').write('ran')\n",
        },
    )
    unavailable = Sandbox(None, unavailable=NOT_ROOT)

    async def evaluate() -> Any:
        providers = build_providers({})
        try:
            return await evaluate_change(
                RunSetup(
                    Git(repo.path),
                    Revisions(base=None),
                    providers,
                    {},
                    RunOptions(sandbox=unavailable),
                )
            )
        finally:
            await providers.aclose()

    with pytest.raises(ConfigError) as refused:
        asyncio.run(evaluate())
    assert str(refused.value).startswith(
        "agent 'bot' (head) runs runtime.command from the checkout"
    )
    assert "not running as root" in str(refused.value)
    assert not marker.exists()


@needs_root
@pytest.mark.usefixtures("head_strays_made")
def test_the_agent_user_works_in_a_read_only_copy_without_history_or_evalwards_files(
    tmp_path: Path,
) -> None:
    python = "/usr/bin/python3"
    if not os.access(python, os.X_OK):
        pytest.skip(f"no {python} for the agent user to run")
    checkout = tmp_path / "checkout"
    (checkout / ".git").mkdir(parents=True)
    (checkout / ".git" / "config").write_text("[http]\n\textraheader = AUTHORIZATION: x\n")
    (checkout / ".evalward" / "out").mkdir(parents=True)
    (checkout / ".evalward" / "out" / "results.json").write_text("{}")
    (checkout / "lib").mkdir()
    (checkout / "lib" / "tool.sh").write_text("#!/bin/sh\necho tool\n")
    (checkout / "lib" / "tool.sh").chmod(0o700)
    (checkout / "secret-mode.txt").write_text("only root could read this in place")
    (checkout / "secret-mode.txt").chmod(0o600)
    (checkout / "link").symlink_to("lib/tool.sh")
    os.mkfifo(checkout / "pipe")
    (checkout / "lib" / "reports").mkdir()
    sandbox = Sandbox(agent_user(), not_copied={".git", ".evalward", "lib/reports"})
    try:
        seen = probe(checkout, sandbox, python)
        root = sandbox.root
        copy = Path(seen["cwd"])
        assert copy != checkout and copy.is_relative_to(root)
        assert (copy / "link").is_symlink() and os.readlink(copy / "link") == "lib/tool.sh"
        assert sorted(p.name for p in (copy / "lib").iterdir()) == ["tool.sh"]
        mode = (copy / "lib" / "tool.sh").stat().st_mode
        assert stat.S_IMODE(mode) == 0o755 and (copy / "lib" / "tool.sh").stat().st_uid == 0
        assert stat.S_IMODE((copy / "secret-mode.txt").stat().st_mode) == 0o644
    finally:
        sandbox.close()
    assert seen["uid"] == AGENT_UID and not seen["wrote"]
    assert seen["files"] == ["lib", "link", "probe.py", "secret-mode.txt"]
    assert seen["env"]["USER"] == seen["env"]["LOGNAME"] == agent_user().name
    assert not root.exists(), "closing the sandbox removes every copy and home"


@needs_root
def test_protect_closes_evalwards_directories_and_the_runners_files(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    workspace.chmod(0o777)
    (workspace / ".evalward").mkdir(mode=0o777)
    (workspace / ".evalward").chmod(0o777)
    output = tmp_path / "github_output"
    output.write_text("")
    output.chmod(0o666)

    taken = protect(workspace, [workspace / ".evalward" / "out"], {"GITHUB_OUTPUT": str(output)})

    for folder in (workspace, workspace / ".evalward", workspace / ".evalward" / "out"):
        assert stat.S_IMODE(folder.stat().st_mode) & 0o002 == 0, folder
    assert stat.S_IMODE(output.stat().st_mode) == 0o660
    assert taken == {workspace: 0o777, workspace / ".evalward": 0o777, output: 0o666}

    (workspace / "elsewhere").mkdir()
    (workspace / "reports").symlink_to(workspace / "elsewhere")
    with pytest.raises(ConfigError, match=r"reports is a symbolic link in the checkout"):
        protect(workspace, [workspace / "reports" / "out"], {})


@pytest.mark.parametrize("where", ["a file", "below a file", "/proc"])
def test_a_folder_outside_the_checkout_that_cannot_be_made_is_the_setting_s_mistake(
    tmp_path: Path, where: str
) -> None:
    """`cache-dir: /dev/null` (or a file, a folder below one, one in /proc) was a bug's
    exit 4 with a traceback, where `output-dir` with the same value was refused by name."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (tmp_path / "a_file").write_text("")
    folder = {
        "a file": tmp_path / "a_file",
        "below a file": tmp_path / "a_file" / "sub",
        "/proc": Path("/proc/evalward-never"),
    }[where]
    with pytest.raises(ConfigError) as refused:
        protect(workspace, [folder], {})
    assert str(refused.value).startswith(f"{folder}: evalward cannot make its folder there (")
    assert "point `output-dir`/`cache-dir` at a folder it may make" in str(refused.value)


ENV_AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: bot }}
spec:
  runtime: {{ command: {{ run: [{python}, agent/bot.py], env: {names} }} }}
---
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: bot-eval }}
spec:
  targetAgent: bot
  fixtures: [sees]
---
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: sees }}
spec:
  targetAgent: bot
  input: {{ type: prompt, payload: {{ prompt: go }} }}
  assertions: [ {{ type: contains, value: FEATURE_FLAG }} ]
"""

SEES = """\
import json, os, sys
sys.stdin.readline()
seen = sorted(n for n in ("FEATURE_FLAG", "DATABASE_URL", "CI_ALLOWED") if n in os.environ)
print(json.dumps({"type": "final", "content": ",".join(seen)}), flush=True)
"""


def test_a_pull_request_cannot_widen_its_agents_env_list_in_the_action(repo: GitRepo) -> None:
    """The head's `env:` is the pull request's own: it passes only names the base branch's
    definition lists or the workflow allows (`agent-env`), not the job's other secrets."""
    python = json.dumps(sys.executable)
    base = repo.commit(
        "an agent with a setting",
        {
            "agents.yaml": ENV_AGENT.format(python=python, names="[FEATURE_FLAG]"),
            "agent/bot.py": SEES,
        },
    )
    repo.branch("feature")
    wider = "[FEATURE_FLAG, DATABASE_URL, CI_ALLOWED]"
    repo.commit("and the database", {"agents.yaml": ENV_AGENT.format(python=python, names=wider)})
    env = {
        "PATH": os.environ["PATH"],
        "FEATURE_FLAG": "on",
        "DATABASE_URL": "postgres://app:hunter2-secret@db.internal/app",
        "CI_ALLOWED": "yes",
    }

    async def evaluate(sandbox: Sandbox | None) -> dict[str, str]:
        providers = build_providers({})
        try:
            evaluation = await evaluate_change(
                RunSetup(
                    Git(repo.path),
                    Revisions(base=base),
                    providers,
                    env,
                    RunOptions(sandbox=sandbox),
                )
            )
        finally:
            await providers.aclose()
        return {f.side: f.output for f in evaluation.fixtures}

    action = Sandbox(None, agent_env=["CI_ALLOWED"])
    try:
        assert asyncio.run(evaluate(action)) == {
            "head": "CI_ALLOWED,FEATURE_FLAG",
            "base": "FEATURE_FLAG",
        }
    finally:
        action.close()  # as the action's job does: its folder of working copies goes
    # On the command line (no sandbox) a developer's own list is taken as it is.
    assert asyncio.run(evaluate(None))["head"] == "CI_ALLOWED,DATABASE_URL,FEATURE_FLAG"


def test_a_database_password_outside_a_url_s_login_is_left_out_too() -> None:
    """A password in a URL's query (libpq's `?password=`), in a keyword string (libpq's,
    ADO.NET's) or in a DSN with no scheme (a Go driver's) is a login as much as a URL's
    `user:password@`: the variable reaches the agent without it, and the rest as written.
    An e-mail address and git's `git@host:path` are no login."""
    workflow = {
        "PATH": "/usr/bin:/bin",
        "DATABASE_URL": "postgresql://db.corp/app?user=app&password=Qry-Passw0rd-77&ssl=1",
        "PG_CONNECTION": "host=db.corp password='Kw Passw0rd 5' dbname=app",
        "SQLSERVER": "Server=db.corp;User Id=sa;Password=Sa-Passw0rd-6;",
        "MYSQL_DSN": "app:Go-Dsn-Passw0rd-88@tcp(db.corp:3306)/app",
        "CONTACT": "support@acme.test",
        "UPSTREAM": "git@github.com:acme/agents.git",
    }
    listed = [name for name in workflow if name != "PATH"]

    env = limited_env(workflow, listed, sandbox=Sandbox(None))

    assert env == {
        "PATH": "/usr/bin:/bin",
        "DATABASE_URL": "postgresql://db.corp/app?user=app&password=&ssl=1",
        "PG_CONNECTION": "host=db.corp password= dbname=app",
        "SQLSERVER": "Server=db.corp;User Id=sa;Password=;",
        "MYSQL_DSN": "tcp(db.corp:3306)/app",
        "CONTACT": "support@acme.test",
        "UPSTREAM": "git@github.com:acme/agents.git",
    }
