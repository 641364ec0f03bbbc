"""The collector is off from the process's start until its command has built what lives as
long as the run (the suite it loaded), which freezes what start-up built and turns it back
on: the entry point owns the pause (`host.Host`), the command says when start-up ends."""

from __future__ import annotations

import contextlib
import gc
import io
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalward.__main__ import main
from evalward.definitions.loader import load_resources
from evalward.errors import ConfigError
from evalward.host import YOUNG_COLLECTION_EVERY, Host
from support.gitrepo import GitRepo

pytestmark = pytest.mark.unit

AGENT = """\
apiVersion: evalward.dev/v1
kind: Agent
metadata: { name: bot }
spec: { models: [openai/gpt-test], system: hi }
"""


@pytest.fixture
def collector() -> Iterator[None]:
    assert gc.isenabled() and gc.get_freeze_count() == 0
    threshold, callbacks = gc.get_threshold(), list(gc.callbacks)
    yield
    # a paused host, started, freezes what survives each full collection from then on: in
    # this long-lived process that would freeze every later test's garbage
    gc.callbacks[:] = callbacks
    gc.set_threshold(*threshold)
    gc.unfreeze()
    gc.enable()


def paused(tmp_path: Path) -> Host:
    host = Host.of_process({"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    host.pause_collector()
    assert not gc.isenabled()
    return host


def test_a_command_that_loads_a_suite_ends_the_pause_once_it_is_loaded(
    collector: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "agent.yaml").write_text(AGENT)
    host = paused(tmp_path)
    young = gc.get_threshold()[0]
    assert main(["plan", str(tmp_path)], host) == 0
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0  # what start-up built is out of the collector's sight
    # the run's young objects are collected less often than the interpreter's default
    assert gc.get_threshold()[0] == YOUNG_COLLECTION_EVERY > young


def test_a_command_that_loads_nothing_ends_the_pause_too(
    collector: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    host = paused(tmp_path)
    assert main(["schema"], host) == 0
    assert gc.isenabled() and gc.get_freeze_count() > 0


def test_the_base_loaded_after_start_up_leaves_what_start_up_froze_frozen(
    collector: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`plan --base`: the head's load ends start-up, which freezes what it built; the base's
    load comes after, and leaves that frozen (handed back, the collector's next full pass
    would walk all of it again, and every load of attribution's variants would hand it back
    again)."""
    repo = GitRepo(tmp_path / "repo")
    repo.commit("agent", {"agent.yaml": AGENT})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("kinder", {"agent.yaml": AGENT.replace("system: hi", "system: hello")})
    built_before = [object()]  # a list: the collector tracks it, until it is frozen
    host = paused(tmp_path)
    assert main(["plan", str(repo.path), "--base", "main"], host) == 0
    assert "bot" in capsys.readouterr().out
    assert gc.get_freeze_count() > 0
    assert not any(o is built_before for o in gc.get_objects())


def test_a_load_that_fails_after_start_up_freezes_nothing_of_its_own(
    collector: None, tmp_path: Path
) -> None:
    """A load that raises (a variant's `evalward.yaml` that does not parse) leaves what it
    built to the collector, its traceback's cycle with it, and what was frozen as it was."""
    (tmp_path / "agent.yaml").write_text(AGENT)
    (tmp_path / "evalward.yaml").write_text("roots: [unclosed\n")
    built_before = [object()]  # a list: the collector tracks it, until it is frozen
    gc.freeze()  # what start-up froze
    frozen = gc.get_freeze_count()
    with pytest.raises(ConfigError):
        load_resources(tmp_path)
    assert gc.isenabled()
    # nothing frozen was handed back, and nothing the load made was frozen (a frozen object
    # that reference counting frees leaves the count: this process's other tests free some)
    assert not any(o is built_before for o in gc.get_objects())
    assert gc.get_freeze_count() <= frozen


def test_a_load_freezes_nothing_and_leaves_the_collector_as_it_found_it(
    collector: None, tmp_path: Path
) -> None:
    (tmp_path / "agent.yaml").write_text(AGENT)
    load_resources(tmp_path)
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.disable()
    load_resources(tmp_path)
    assert not gc.isenabled() and gc.get_freeze_count() == 0


def test_the_top_level_handler_redacts_the_keys_the_providers_read(tmp_path: Path) -> None:
    """A key under a name that does not look secret, which only the providers' settings name,
    is still kept out of the error that ends the run."""
    key = "the-credential-0123456789"
    (tmp_path / "evalward.yaml").write_text("providers: { openai: { apiKeyEnv: MY_VALUE } }\n")
    (tmp_path / "agent.yaml").write_text(AGENT)
    host = Host.of_process({"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "MY_VALUE": key})
    errors = io.StringIO()
    with contextlib.redirect_stderr(errors):
        code = main(["run", str(tmp_path), "--base", key], host)
    assert code == 2
    assert key not in errors.getvalue() and "***" in errors.getvalue()


BUILT_AT_IMPORT = """\
import evalward.report.files, evalward.flows.shard, evalward.cli.run
from evalward.rundata.results import EvalResult, FixtureResult
from evalward.rundata.pairwise_record import PairwiseRecord
from evalward.rundata.trace import Trace
from evalward.record.summary import RunSummary
from evalward.scoring.judges.judge import RawVerdict
built = [m.__name__ for m in (EvalResult, FixtureResult, PairwiseRecord, Trace, RunSummary,
         RawVerdict) if m.__pydantic_complete__]
print(",".join(built) or "none")
"""


def test_a_runs_records_build_their_validators_when_first_used_not_at_import() -> None:
    """What `evalward run` imports before its first model call builds no record's validator:
    each is built when a result is first made (and the model call is not kept waiting)."""
    done = subprocess.run(
        [sys.executable, "-c", BUILT_AT_IMPORT], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "none"


def test_what_a_run_imports_leaves_pyyaml_to_the_files_that_need_it() -> None:
    """A run's definitions are read by yaml-rs; PyYAML loads only for a YAML seed, snapshot or
    state file, a mock script or a form yaml-rs reads otherwise (about 10 ms of start-up)."""
    program = (
        "import sys, evalward.report.files, evalward.flows.session, evalward.cli.run, "
        "evalward.plan.preflight.static_checks; print('yaml' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_what_a_run_imports_before_its_first_model_call_leaves_the_reports_out() -> None:
    """The comment's renderer (and jinja2 with it) loads once the run is over: what
    `evalward run` imports before it (`cli/run.py`'s `main`, the engine, a declarative agent's
    runtime) and the action's trusted inputs do not include them, nor does a tool's mock
    output until one templates."""
    program = (
        "import sys, evalward.cli.run, evalward.cli._local, evalward.cli._progress, "
        "evalward.flows.session, evalward.flows.shard, evalward.plan.run_setup, "
        "evalward.providers.registry, evalward.providers.openai, evalward.plan.result_cache, "
        "evalward.runtime.agents.kinds.declarative, evalward.runtime.tools.tools, "
        "evalward.report.files, evalward.action.trusted.trust; "
        "print(sorted(m for m in ('jinja2', 'evalward.report.markdown', 'evalward.cli._emit') "
        "if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FEATURES = ("evalward.importers.agentv", "evalward.runtime.playground.run")

RUN_AND_SAY_WHAT_LOADED = f"""\
import runpy, sys
sys.argv = ["evalward", *sys.argv[1:]]
try:
    runpy.run_module("evalward", run_name="__main__")
except SystemExit as stop:
    code = stop.code
print("loaded:", sorted(m for m in {FEATURES!r} if m in sys.modules), "exit:", code)
"""


def run_and_say_what_loaded(*args: str, cwd: Path | None = None) -> list[str]:
    """`evalward ARGS` in a process of its own: what it printed, its last line saying which
    of FEATURES' modules it loaded and how the command ended."""
    done = subprocess.run(
        [sys.executable, "-c", RUN_AND_SAY_WHAT_LOADED, *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


SUITES = {
    "evalward's own": EXAMPLES.parent / "tests" / "data" / "support-bot-suite",
    "agentv": EXAMPLES / "agentv",
}
"""A repository of evalward's own resources (a self-contained one: the examples' programs
are named from this repository's root), and one with an AgentV suite."""


@pytest.mark.parametrize(
    ("suite", "loaded"), [("evalward's own", []), ("agentv", ["evalward.importers.agentv"])]
)
def test_the_agentv_importer_loads_only_for_a_repository_with_agentv_files(
    suite: str, loaded: list[str], tmp_path: Path
) -> None:
    """AgentV's importer (five modules and the csv reader) is loaded by the first document
    evalward's own kinds do not claim: a repository of evalward's own resources never loads
    it, one with an AgentV suite loads it and its tests become fixtures. Each is copied out
    to be a repository of its own: inside this one, `validate` reads this one whole."""
    shutil.copytree(SUITES[suite], tmp_path / "suite")
    printed = run_and_say_what_loaded("validate", str(tmp_path / "suite"))
    assert printed[-1] == f"loaded: {loaded} exit: 0"
    assert any("fixtures" in line and line.endswith("OK") for line in printed)


def test_a_run_without_playgrounds_or_agentv_files_loads_neither(tmp_path: Path) -> None:
    """A feature's modules load with the first run or file that uses it: a whole run of an
    example with neither a playground nor an AgentV file (the mock provider answering)
    passes without loading the playground's provisioning or the AgentV importer."""
    example = tmp_path / "math-tutor"  # a copy: the run writes its result cache beside it
    shutil.copytree(EXAMPLES / "math-tutor", example)
    printed = run_and_say_what_loaded(
        "run",
        str(example),
        "--mock-script",
        str(EXAMPLES / "mock-replies.yaml"),
        "--no-history",
        "--no-cache",
        "--output-dir",
        str(tmp_path / "out"),
        cwd=tmp_path,
    )
    assert printed[-1] == "loaded: [] exit: 0"
    assert (tmp_path / "out" / "results.json").is_file()
