"""The base branch's result cache for a pull request's gate, fetched from the artifact a
`push` run on that branch uploaded (input `base-cache`), never read from the workspace.

A cache in the workspace cannot say who wrote it: `actions/cache` restores the pull request's
own scope first, where a workflow the pull request adds can save one, and a step before
evalward can write one. An artifact names the workflow run that uploaded it, and GitHub's
API says what started that run: only a `push` run on the base branch of this repository is
read. The token goes to GitHub's API alone; the archive is fetched from the storage URL the
API redirects to without it, and unpacked by `files.unzip` into a folder of evalward's own.

A run's event and branch are not enough: pushing a tag named like the branch starts a `push`
run whose `head_branch` is the tag's name, on any commit and with that commit's workflow.
So the run's commit must be one the branch has been at, on its first-parent line up to the
base commit the gate compares with, as the checkout's own history has it. And the run must
be one of evalward on the branch: a tag's push on the branch's tip runs the branch's own
workflow, which restores the tag's cache scope (filled by the tag's earlier pushes, on any
commit) and uploads it while evalward skips a push to a tag. So evalward on a push says in
the cache which run it is (`stamp`), and an archive that names another run is not read.
"""

from __future__ import annotations

import json
import os
import urllib.parse
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from evalward.errors import GitHubError, printable
from evalward.files.unzip import unzip
from evalward.git import Git
from evalward.http.client import HttpClient, Reply
from evalward.text.cuts import cap_chars

API_VERSION = "2022-11-28"
MAX_ARCHIVE_BYTES = 256 * 1024 * 1024
"""The largest archive downloaded: a result cache of many thousand runs is a few MB."""
MAX_UNPACKED_BYTES = 1024 * 1024 * 1024
MAX_ENTRIES = 100_000
CANDIDATES = 10
"""How many of the newest artifacts of the name are looked at for a push run's."""
STAMP = "made-by.json"
"""At the cache's root: the ref, commit and run of the push run evalward last ran in on it."""
KEPT_OUT = "environments"
"""Agents' installed environments are built for this job, never unpacked from an archive:
their files' owners and modes, which their seal is, do not survive a zip."""


@dataclass(frozen=True)
class BaseCacheAsk:
    """Which artifact to look for: its name, of a push run on `branch` in `repository` at
    a commit of the branch's first-parent line up to `base_sha` (the gate's base commit)."""

    api_url: str
    token: str
    repository: str
    name: str
    branch: str
    base_sha: str

    @property
    def expected(self) -> str:
        return (
            f"the newest unexpired artifact named {printable(self.name)!r} uploaded by a "
            f"`push` run on {printable(self.branch)} in {printable(self.repository)}, at a "
            f"commit of {printable(self.branch)}'s own line of commits up to "
            f"{printable(self.base_sha)[:12] or 'the base commit'}"
        )


async def fetch_base_cache(ask: BaseCacheAsk, into: Path, git: Git) -> str:
    """Unpack the artifact `ask` names into the empty folder `into`; returns what was read,
    for the log. `git` is the checkout, whose history says which commits the base branch
    has been at. Raises GitHubError (or HttpFailure, UnsafeArchive) saying why not."""
    client = HttpClient(timeout_seconds=120, max_reply_bytes=MAX_ARCHIVE_BYTES)
    try:
        artifact, run, sha = await _trusted_artifact(client, ask, git)
        archive = await _download(client, ask, artifact)
    finally:
        await client.aclose()
    files = unzip(
        archive,
        into,
        max_bytes=MAX_UNPACKED_BYTES,
        max_entries=MAX_ENTRIES,
        keep=lambda name: not kept_out(name),
    )
    unstamped = _unstamped(into / STAMP, ask, run, sha)
    if unstamped:
        raise GitHubError(f"the artifact {artifact} of the run {run} {unstamped}")
    return (
        f"artifact {printable(ask.name)!r} (id {artifact}) of the push run {run} on "
        f"{printable(ask.branch)}, {files} files"
    )


def _api(ask: BaseCacheAsk, path: str) -> str:
    return f"{ask.api_url.rstrip('/')}/repos/{ask.repository}{path}"


def _headers(ask: BaseCacheAsk) -> dict[str, str]:
    return {
        "authorization": f"Bearer {ask.token}",
        "accept": "application/vnd.github+json",
        "x-github-api-version": API_VERSION,
    }


async def _json(client: HttpClient, ask: BaseCacheAsk, path: str, what: str) -> dict[str, Any]:
    reply = await client.get(_api(ask, path), _headers(ask))
    if reply.status != 200:
        raise _refused(reply, what)
    try:
        document = reply.json()
    except ValueError:
        document = None
    if not isinstance(document, dict):
        raise GitHubError(f"GitHub API: could not {what}: its answer is not a JSON object")
    return document


async def _trusted_artifact(
    client: HttpClient, ask: BaseCacheAsk, git: Git
) -> tuple[int, int, str]:
    """The newest artifact of the name whose run GitHub says is a push on the base branch
    of this repository, at a commit the branch has been at: (its id, its run's id, that
    commit)."""
    query = urllib.parse.urlencode({"name": ask.name, "per_page": 100})
    listed = await _json(client, ask, f"/actions/artifacts?{query}", "list the artifacts")
    artifacts = listed.get("artifacts")
    candidates = (
        [a for a in artifacts if isinstance(a, dict) and _candidate(a, ask)]
        if isinstance(artifacts, list)
        else []
    )
    candidates.sort(key=lambda a: str(a.get("created_at") or ""), reverse=True)
    refused: list[str] = []
    for artifact in candidates[:CANDIDATES]:
        run_id = artifact["workflow_run"]["id"]
        run = await _json(client, ask, f"/actions/runs/{run_id}", f"read the workflow run {run_id}")
        why = _not_a_base_push(run, ask) or _not_on_the_branch(run, ask, git)
        if not why:
            return int(artifact["id"]), int(run_id), str(run["head_sha"])
        refused.append(f"run {run_id} {why}")
    seen = f" ({'; '.join(refused)})" if refused else ""
    raise GitHubError(f"GitHub has no such artifact{seen}")


def _candidate(artifact: dict[str, Any], ask: BaseCacheAsk) -> bool:
    """Unexpired, of the name, from a run on the base branch whose head is this repository
    (the listing's word, confirmed by the run itself), small enough to download."""
    run = artifact.get("workflow_run")
    if not isinstance(run, dict):
        return False
    ids = (artifact.get("id"), run.get("id"), run.get("repository_id"))
    return (
        artifact.get("name") == ask.name
        and artifact.get("expired") is False
        and all(isinstance(i, int) and not isinstance(i, bool) for i in ids)
        and run.get("head_branch") == ask.branch
        and run.get("head_repository_id") == run.get("repository_id")
        and isinstance(artifact.get("size_in_bytes"), int)
        and artifact["size_in_bytes"] <= MAX_ARCHIVE_BYTES
    )


def _not_a_base_push(run: dict[str, Any], ask: BaseCacheAsk) -> str:
    """Why a workflow run is not a push on the base branch of this repository ("" if it is)."""
    event = run.get("event")
    if event != "push":
        return f"was started by {printable(str(event))!r}, not a push"
    if run.get("head_branch") != ask.branch:
        return f"ran on {printable(str(run.get('head_branch')))!r}"
    for field in ("repository", "head_repository"):
        named = run.get(field)
        full_name = named.get("full_name") if isinstance(named, dict) else None
        if full_name != ask.repository:
            return f"ran for the repository {printable(str(full_name))!r}"
    return ""


def _not_on_the_branch(run: dict[str, Any], ask: BaseCacheAsk, git: Git) -> str:
    """Why a push run's commit is not one the base branch has been at ("" if it is): a
    tag of the branch's name can be on any commit, and a commit a merge brought in is in
    the branch's history without a push on the branch having run its workflow."""
    sha = run.get("head_sha")
    shown = printable(str(sha))[:12]
    if isinstance(sha, str) and git.on_first_parent_line(sha, ask.base_sha):
        return ""
    branch = printable(ask.branch)
    return (
        f"ran on {shown}, not a commit of {branch}'s history up to "
        f"{printable(ask.base_sha)[:12] or 'the base commit'} by first parents: a tag named "
        f"{branch!r}, a commit a merge brought in, or not in the checkout's history"
    )


def stamp(directory: Path, ref: str, sha: str, run_id: str) -> None:
    """Say in the cache `directory` that evalward ran on it in this push run (`ref`, `sha`,
    `run_id`: the runner's GITHUB_REF, GITHUB_SHA, GITHUB_RUN_ID), over whatever a restore
    put there, so that the artifact this run uploads is known for its own (`_unstamped`)."""
    directory.mkdir(mode=0o755, parents=True, exist_ok=True)
    said = json.dumps({"ref": ref, "sha": sha, "run_id": run_id}).encode()
    written = directory / f".{STAMP}.{os.getpid()}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    descriptor = os.open(written, flags, 0o644)
    with os.fdopen(descriptor, "wb") as out:
        out.write(said)
    written.replace(directory / STAMP)  # a link there is replaced, never followed


def _unstamped(path: Path, ask: BaseCacheAsk, run: int, sha: str) -> str:
    """Why the unpacked cache is not one evalward ran on in the push run `run` on the base
    branch at `sha` ("" if it is): the run that uploads a folder need not be evalward's."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(descriptor, "rb") as stamped:
            said = json.loads(stamped.read(4096))
    except FileNotFoundError:
        return f"holds no {STAMP}, which evalward writes in a push run it runs in"
    except (OSError, ValueError):
        said = None
    if not isinstance(said, dict):
        return f"holds a {STAMP} that is not evalward's"
    made_in = printable(str(said.get("run_id")))[:40]
    if made_in != str(run):
        return f"was made by evalward in the run {made_in}, not in the run {run} that uploaded it"
    if said.get("ref") != f"refs/heads/{ask.branch}" or said.get("sha") != sha:
        where = f"{printable(str(said.get('ref')))[:200]} at {printable(str(said.get('sha')))[:12]}"
        return f"was made by evalward on {where}, not on refs/heads/{printable(ask.branch)}"
    return ""


async def _download(client: HttpClient, ask: BaseCacheAsk, artifact: int) -> bytes:
    """The archive: GitHub's API answers with a redirect to its storage, which is asked
    with no token (a signed URL needs none, and the token is for GitHub's API alone)."""
    what = f"download the artifact {artifact}"
    reply = await client.get(_api(ask, f"/actions/artifacts/{artifact}/zip"), _headers(ask))
    if reply.status == 200:
        return reply.body
    location = reply.headers.get("location", "")
    if reply.status not in (301, 302, 303, 307, 308) or not location:
        raise _refused(reply, what)
    scheme = urllib.parse.urlsplit(location).scheme.lower()
    if scheme not in ("http", "https"):
        raise GitHubError(f"GitHub API: could not {what}: redirected to a {scheme!r} URL")
    stored = await client.get(location)
    if stored.status != 200:
        raise GitHubError(
            f"GitHub API: could not {what}: its storage answered HTTP {stored.status}"
        )
    return stored.body


def _refused(reply: Reply, what: str) -> GitHubError:
    """GitHub's refusal, with what to do about the ones a workflow's settings cause."""
    message = ""
    try:
        document = reply.json()
        if isinstance(document, dict):
            message = str(document.get("message") or "")
    except ValueError:
        pass
    hint = ""
    if reply.status in (401, 403, 404):
        hint = "; the job's token needs `permissions: actions: read` to list and download artifacts"
    said = f"HTTP {reply.status} {cap_chars(printable(message), 300)}".rstrip()
    return GitHubError(f"GitHub API: could not {what}: {said}{hint}", status=reply.status)


def kept_out(name: PurePosixPath) -> bool:
    """Whether an archive's entry is one `fetch_base_cache` does not unpack."""
    return name.parts[:1] == (KEPT_OUT,)
