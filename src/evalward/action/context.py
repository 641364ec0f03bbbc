"""The GitHub event and environment of one workflow run, read once into plain data."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalward.errors import ConfigError


@dataclass(frozen=True)
class WorkflowContext:
    event_name: str
    repository: str
    workspace: Path
    api_url: str
    server_url: str
    run_id: str
    pr_number: int | None = None
    base_sha: str | None = None
    head_sha: str | None = None
    comment_key: str = "evalward"
    action: str = ""
    """The event's `action` (opened, synchronize, labeled, …)."""
    event_label: str = ""
    """On `labeled`/`unlabeled`: the label that was added or removed."""
    event_sender: str = ""
    """The event's `sender.login`: on `labeled`, who applied the label."""
    event_updated_at: str = ""
    """A pull_request event's `pull_request.updated_at`, as written: on `labeled`, GitHub's
    time of applying the label (a re-run replays the old payload, and its old time)."""
    event_base_ref: str = ""
    """A pull_request event's `pull_request.base.ref`: on `labeled`, the branch the pull
    request was into as the label was applied."""
    ref: str = ""
    sha: str = ""
    default_branch: str = ""
    schedule: str = ""
    dispatch_pr: str = ""
    """On workflow_dispatch: the `pr` input of the workflow, if it has one."""
    group_ref: str = ""
    """On merge_group: `merge_group.head_ref`, the queue's branch of the group, which names
    the pull request the group ends with (`route.GROUP_REF`)."""
    group_base_ref: str = ""
    """On merge_group: `merge_group.base_ref`, the branch the group merges into."""

    @property
    def group_branch(self) -> str:
        """The branch a merge group merges into, by name (its `base_ref` is a full ref)."""
        return self.group_base_ref.removeprefix("refs/heads/")

    @property
    def run_url(self) -> str:
        if not (self.repository and self.run_id):
            return ""
        return f"{self.server_url.rstrip('/')}/{self.repository}/actions/runs/{self.run_id}"

    def workspace_path(self, path: str) -> Path | None:
        """A path the workflow gave (an input): absolute as it is, else relative to the
        workspace; None when it is empty. Its `..` are taken back as written (`../out` is
        the workspace's sibling, outside it), never through a link the checkout holds."""
        if not path:
            return None
        return Path(os.path.normpath(self.workspace / path))  # `/` keeps an absolute path whole


def unread_context(env: Mapping[str, str]) -> WorkflowContext:
    """The workflow's context without its event, whose payload could not be read: enough to
    name the run (`run_url`) in the summary of a job that stopped before it began."""
    return WorkflowContext(
        event_name=env.get("GITHUB_EVENT_NAME", ""),
        repository=env.get("GITHUB_REPOSITORY", ""),
        workspace=Path(env.get("GITHUB_WORKSPACE") or Path.cwd()),
        api_url=env.get("GITHUB_API_URL", "https://api.github.com"),
        server_url=env.get("GITHUB_SERVER_URL", "https://github.com"),
        run_id=env.get("GITHUB_RUN_ID", ""),
    )


def load_context(env: Mapping[str, str]) -> WorkflowContext:
    event_name = env.get("GITHUB_EVENT_NAME", "")
    if not env.get("GITHUB_EVENT_PATH") and env.get("GITHUB_ACTIONS") == "true":
        raise ConfigError(
            "GITHUB_EVENT_PATH is not set, and GitHub sets it for every job's steps: the "
            "event's payload is what the gate reads (the pull request, its head and base); "
            "run evalward as a step of its own (`uses: evalward/evalward@…`), or set it to the "
            "payload's file"
        )
    event = _read_event(env.get("GITHUB_EVENT_PATH"))
    repository = env.get("GITHUB_REPOSITORY") or dig(event, "repository", "full_name") or ""
    workspace = Path(env.get("GITHUB_WORKSPACE") or Path.cwd())
    context: dict[str, Any] = {
        "event_name": event_name,
        "repository": str(repository),
        "workspace": workspace,
        "api_url": env.get("GITHUB_API_URL", "https://api.github.com"),
        "server_url": env.get("GITHUB_SERVER_URL", "https://github.com"),
        "run_id": env.get("GITHUB_RUN_ID", ""),
        "action": str(event.get("action") or ""),
        "event_label": str(dig(event, "label", "name") or ""),
        "event_sender": str(dig(event, "sender", "login") or ""),
        "ref": env.get("GITHUB_REF") or str(event.get("ref") or ""),
        "sha": env.get("GITHUB_SHA") or str(event.get("after") or ""),
        "default_branch": str(dig(event, "repository", "default_branch") or ""),
        "schedule": str(event.get("schedule") or ""),
        "dispatch_pr": str(dig(event, "inputs", "pr") or ""),
        "comment_key": "/".join(
            part for part in (env.get("GITHUB_WORKFLOW", ""), env.get("GITHUB_JOB", "")) if part
        )
        or "evalward",
    }
    pull = event.get("pull_request")
    if event_name in ("pull_request", "pull_request_target") and isinstance(pull, dict):
        context.update(
            pr_number=_pull_number(event_name, pull.get("number")),
            base_sha=str(dig(pull, "base", "sha") or ""),
            head_sha=str(dig(pull, "head", "sha") or ""),
            event_updated_at=str(pull.get("updated_at") or ""),
            event_base_ref=str(dig(pull, "base", "ref") or ""),
        )
    group = event.get("merge_group")
    if event_name == "merge_group" and isinstance(group, dict):
        # GitHub's payload: the group's commit (GITHUB_SHA) and its parent, which is the base
        # branch's tip or the commit of the group queued ahead of it
        context.update(
            base_sha=str(group.get("base_sha") or ""),
            head_sha=str(group.get("head_sha") or ""),
            group_ref=str(group.get("head_ref") or ""),
            group_base_ref=str(group.get("base_ref") or ""),
        )
    return WorkflowContext(**context)


def _pull_number(event_name: str, number: object) -> int:
    """The pull request's number as GitHub writes it (`pull_request.number`): a hand-written
    or truncated payload without one is refused naming the field, not an internal error."""
    if isinstance(number, int) and not isinstance(number, bool) and number >= 1:
        return number
    if isinstance(number, str) and re.fullmatch("[1-9][0-9]{0,17}", number):
        return int(number)
    shown = "missing" if number is None else f"{number!r:.40}, not a pull request's number"
    raise ConfigError(
        f"GITHUB_EVENT_PATH: the {event_name} event's `pull_request.number` is {shown}, where "
        "GitHub writes the number of the pull request to gate; run evalward from a workflow "
        f"`on: {event_name}` as GitHub starts it"
    )


def _read_event(path: str | None) -> dict[str, Any]:
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"GITHUB_EVENT_PATH {path}: cannot read it ({exc.strerror})") from None
    except ValueError as exc:
        raise ConfigError(f"GITHUB_EVENT_PATH {path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"GITHUB_EVENT_PATH {path}: expected a JSON object")
    return data


def dig(data: object, *keys: str) -> object:
    """`data[k1][k2]…`, or None where GitHub's JSON (an event, an API answer) is not the
    object it documents."""
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data
