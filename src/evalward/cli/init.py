"""`evalward init`: a working Agent, its fixtures and Eval, a mock script and the workflow that
gates pull requests, written into a repository (empty or not) in one step.

Everything it writes passes `evalward validate` and `evalward run --mock-script` at once, so
the first thing a user sees is a green run they can then change. It never overwrites: when
a file it would write exists, it writes nothing and names what exists (exit 2).
"""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING, Any, TextIO

from evalward.cli._args import nameable

if TYPE_CHECKING:
    from pathlib import Path

    from evalward.errors import EvalwardError
    from evalward.git import Git
    from evalward.host import Host

NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,60}[a-z0-9])?\Z")
MODEL = re.compile(r"^(openai|anthropic)/[A-Za-z0-9._:-]{1,100}\Z")
BRANCH = re.compile(r"^[A-Za-z0-9._/-]{1,200}\Z")
KEY_ENVS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
CONVERSATION_REPLIES = """\
  # the simulated customer of the conversation fixture (`purpose: user`): `contains` reads
  # the agent's latest reply, `always` answers it whatever the turn
  - match: { purpose: user, contains: shipped }
    always: { content: "Thanks! ###STOP###" }
  - match: { purpose: user }
    always: { content: "It's 12345." }
  - match: { agent: __AGENT__, fixture: __AGENT__-order-conversation }
    turns:
      - content: Happy to help. What is your order number?
      - toolCalls: [{ name: lookup_order, arguments: { order_id: "12345" } }]
      - content: Order 12345 has shipped.
"""
MCP_STEP = (
    "The agent's tools come from mcp/orders_server.py, an MCP server: before a local run, "
    "install its packages where `python3` finds them (pip install -r mcp/requirements.txt); "
    "the action builds them itself (docs/mcp.md)."
)
IGNORED = ".evalward/"
"""What evalward writes in the repository (outputs, caches, history): never committed."""


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "init", help="write a working agent, Eval, mock script and workflow to start from"
    )
    parser.add_argument(
        "path", nargs="?", default=".", type=nameable, help="the repository (default: .)"
    )
    parser.add_argument(
        "--agent", type=_name, default="assistant", help="the agent's name (default: assistant)"
    )
    parser.add_argument(
        "--model",
        type=_model,
        default="openai/gpt-4.1-mini",
        help="its model and the judge's, openai/… or anthropic/… (default: openai/gpt-4.1-mini)",
    )
    parser.add_argument(
        "--conversation",
        action="store_true",
        help="also write a conversation fixture: a simulated customer (docs/conversations.md)",
    )
    parser.add_argument(
        "--mcp",
        action="store_true",
        help="serve the agent's tools from an MCP server of the repository (docs/mcp.md)",
    )


def _name(text: str) -> str:
    if not NAME.match(text):
        raise argparse.ArgumentTypeError(
            f"{text!r}: lower-case letters, digits and dashes, e.g. support-bot"
        )
    return text


def _model(text: str) -> str:
    if not MODEL.match(text):
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected openai/<model> or anthropic/<model>, e.g. openai/gpt-4.1-mini"
        )
    return text


def main(args: argparse.Namespace, out: TextIO, host: Host) -> int:
    from pathlib import Path

    from evalward import __version__
    from evalward.errors import EXIT_OK, ConfigError
    from evalward.git import Git

    host.started()  # no run follows: nothing here lives long enough to be worth the pause
    start = Path(args.path)
    if not start.is_dir():
        raise ConfigError(f"{start}: not a directory; give the repository to write into")
    git = Git(start.resolve())
    top = git.top()
    root = top or start.resolve()
    agent: str = args.agent
    model: str = args.model
    key_env = KEY_ENVS[model.partition("/")[0]]
    branch = _default_branch(git) if top else "main"
    values = {
        # first: the replies it inserts hold placeholders of their own
        "__CONVERSATION_REPLIES__": CONVERSATION_REPLIES if args.conversation else "",
        "__AGENT__": agent,
        "__MODEL__": model,
        "__KEY_ENV__": key_env,
        "__BRANCH__": branch,
        "__MAJOR__": __version__.split(".")[0],
    }
    plan = _files(agent, conversation=args.conversation, mcp=args.mcp)
    _check_folders(root, [*plan, ".gitignore"])
    _refuse_existing(root, plan, agent)
    written = _write_files(root, plan, values)
    ignore = _ignore_outputs(root / ".gitignore", written)
    print(f"evalward init: wrote in {root}:", file=out)
    for name in plan:
        print(f"  {name}", file=out)
    print(f"  .gitignore ({ignore})", file=out)
    print(_next_steps(branch, key_env), file=out)
    if args.mcp:
        print(MCP_STEP, file=out)
    if not top:
        print(f"\n{root} is not a git repository yet: run `git init` there.", file=out)
    return EXIT_OK


def _files(agent: str, *, conversation: bool, mcp: bool) -> dict[str, str]:
    """The files `evalward init` writes, each with the template it is written from."""
    plan = {
        "evalward.yaml": "evalward.yaml",
        f"agents/{agent}.yaml": "agent.yaml",
        f"prompts/{agent}.md": "prompt.md",
        f"evals/{agent}.yaml": "evals.yaml",
        "evals/mock-replies.yaml": "mock-replies.yaml",
        ".github/workflows/evals.yml": "workflow.yml",
    }
    if conversation:
        plan[f"evals/{agent}-conversation.yaml"] = "conversation.yaml"
    if mcp:
        plan[f"agents/{agent}.yaml"] = "agent-mcp.yaml"
        plan["mcp/orders_server.py"] = "mcp_server.py"
        plan["mcp/requirements.txt"] = "mcp-requirements.txt"
    return plan


def _refuse_existing(root: Path, plan: dict[str, str], agent: str) -> None:
    """Write nothing when any of the files exists already."""
    from evalward.errors import ConfigError

    existing = [name for name in plan if (root / name).is_symlink() or (root / name).exists()]
    if existing:
        own = all(agent in name for name in existing)
        raise ConfigError(
            f"{root}: {len(existing)} of the files `evalward init` writes already exist, so "
            f"nothing was written: {', '.join(existing)}. Move them away"
            + (", or give another agent name with --agent" if own else "")
        )


def _next_steps(branch: str, key_env: str) -> str:
    return (
        f"\nThe workflow gates every pull request, and its push runs on {branch} fill the "
        f"result cache pull requests start from; edit `push.branches` if your default branch "
        f"is another one.\nNext:\n"
        "  evalward validate\n"
        "  evalward run --mock-script evals/mock-replies.yaml   # no key, no network\n"
        f"  {key_env}=... evalward run   # the model itself\n"
        f"Then commit, add {key_env} as a repository secret, push, open a pull request, and "
        "make the `gate` job a required status check (docs/getting-started.md)."
    )


def _check_folders(root: Path, names: list[str]) -> None:
    """Refuse, before anything is written, a file where a folder of `names` must be (or a
    folder where .gitignore must be): found halfway through, it would leave half a setup."""
    from pathlib import PurePosixPath

    from evalward.errors import ConfigError

    for name in names:
        for folder in reversed(PurePosixPath(name).parents[:-1]):
            path = root / folder
            if (path.exists() or path.is_symlink()) and not path.is_dir():
                raise ConfigError(
                    f"{path}: a file, where `evalward init` needs a folder (for {name}), so "
                    "nothing was written. Move it away, or run init in another repository"
                )
    ignore = root / ".gitignore"
    if ignore.exists() and not ignore.is_file():
        raise ConfigError(
            f"{ignore}: a folder, where `evalward init` adds {IGNORED} to the file, so nothing "
            "was written. Move it away"
        )


def _write_files(root: Path, plan: dict[str, str], values: dict[str, str]) -> list[Path]:
    """Each template of `plan` (target -> template) with its placeholders filled in, written
    only where no file is (a file that appeared meanwhile is an error, never overwritten).
    All or none: a write that fails (a full disk cuts a file short) takes back the files
    written before it, which would otherwise make the next `evalward init` refuse. Returns
    the files written, for a later step's failure to take back."""
    from importlib.resources import files

    from evalward.files.rewrite import NotCreated, create_all

    templates = files("evalward.cli").joinpath("init_files")
    texts: dict[Path, str] = {}
    for name, template in plan.items():
        text = templates.joinpath(template).read_text(encoding="utf-8")
        for placeholder, value in values.items():
            text = text.replace(placeholder, value)
        texts[root / name] = text
    try:
        return create_all(texts)
    except NotCreated as failed:
        raise _taken_back(failed.path, failed.error, []) from None


def _taken_back(
    target: Path, exc: OSError, written: list[Path], doing: str = "write"
) -> EvalwardError:
    """Remove the files of `written` (all or none: a half setup would also make the next
    `evalward init` refuse, its files being there) and word why `target` failed: the
    machine's refusal is an outside failure (exit 3), anything else the user's to fix."""
    from evalward.errors import ConfigError, EvalwardError, refused_write, why_refused

    for path in written:
        path.unlink(missing_ok=True)
    if refused_write(exc):
        return EvalwardError(
            f"{target}: the machine refused the write ({why_refused(exc)}), so no file was "
            "written. Free space (or raise the file size limit) and run `evalward init` again"
        )
    return ConfigError(f"{target}: cannot {doing} it ({exc.strerror}), so no file was written")


def _default_branch(git: Git) -> str:
    """The branch pull requests go to: origin's default, else the branch of a repository with
    no commit yet, else main or master where one exists, else the current branch."""

    def ask(*args: str) -> str:
        return git.run(*args, check=False).strip()

    origin = ask("symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD")
    current = ask("symbolic-ref", "--quiet", "--short", "HEAD")
    unborn = [current] if git.commit_of("HEAD") is None else []
    usual = [name for name in ("main", "master") if git.commit_of(f"refs/heads/{name}")]
    candidates = [origin.removeprefix("origin/"), *unborn, *usual, current]
    return next((c for c in candidates if BRANCH.match(c)), "main")


def _ignore_outputs(path: Path, written: list[Path]) -> str:
    """Add `.evalward/` to .gitignore unless an entry already ignores it; say what was done.
    The file is bytes, as git reads it: a name in it that is not UTF-8 is kept as it is.
    The whole new file is written beside and renamed over it (its mode kept), so that a
    write the disk refuses never leaves the user's .gitignore cut short; a failure takes
    back the files of `written`, as one of them would."""
    from evalward.files.rewrite import rewrite

    try:
        data = path.read_bytes() if path.exists() else b""
    except OSError as exc:
        raise _taken_back(path, exc, written, "read") from None
    entries = {line.strip() for line in data.splitlines()}
    if entries & {b".evalward", b".evalward/", b"/.evalward", b"/.evalward/"}:
        return f"{IGNORED} already ignored"
    separator = b"\n" if data and not data.endswith(b"\n") else b""
    try:
        rewrite(path, data + separator + IGNORED.encode() + b"\n")
    except OSError as exc:
        raise _taken_back(path, exc, written) from None
    return f"added {IGNORED}" if data else f"created, ignoring {IGNORED}"
