"""Read a playground's state, as evalward and never as the agent: each part reads its own
(bounded, links never followed, queries read-only on a copy evalward controls), then the
whole is held to STATE_CHARS characters and the snapshot files state criteria compare with
are read from the gate's side.

The agent had the run to shape its playground; whatever it left there is data, never a path
evalward follows or a statement it runs for the agent. Whatever cannot be read is a
PlaygroundError naming the playground: the run's error, never a pass.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from evalward.errors import PlaygroundError, YamlSyntaxError
from evalward.rundata.playground_state import PlaygroundState, SnapshotMissing, json_size
from evalward.runtime.playground.base import STATE_CHARS, LivePlayground, seed_text
from evalward.text import jsontext


async def capture(
    live: LivePlayground,
    queries: Iterable[str] = (),
    snapshots: Iterable[str] = (),
) -> PlaygroundState:
    """The playground's state now, and the answers to `queries` and the `snapshots` files
    (of the gate's side) that state criteria need."""
    state = PlaygroundState(live.name)
    asked = list(queries)
    for part in live.parts:
        await part.capture(live, state, asked)
    # one part is held to its own bound as it is read (a reply's or a folder's bytes, a
    # database's characters); only parts together need the whole written out to be counted
    if len(state.document) > 1 and json_size(state.document) > STATE_CHARS:
        raise live.error(f"its state is larger than {STATE_CHARS:,} characters")
    for path in snapshots:
        state.snapshots[path] = _snapshot(live, path)
    return state


def _snapshot(live: LivePlayground, path: str) -> Any:
    """A snapshot file of the side's commit as data, or why it is none."""
    try:
        return snapshot_data(path, seed_text(live, path))  # the gate's commit's, via the door
    except (PlaygroundError, SnapshotUnloadable) as exc:
        return SnapshotMissing(str(exc))
    except (OSError, UnicodeDecodeError) as exc:
        return SnapshotMissing(f"the snapshot {path!r} does not load: {exc}")


class SnapshotUnloadable(Exception):
    """Why a snapshot file's text is no data to compare with (said as the criterion's
    error, or by `validate` at its line)."""


def snapshot_data(path: str, text: str) -> Any:
    """A snapshot file's text as data: JSON by its `.json` name, else YAML. The commit is
    the pull request's on its head: a file made to nest past what a parser or the comparison
    recurses through, or whose aliases expand without end, is refused as one that does not
    load (`MAX_DEPTH` levels, as a resource's YAML; `sqlite_seed.parse_yaml`'s shape
    check), and a JSON key given twice as its YAML would be."""
    # lazy: PyYAML costs about 10 ms of start-up, and only a YAML snapshot needs it
    import yaml

    # lazy: they import PyYAML
    from evalward.resources.reading.yamlsource import MAX_DEPTH
    from evalward.runtime.playground.sqlite_seed import parse_yaml

    try:
        if path.endswith(".json"):
            return jsontext.loads(text, max_depth=MAX_DEPTH, finite=False, unique_keys=True)
        return parse_yaml(text)
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError, YamlSyntaxError) as exc:
        raise SnapshotUnloadable(f"the snapshot {path!r} does not load: {exc}") from None
