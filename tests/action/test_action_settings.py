"""action.yml and Settings agree, inputs parse as a workflow author writes them, and the
events route as GitHub's real example payloads say."""

from __future__ import annotations

import datetime as dt
import json
from enum import Enum
from pathlib import Path

import pytest
import yaml

from evalward.action.context import WorkflowContext, load_context
from evalward.action.route import RouteKind, route_event
from evalward.action.settings import Settings
from evalward.errors import ConfigError
from evalward.resources.cron import parse_cron
from evalward.security import Redactor, looks_secret

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
WEBHOOKS = ROOT / "tests" / "data" / "github" / "webhooks"


def test_every_action_input_is_a_settings_field_and_back() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert sorted(action["inputs"]) == sorted(Settings.input_names())
    env = action["runs"]["env"]
    for name in Settings.input_names():
        assert env[f"INPUT_{name.upper().replace('-', '_')}"] == f"${{{{ inputs.{name} }}}}"
    defaults = Settings()
    for name, field in Settings.model_fields.items():
        declared = str(action["inputs"][field.alias]["default"])
        value = getattr(defaults, name)
        if name == "github_token":
            continue
        expected = "" if value is None else str(value).lower() if isinstance(value, bool) else value
        assert declared == str(expected), field.alias


def test_inputs_parse_and_bad_ones_name_the_input() -> None:
    settings = Settings.from_env(
        {"INPUT_CHECK_RUN": "yes", "INPUT_BYPASS_SCOPE": "pr", "INPUT_PR": "12"}
    )
    assert settings.check_run is True and settings.bypass_scope == "pr" and settings.pr == 12
    with pytest.raises(ConfigError, match="`comment`"):
        Settings.from_env({"INPUT_COMMENT": "sometimes"})
    with pytest.raises(ConfigError, match="`allow-untrusted-head`"):
        Settings.from_env({"INPUT_ALLOW_UNTRUSTED_HEAD": "maybe"})


def test_an_input_whose_value_is_one_of_a_few_words_is_no_secret_whatever_its_name() -> None:
    # `on-missing-secrets`'s name holds SECRET: its value was redacted, so `ignore` (a typo)
    # read "(got '***')", and every "ignore" of what evalward wrote became "***"
    for name, field in Settings.model_fields.items():
        alias = field.alias or name
        names = [f"INPUT_{alias.upper().replace('-', '_')}", f"INPUT_{alias.upper()}"]
        words = isinstance(field.annotation, type) and issubclass(field.annotation, Enum)
        if words:
            assert not any(looks_secret(n) for n in names), alias
    for secret in ("github-token", "shard-key"):  # still secret, in both forms of the name
        assert looks_secret(f"INPUT_{secret.upper().replace('-', '_')}")
        assert looks_secret(f"INPUT_{secret.upper()}")
    redact = Redactor.from_env(
        {"INPUT_ON_MISSING_SECRETS": "ignore", "INPUT_SHARD_KEY": "k" * 32, "MY_SECRET": "hidden"}
    )
    assert redact(f"ignored by git; {'k' * 32}; hidden") == "ignored by git; ***; ***"


@pytest.mark.parametrize("name", ["mock-script", "output-dir", "comment-template", "cache-dir"])
def test_a_path_input_holding_a_name_no_file_system_holds_is_refused(name: str) -> None:
    # looking it up raised ENAMETOOLONG from is_file or is_symlink: an internal error
    with pytest.raises(ConfigError, match=f"action input `{name}`: a name of 300 bytes"):
        Settings.from_env({f"INPUT_{name.upper().replace('-', '_')}": "out/" + "x" * 300})


def test_a_path_input_above_the_workspace_is_outside_it(tmp_path: Path) -> None:
    # `../out` was the workspace's path with `..` in it, inside it as compared, and git was
    # asked about a path outside the repository (exit 3, git's own words)
    (tmp_path / "event.json").write_text("{}")
    context = load_context(
        {
            "GITHUB_EVENT_NAME": "workflow_dispatch",
            "GITHUB_EVENT_PATH": str(tmp_path / "event.json"),
            "GITHUB_WORKSPACE": str(tmp_path / "ws"),
        }
    )
    assert context.workspace_path("../out") == tmp_path / "out"
    assert context.workspace_path("out/../res") == tmp_path / "ws" / "res"
    assert context.workspace_path("/abs/out") == Path("/abs/out")
    assert context.workspace_path("") is None


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("environment-timeout-seconds", "inf"),
        ("environment-max-size-mb", "Infinity"),
        ("max-cost-usd", "1e400"),
    ],
)
def test_a_number_input_is_finite(name: str, value: str) -> None:
    # each passed its lower bound as infinity: no bound at all, where one was asked for
    with pytest.raises(ConfigError, match=f"action input `{name}`: .*finite number"):
        Settings.from_env({f"INPUT_{name.upper().replace('-', '_')}": value})


@pytest.mark.parametrize(
    ("payload", "event", "kind"),
    [
        ("pull_request.opened", "pull_request", "gate"),
        ("pull_request.synchronize", "pull_request", "gate"),
        ("pull_request.reopened", "pull_request", "gate"),
        ("pull_request.ready_for_review", "pull_request", "gate"),
        ("pull_request.labeled", "pull_request", "gate"),
        ("pull_request.unlabeled", "pull_request", "gate"),
        ("pull_request.closed", "pull_request", "skip"),
        ("push", "push", "skip"),  # the example pushes a tag
        ("workflow_dispatch", "workflow_dispatch", "run"),
        ("merge_group.checks_requested", "merge_group", "group"),
    ],
)
def test_real_payloads_route(tmp_path: Path, payload: str, event: str, kind: str) -> None:
    data = json.loads((WEBHOOKS / f"{payload}.json").read_text())
    path = tmp_path / "event.json"
    path.write_text(json.dumps(data))
    context = load_context({"GITHUB_EVENT_NAME": event, "GITHUB_EVENT_PATH": str(path)})
    route = route_event(context, Settings())
    assert route.kind == kind
    if kind == "gate":
        assert route.pr == data["number"]
        assert context.head_sha == data["pull_request"]["head"]["sha"]
    if kind == "group":  # the group's commit and its parent; the pull request it ends with
        group = data["merge_group"]
        assert (context.head_sha, context.base_sha) == (group["head_sha"], group["base_sha"])
        assert route.pr == 104
    if payload == "pull_request.labeled":
        assert context.event_label == data["label"]["name"]
        # who applied the label and when: what shows the payload is the label's own event
        assert context.event_sender == data["sender"]["login"]
        assert context.event_updated_at == data["pull_request"]["updated_at"]


def test_pull_request_target_explains_the_risk(tmp_path: Path) -> None:
    path = tmp_path / "event.json"
    path.write_text((WEBHOOKS / "pull_request.opened.json").read_text())
    env = {"GITHUB_EVENT_NAME": "pull_request_target", "GITHUB_EVENT_PATH": str(path)}
    with pytest.raises(ConfigError, match="secrets") as info:
        route_event(load_context(env), Settings())
    assert "allow-untrusted-head: true" in str(info.value)
    assert route_event(load_context(env), Settings(**{"allow-untrusted-head": True})).kind == "gate"


@pytest.mark.parametrize(
    ("base_ref", "head_ref", "pr"),
    [
        ("refs/heads/main", f"refs/heads/gh-readonly-queue/main/pr-12-{'a' * 40}", 12),
        (
            "refs/heads/release/2.x",
            f"refs/heads/gh-readonly-queue/release/2.x/pr-3-{'b' * 64}",
            3,
        ),
        ("refs/heads/main", f"refs/heads/gh-readonly-queue/release/pr-12-{'a' * 40}", None),
        ("refs/heads/main", "refs/heads/gh-readonly-queue/main/pr-12", None),
        ("refs/heads/main", f"refs/heads/gh-readonly-queue/main/pr-{'9' * 30}-{'a' * 40}", None),
        ("refs/heads/main", f"refs/heads/main/pr-12-{'a' * 40}", None),
        ("refs/heads/main", "", None),
        (
            f"refs/heads/x/pr-7-{'a' * 40}",
            f"refs/heads/gh-readonly-queue/x/pr-7-{'a' * 40}/pr-8-{'b' * 40}",
            8,
        ),
        (
            "refs/heads/main",
            f"refs/heads/gh-readonly-queue/main/pr-7-{'a' * 40}/pr-8-{'b' * 40}",
            None,
        ),
        ("refs/heads/ma.n", f"refs/heads/gh-readonly-queue/main/pr-7-{'a' * 40}", None),
        ("refs/heads/m(a|b)", f"refs/heads/gh-readonly-queue/m(a|b)/pr-7-{'a' * 40}", 7),
    ],
    ids=[
        "main",
        "slashed-base",
        "other-base",
        "no-commit",
        "long-number",
        "no-queue",
        "none",
        "base-named-like-a-queue",
        "queue-of-a-base-named-so",
        "dot-in-base",
        "regex-in-base",
    ],
)
def test_a_groups_pull_request_is_read_from_its_queue_branch_or_none(
    tmp_path: Path, base_ref: str, head_ref: str, pr: int | None
) -> None:
    """The group gates however its branch reads; only a branch of the base's queue names the
    pull request whose bypass label counts, and any other names none, saying why."""
    path = tmp_path / "event.json"
    group = {"base_sha": "c" * 40, "head_sha": "d" * 40, "base_ref": base_ref, "head_ref": head_ref}
    path.write_text(json.dumps({"action": "checks_requested", "merge_group": group}))
    context = load_context({"GITHUB_EVENT_NAME": "merge_group", "GITHUB_EVENT_PATH": str(path)})
    route = route_event(context, Settings())
    assert (route.kind, route.pr) == (RouteKind.group, pr)
    assert ("no bypass label is weighed" in route.why) is (pr is None)


@pytest.mark.parametrize("base_ref", ["", "main", "refs/tags/v1", "refs/heads/"])
def test_a_group_without_its_base_branch_is_refused_by_name(tmp_path: Path, base_ref: str) -> None:
    """The group is gated against its base branch's tip, so an event that names no branch
    is refused: the group's parent is not what it merges into."""
    path = tmp_path / "event.json"
    queue = f"refs/heads/gh-readonly-queue/main/pr-12-{'a' * 40}"
    group = {"base_sha": "c" * 40, "head_sha": "d" * 40, "base_ref": base_ref, "head_ref": queue}
    path.write_text(json.dumps({"action": "checks_requested", "merge_group": group}))
    context = load_context({"GITHUB_EVENT_NAME": "merge_group", "GITHUB_EVENT_PATH": str(path)})
    with pytest.raises(ConfigError, match=r"the merge_group event's `merge_group.base_ref` is"):
        route_event(context, Settings())


@pytest.mark.parametrize(
    ("event", "kind"), [("push", RouteKind.skip), ("workflow_dispatch", RouteKind.run)]
)
def test_a_queue_branch_pushed_or_dispatched_is_no_gate(
    tmp_path: Path, event: str, kind: RouteKind
) -> None:
    """GitHub pushes each group's queue branch: a push there is not the default branch's and
    is skipped, and a dispatch there without `pr` runs the branch's Evals under the run's
    own check name, never the gate's."""
    path = tmp_path / "event.json"
    path.write_text(json.dumps({"repository": {"default_branch": "main"}}))
    queue = f"refs/heads/gh-readonly-queue/main/pr-7-{'a' * 40}"
    env = {"GITHUB_EVENT_NAME": event, "GITHUB_EVENT_PATH": str(path), "GITHUB_REF": queue}
    route = route_event(load_context(env), Settings())
    assert (route.kind, route.pr) == (kind, None)


def dispatched(tmp_path: Path, pr: str) -> WorkflowContext:
    path = tmp_path / "event.json"
    path.write_text(json.dumps({"inputs": {"pr": pr}}))
    return load_context({"GITHUB_EVENT_NAME": "workflow_dispatch", "GITHUB_EVENT_PATH": str(path)})


@pytest.mark.parametrize(
    "typed",
    ["²", "7\u00b9", "①", "٣", "9" * 5000, "-7", "7.0"],
    ids=["superscript", "digit-superscript", "circled", "arabic-indic", "5000-digits", "-", "."],
)
def test_a_dispatch_pr_input_is_a_number_in_ascii_digits(tmp_path: Path, typed: str) -> None:
    with pytest.raises(ConfigError, match="workflow_dispatch input `pr`"):
        route_event(dispatched(tmp_path, typed), Settings())
    assert route_event(dispatched(tmp_path, " 42 "), Settings()).pr == 42


def test_a_schedule_routes_from_the_schedules_and_the_time_it_is_given(tmp_path: Path) -> None:
    """No repository and no clock: the Evals' crons and the start time are parameters."""
    path = tmp_path / "event.json"
    path.write_text(json.dumps({"schedule": "0 6 * * 1"}))
    context = load_context({"GITHUB_EVENT_NAME": "schedule", "GITHUB_EVENT_PATH": str(path)})
    schedules = {"weekly": parse_cron("0 6 * * 1"), "nightly": parse_cron("0 2 * * *")}
    monday_late = dt.datetime(2026, 11, 23, 6, 40, tzinfo=dt.UTC)

    own = route_event(context, Settings(), schedules=schedules, now=monday_late)
    assert own.kind is RouteKind.run and own.evals == {"weekly"}
    assert (own.cron, own.scope) == ("0 6 * * 1", "every Eval with this schedule")

    other = load_context(
        {"GITHUB_EVENT_NAME": "schedule", "GITHUB_EVENT_PATH": str(_event(tmp_path, "5 * * * *"))}
    )
    tuesday_night = dt.datetime(2026, 11, 24, 2, 30, tzinfo=dt.UTC)
    due = route_event(other, Settings(), schedules=schedules, now=tuesday_night)
    assert due.kind is RouteKind.run and due.evals == {"nightly"}, "fired 30 min ago: in the window"
    assert due.cron == "5 * * * *" and due.scope == (
        "no Eval has this schedule; the Evals whose own schedule fired in the last 60 minutes"
    )
    later = tuesday_night + dt.timedelta(hours=2)
    assert route_event(other, Settings(), schedules=schedules, now=later).kind is RouteKind.skip
    assert route_event(other, Settings(), schedules={}, now=later).why == (
        "no Eval has a `schedule`"
    )


def _event(folder: Path, schedule: str) -> Path:
    path = folder / "other.json"
    path.write_text(json.dumps({"schedule": schedule}))
    return path


def test_the_token_is_never_shown_when_the_settings_are() -> None:
    token = "ghs_0123456789abcdefghijklmnopqrstuv"
    settings = Settings.from_env({"INPUT_GITHUB_TOKEN": token})
    assert settings.github_token.get_secret_value() == token
    for shown in (repr(settings), str(settings), settings.model_dump_json()):
        assert token not in shown
