"""The image and the workflows, checked by the validators GitHub users rely on."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.markers import Marker

from support.actionrun import image_entrypoint

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def tool(name: str) -> str:
    """A validator installed with the dev extras, next to this interpreter."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    assert found, f"{name} is not installed; run `make test` (it installs the dev extras)"
    return found


def check(*command: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_dockerfile_is_hadolint_clean() -> None:
    check(tool("hadolint"), "Dockerfile")


def test_dockerfile_follows_githubs_rules_for_docker_actions() -> None:
    instructions = [
        line.split()[0].upper()
        for line in (ROOT / "Dockerfile").read_text().splitlines()
        if line.strip() and not line.startswith((" ", "#"))
    ]
    assert "USER" not in instructions and "WORKDIR" not in instructions
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.12\.\d+-slim-bookworm AS evalward$", text, re.MULTILINE)
    # the default image (the last stage) is the Python-only one; Node.js is a target of its own
    froms = re.findall(r"^FROM (.+)$", text, re.MULTILINE)
    assert froms[-1] == "evalward" and "evalward AS evalward-node" in froms
    assert re.search(r"^#   sha256:[0-9a-f]{64}$", text, re.MULTILINE)
    assert "PYTHONDONTWRITEBYTECODE=1" in text and "PYTHONUNBUFFERED=1" in text
    # the working directory (the PR's checkout) is not on sys.path:
    # tests/action/test_entrypoint.py runs this exact command with a checkout that brings its
    # own evalward/__main__.py and yaml.py
    assert image_entrypoint()[1:] == ["-I", "-u", "-m", "evalward"]
    # dependencies are installed before the source is copied, so they stay cached
    assert text.index("requirements.lock") < text.index("COPY src")
    assert "pip install --require-hashes --no-deps -r /opt/evalward/requirements.lock" in text
    assert "pip install --no-deps --no-build-isolation /opt/evalward" in text
    # the agents' user, with its own group, far from the runner's uid 1001
    assert "evalward-agent:x:10001:10001::/nonexistent:/usr/sbin/nologin" in text


def test_the_image_keeps_dpkgs_database_whole() -> None:
    """Perl stays out of the image without forcing dpkg: an image built FROM evalward's must
    be able to `apt-get install` (the real build, measured with podman: docs/benchmarks.md)."""
    text = (ROOT / "Dockerfile").read_text()
    assert "--force-" not in text and "dpkg --purge" not in text
    assert "git-without-perl.sh /tmp/git_*.deb /tmp/git-noperl.deb" in text
    assert "apt-get install -y --no-install-recommends /tmp/git-noperl.deb" in text
    assert "&& apt-get check" in text
    assert "!scripts/git-without-perl.sh" in (ROOT / ".dockerignore").read_text()


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="needs dpkg-deb (Debian)")
def test_git_is_rebuilt_without_perl_and_says_so_in_its_version(tmp_path: Path) -> None:
    """The script the image runs, on a package with git's dependency list."""
    package = tmp_path / "git"
    (package / "DEBIAN").mkdir(parents=True)
    (package / "usr" / "bin").mkdir(parents=True)
    (package / "usr" / "bin" / "git").write_text("#!/bin/sh\n")
    (package / "DEBIAN" / "control").write_text(
        "Package: git\nVersion: 1:2.39.5-0+deb12u3\nArchitecture: amd64\n"
        "Maintainer: Debian <debian@example.org>\n"
        "Depends: libc6 (>= 2.34), zlib1g (>= 1:1.2.2), perl, liberror-perl, "
        "git-man (>> 1:2.39.5), git-man (<< 1:2.39.5-.)\n"
        "Recommends: ca-certificates, patch, less, ssh-client\nDescription: git\n"
    )
    built = tmp_path / "git.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "-b", package, built], check=True)
    out = tmp_path / "git-noperl.deb"
    subprocess.run(["sh", ROOT / "scripts" / "git-without-perl.sh", built, out], check=True)
    fields = subprocess.run(
        ["dpkg-deb", "-f", out, "Version", "Depends"], capture_output=True, text=True, check=True
    ).stdout
    assert "Version: 1:2.39.5-0+deb12u3+noperl" in fields
    assert "Depends: libc6 (>= 2.34), zlib1g (>= 1:1.2.2), git-man (>> 1:2.39.5)" in fields
    assert "perl" not in fields.split("Depends:")[1]
    listing = subprocess.run(["dpkg-deb", "-c", out], capture_output=True, text=True).stdout
    assert "./usr/bin/git" in listing, "every file of the package is kept"

    # A package whose Perl dependency the script does not recognise is refused, not shipped.
    control = package / "DEBIAN" / "control"
    control.write_text(control.read_text().replace("perl, liberror-perl", "perl:any"))
    subprocess.run(["dpkg-deb", "--root-owner-group", "-b", package, built], check=True)
    refused = subprocess.run(
        ["sh", ROOT / "scripts" / "git-without-perl.sh", built, tmp_path / "x.deb"],
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 1 and "still depends on Perl" in refused.stderr


def _pins(lock_file: str) -> dict[str, tuple[str, str]]:
    """Each package the lock names: its version and environment marker (every entry pinned
    and hashed)."""
    lock = (ROOT / lock_file).read_text()
    entries = re.split(r"\n(?=[A-Za-z])", lock.split("\n", 2)[2])
    pins = {}
    for entry in entries:
        requirement = entry.split(" \\\n", 1)[0]
        pinned, _, marker = requirement.partition(" ; ")
        name, _, version = pinned.partition("==")
        assert version, f"not pinned: {entry[:60]!r}"
        assert re.search(r"--hash=sha256:[0-9a-f]{64}", entry), f"{name} has no hash"
        pins[name.lower()] = (version, marker.strip())
    return pins


def test_the_lock_pins_every_package_and_the_build_backend_with_hashes() -> None:
    pins = {name: version for name, (version, _) in _pins("requirements.lock").items()}
    pyproject = (ROOT / "pyproject.toml").read_text()
    backend = re.search(r'^requires = \["hatchling==([0-9.]+)"\]$', pyproject, re.MULTILINE)
    assert backend, "pyproject.toml pins hatchling exactly"
    assert pins["hatchling"] == backend[1]
    for dependency in ("pydantic", "aiohttp", "pygithub", "pyyaml", "regex", "jinja2"):
        assert dependency in pins


def test_make_installs_exactly_the_dev_lock_which_keeps_the_image_s_pins() -> None:
    """`make test` and `make demo` install requirements-dev.lock with hashes, then evalward
    without dependencies; the lock pins what the image's does at the image's versions, and
    the interpreter running these tests has exactly the locked versions installed."""
    image = _pins("requirements.lock")
    dev = _pins("requirements-dev.lock")
    for name, (version, _) in image.items():
        assert dev[name][0] == version, f"{name}: {dev[name][0]} for tests, {version} in the image"
    for tool in ("pytest", "mypy", "ruff", "hypothesis", "openai", "anthropic"):
        assert tool in dev
    makefile = (ROOT / "Makefile").read_text()
    # pip installs the lock's own uv, hashes checked; uv the rest, hashes checked
    assert "pip install --quiet --require-hashes --no-deps -r $(VENV)/uv.txt" in makefile
    assert (
        "uv pip install --quiet --python $(BIN)/python --require-hashes --no-deps "
        "--compile-bytecode \\\n" in makefile
    )
    assert "  -r requirements-dev.lock" in makefile
    assert (
        "uv pip install --quiet --python $(BIN)/python --no-deps --no-build-isolation -e ."
        in makefile
    )
    if sys.prefix == str(ROOT / ".venv"):  # the virtualenv `make` made from the lock
        for name, (version, marker) in dev.items():
            if marker and not Marker(marker).evaluate():
                continue
            assert metadata.version(name) == version, name


def test_action_metadata_is_valid() -> None:
    check(tool("check-jsonschema"), "--builtin-schema", "vendor.github-actions", "action.yml")
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "docker"
    assert action["runs"]["image"] == "Dockerfile"
    mapped = action["runs"]["env"]
    for name in action["inputs"]:
        assert mapped[f"INPUT_{name.upper().replace('-', '_')}"] == f"${{{{ inputs.{name} }}}}"


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_workflows_validate_against_githubs_schema(workflow: Path) -> None:
    check(tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(workflow))


def test_workflows_are_actionlint_and_zizmor_clean() -> None:
    check(tool("actionlint"), *map(str, WORKFLOWS))
    check(tool("zizmor"), "--offline", "--no-progress", str(ROOT / ".github" / "workflows"))


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_every_job_has_a_timeout_and_the_workflow_minimal_permissions(workflow: Path) -> None:
    document = yaml.safe_load(workflow.read_text())
    assert "permissions" in document
    assert "concurrency" in document
    for name, job in document["jobs"].items():
        assert "timeout-minutes" in job, f"job {name} has no timeout-minutes"


EXAMPLE_WORKFLOWS = sorted((ROOT / "examples" / "workflows").glob("*.yml"))


@pytest.mark.parametrize("workflow", EXAMPLE_WORKFLOWS, ids=lambda p: p.name)
def test_example_workflows_are_valid_and_use_only_real_inputs(workflow: Path) -> None:
    check(tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(workflow))
    check(tool("actionlint"), str(workflow))
    check(tool("zizmor"), "--offline", "--no-progress", str(workflow))
    inputs = set(yaml.safe_load((ROOT / "action.yml").read_text())["inputs"])
    document = yaml.safe_load(workflow.read_text())
    for name, job in document["jobs"].items():
        assert "timeout-minutes" in job, f"job {name} has no timeout-minutes"
        checkout = next(
            (s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout")), None
        )
        if checkout is not None:
            assert checkout["with"]["fetch-depth"] == 0, "evalward needs the merge base"
        for step in job["steps"]:
            if str(step.get("uses", "")).startswith("evalward/evalward@"):
                assert set(step.get("with", {})) <= inputs


INIT_WORKFLOW = ROOT / "src" / "evalward" / "cli" / "init_files" / "workflow.yml"


@pytest.mark.parametrize("workflow", [*EXAMPLE_WORKFLOWS, INIT_WORKFLOW], ids=lambda p: p.name)
def test_a_cache_is_restored_and_saved_on_push_alone_and_pull_requests_read_the_artifact(
    workflow: Path,
) -> None:
    """A pull request's own cache scope is one a workflow it adds can save into (and delete
    again before its last commit): a gate reads the base branch's results only from the
    artifact push runs upload (`base-cache`), never from a cache restored on its event."""
    document = yaml.safe_load(workflow.read_text())
    for job in document["jobs"].values():
        cached = [s for s in job["steps"] if s.get("uses", "").startswith("actions/cache")]
        if not cached:
            continue
        assert all("github.event_name == 'push'" in s.get("if", "") for s in cached), workflow
        assert "push" in document[True]  # PyYAML reads the key `on` as True
        assert document["permissions"]["actions"] == "read"
        gate = next(s for s in job["steps"] if s["uses"].startswith("evalward/evalward@"))
        name = gate["with"]["base-cache"]
        (upload,) = [s for s in job["steps"] if s.get("with", {}).get("name") == name]
        assert upload["if"] == "always() && github.event_name == 'push'"
        assert upload["with"]["include-hidden-files"] is True


@pytest.mark.parametrize("workflow", [*EXAMPLE_WORKFLOWS, INIT_WORKFLOW], ids=lambda p: p.name)
def test_every_job_that_comments_uploads_the_report_the_comment_links_to(workflow: Path) -> None:
    """The comment says "Full report: report.html in the workflow run's artifacts": every job
    whose evalward step comments (all but a shard) uploads `.evalward/out`, failing or not."""
    document = yaml.safe_load(workflow.read_text())
    for name, job in document["jobs"].items():
        steps = job["steps"]
        gates = [
            s
            for s in steps
            if str(s.get("uses", "")).startswith(("evalward/evalward@", "docker://"))
            and "shard" not in (s.get("with") or {})
        ]
        if not gates:
            continue
        uploads = [
            s
            for s in steps
            if str(s.get("uses", "")).startswith("actions/upload-artifact@")
            and s["with"].get("path") == ".evalward/out"
        ]
        assert uploads, f"{workflow.name}: job {name} does not upload .evalward/out"
        (upload,) = uploads
        assert upload["if"] == "always()" and upload["with"]["include-hidden-files"] is True


def test_a_release_pushes_the_image_with_its_provenance() -> None:
    release = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())
    assert release[True]["push"]["tags"] == ["v*"]  # PyYAML reads the key `on` as True
    job = release["jobs"]["image"]
    assert job["permissions"] == {"contents": "read", "packages": "write"}
    build = next(s for s in job["steps"] if s.get("uses", "").startswith("docker/build-push"))
    assert build["with"]["push"] is True and build["with"]["provenance"] == "mode=max"
    assert "linux/amd64" in build["with"]["platforms"]
    # the image with Node.js, from the same Dockerfile, tagged `<version>-node`
    node = next(s for s in job["steps"] if s.get("id") == "build-node")
    assert node["with"]["target"] == "evalward-node" and node["with"]["provenance"] == "mode=max"
    meta = next(s for s in job["steps"] if s.get("id") == "meta-node")
    assert meta["with"]["flavor"].startswith("suffix=-node")


def test_a_sharded_gate_job_runs_after_a_failing_shard() -> None:
    """GitHub counts a skipped required check as passing: the merge job must not be skipped
    when a shard job failed (it fails on the missing part instead)."""
    workflow = yaml.safe_load((ROOT / "examples" / "workflows" / "sharded.yml").read_text())
    merge = next(job for job in workflow["jobs"].values() if job.get("needs"))
    assert "!cancelled()" in merge["if"]


def test_a_sharded_merge_has_the_key_and_the_time_attribution_needs() -> None:
    """Once the merge has decided, attribution runs the head's variants of what regressed,
    calling the model: without the provider key it says "not attributable" every time."""
    workflow = yaml.safe_load((ROOT / "examples" / "workflows" / "sharded.yml").read_text())
    shard, merge = (workflow["jobs"][name] for name in ("shard", "gate"))
    run = next(s for s in shard["steps"] if s["uses"].startswith("evalward/evalward@"))
    merging = next(s for s in merge["steps"] if "merge" in s.get("with", {}))
    assert merging["env"] == run["env"]
    assert merge["timeout-minutes"] >= shard["timeout-minutes"]


def test_the_programs_validate_says_the_image_has_are_the_dockerfiles() -> None:
    """`validate` warns, rather than refuses, a program this machine lacks that the image has
    (plan/preflight/program_checks.py): its list follows the Dockerfile and the image's lock."""
    from evalward.plan.preflight.program_checks import IMAGE_PROGRAMS, NODE_IMAGE

    text = (ROOT / "Dockerfile").read_text()
    python = re.search(r"^FROM python:(\d+\.\d+)\.\d+-slim-bookworm AS evalward$", text, re.M)
    assert python, "the image's Python is pinned in its FROM line"
    assert {f"python{python[1]}", f"pip{python[1]}"} <= IMAGE_PROGRAMS.keys()
    assert "uv" in _pins("requirements.lock"), "uv and uvx come with evalward's dependencies"
    assert "apt-get install -y --no-install-recommends /tmp/git-noperl.deb" in text
    for program in ("node", "npm", "npx"):
        assert IMAGE_PROGRAMS[program] == NODE_IMAGE
        assert f"/usr/local/bin/{program}" in text
